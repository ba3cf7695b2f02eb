//! Node name maps (rdma-core's `node_name_map`): a file of `<guid> "<name>"` lines giving
//! nodes names to print instead of their NodeDescription (`--node-name-map`; without it,
//! `/etc/infiniband-diags/ib-node-name-map` if it exists).

use std::collections::HashMap;

use crate::cli::strerror;

/// The map the tools read when none is given.
pub const DEFAULT_MAP: &str = "/etc/infiniband-diags/ib-node-name-map";

/// Names by node GUID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeNames(HashMap<u64, String>);

impl NodeNames {
    /// `open_node_name_map`: reads `path` (or [`DEFAULT_MAP`], when it exists). A file that
    /// cannot be read or parsed gives an empty map and the C tools' warning lines, returned
    /// for stderr.
    pub fn open(path: Option<&str>) -> (NodeNames, Vec<String>) {
        let path = match path {
            Some(path) => path,
            None if std::path::Path::new(DEFAULT_MAP).exists() => DEFAULT_MAP,
            None => return (NodeNames::default(), Vec::new()),
        };
        match std::fs::read(path) {
            Ok(bytes) => match NodeNames::parse(&String::from_utf8_lossy(&bytes)) {
                Ok(names) => (names, Vec::new()),
                Err(line) => (
                    NodeNames::default(),
                    vec![
                        format!("WARNING failed to parse node name map \"{path}\""),
                        format!("WARNING failed line: \"{line}\""),
                    ],
                ),
            },
            Err(e) => {
                let reason = e.raw_os_error().map_or_else(|| e.to_string(), strerror);
                let warning = format!("WARNING failed to open node name map \"{path}\" ({reason})");
                (NodeNames::default(), vec![warning])
            }
        }
    }

    /// Parses the map's text: blank and `#` lines skipped; else a GUID (C syntax) then the
    /// name, up to a `"` or `#`, leading ones skipped. The first line of a GUID wins.
    /// `Err` holds the first line that does not start with a GUID.
    pub fn parse(text: &str) -> Result<NodeNames, String> {
        let mut map = HashMap::new();
        for line in text.lines() {
            let p = line.trim_start();
            if p.is_empty() || p.starts_with('#') {
                continue;
            }
            let Some((guid, rest)) = leading_u64(p) else {
                return Err(line.to_owned());
            };
            if !(rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_whitespace() || c == '#'))
            {
                return Err(line.to_owned());
            }
            let name = rest
                .trim_start()
                .split(['"', '#'])
                .find(|token| !token.is_empty());
            if let Some(name) = name {
                map.entry(guid).or_insert_with(|| name.to_owned());
            }
        }
        Ok(NodeNames(map))
    }

    /// `remap_node_name`: the mapped name of `guid`, else `desc` as given.
    pub fn name(&self, guid: u64, desc: String) -> String {
        self.0.get(&guid).cloned().unwrap_or(desc)
    }
}

/// `strtoull(text, &end, 0)` of a number at the start of `text`: the value (saturated)
/// and the rest; `None` when no digit is there.
fn leading_u64(text: &str) -> Option<(u64, &str)> {
    let body = text.strip_prefix('+').unwrap_or(text);
    let (radix, digits) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(hex) if hex.starts_with(|c: char| c.is_ascii_hexdigit()) => (16, hex),
        _ if body.starts_with('0') => (8, body),
        _ => (10, body),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    let value = digits[..end]
        .chars()
        .filter_map(|c| c.to_digit(radix))
        .fold(0u64, |acc, d| {
            acc.saturating_mul(u64::from(radix))
                .saturating_add(u64::from(d))
        });
    Some((value, &digits[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_rdma_core() {
        let text = "# comment\n\n0x100000 \"Host one\"\n  0x200000 sw # rack 3\n\
                    0x100000 \"again\"\n0x300000\n";
        let names = NodeNames::parse(text).unwrap();
        assert_eq!(names.name(0x100000, "x".into()), "Host one");
        assert_eq!(names.name(0x200000, "x".into()), "sw ");
        assert_eq!(names.name(0x300000, "desc".into()), "desc");
        assert_eq!(names.name(7, "desc".into()), "desc");
    }

    #[test]
    fn rejects_a_line_without_a_guid() {
        assert_eq!(
            NodeNames::parse("0x1 a\nhost b\n"),
            Err("host b".to_owned())
        );
        assert_eq!(NodeNames::parse("0x1z b\n"), Err("0x1z b".to_owned()));
    }

    #[test]
    fn numbers_in_c_syntax() {
        assert_eq!(leading_u64("0x1f rest"), Some((31, " rest")));
        assert_eq!(leading_u64("017"), Some((15, "")));
        assert_eq!(leading_u64("12#"), Some((12, "#")));
        assert_eq!(leading_u64("x"), None);
        assert_eq!(leading_u64("99999999999999999999999"), Some((u64::MAX, "")));
    }
}
