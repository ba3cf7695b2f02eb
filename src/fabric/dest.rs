//! Destination operands as the tools take them (`resolve_portid_str` of
//! `ibdiag_common.c`): a LID (`-L`, the default), a directed-route path such as `0,1,3`
//! (`-D`) or a port GUID (`-G`, turned into a LID by a PathRecord query to the SA).

use ibumad::mad::{PathRecord, SaMad};
use ibumad::Ca;

pub use super::addr::{Combined, Dest, DestType};
use super::rpc::Rpc;
use crate::cli::{strtol, strtoull, Output};
use crate::ibdiag;

/// The subnet prefix a GID gets when the local port shows none.
const DEFAULT_PREFIX: u64 = 0xfe80_0000_0000_0000;

/// Resolves `text`, `<lid> <path>`, as a combined route: the LID as `strtol` reads it, then
/// the path after the one character that follows the number (C skips it blindly).
pub fn combined(rpc: &Rpc, text: &str) -> Option<Combined> {
    let end = number_end(text);
    let lid = lid(&text[..end])?;
    let mut rest = text[end..].chars();
    rest.next()?;
    let slid = local_port(rpc)?.base_lid as u16;
    let path = dr_path(rest.as_str())?;
    Some(Combined { lid, slid, path })
}

/// Where `strtol(text, &end, 0)` stops: after white space, a sign and the digits of a
/// number (0 if there is none).
fn number_end(text: &str) -> usize {
    let b = text.as_bytes();
    let mut i = b
        .iter()
        .take_while(|c| b" \t\n\x0b\x0c\r".contains(c))
        .count();
    if matches!(b.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let hex = b.get(i) == Some(&b'0')
        && matches!(b.get(i + 1), Some(b'x' | b'X'))
        && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
    let (start, radix) = if hex {
        (i + 2, 16)
    } else {
        (i, if b.get(i) == Some(&b'0') { 8 } else { 10 })
    };
    let digits = b[start..]
        .iter()
        .take_while(|&&c| char::from(c).is_digit(radix))
        .count();
    if digits == 0 && !hex {
        return 0;
    }
    start + digits
}

/// A unicast LID as `strtol` reads it (C syntax; 1 to 0xbfff), else `None`.
pub fn lid(text: &str) -> Option<u16> {
    let lid = strtol(text) as i32;
    (1..=0xbfff).contains(&lid).then_some(lid as u16)
}

/// A directed route as `str2drpath` reads it: comma-separated `atoi` values (so `a` is 0 and
/// 256 is 0), a trailing empty one ignored; `None` for an empty text.
pub fn dr_path(text: &str) -> Option<Vec<u8>> {
    let mut parts: Vec<&str> = text.split(',').collect();
    if parts.last() == Some(&"") {
        parts.pop();
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.iter().map(|p| atoi(p) as u8).collect())
}

/// C `atoi`: leading white space, a sign, then decimal digits up to the first other
/// character (0 if none), as glibc's `strtol` clamps them and `int` truncates them.
pub(crate) fn atoi(text: &str) -> i32 {
    let t = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.bytes().take_while(u8::is_ascii_digit);
    let value = digits.fold(0i128, |v, d| (v * 10 + i128::from(d - b'0')).min(1 << 64));
    let value = if negative { -value } else { value };
    value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64 as i32
}

/// Resolves the operand `text` written as `dest_type` says (`resolve_portid_str`); `sm_lid`
/// is `-s`'s LID, else the local port's SM LID serves for a GUID. `None` after any
/// warnings: the caller exits with its own message.
pub fn resolve(
    rpc: &Rpc,
    dest_type: DestType,
    text: &str,
    sm_lid: Option<u16>,
    out: &mut Output,
) -> Option<Dest> {
    match dest_type {
        DestType::Lid => lid(text).map(Dest::Lid),
        DestType::DrPath => dr_path(text).map(Dest::Dr),
        // Not one operand: see `combined`; no tool but smpquery takes it.
        DestType::Combined => None,
        DestType::Guid => {
            let guid = strtoull(text);
            if guid == 0 {
                return None;
            }
            guid_lid(rpc, guid, sm_lid, out).map(Dest::Lid)
        }
    }
}

/// The LID of the port with GUID `guid`, from a PathRecord the SA gives
/// (`ib_path_query_via`).
fn guid_lid(rpc: &Rpc, guid: u64, sm_lid: Option<u16>, out: &mut Output) -> Option<u16> {
    let port = local_port(rpc)?;
    let sm_lid = sm_lid.unwrap_or(port.sm_lid as u16);
    let prefix = if port.gid_prefix != 0 {
        port.gid_prefix
    } else {
        DEFAULT_PREFIX
    };
    let template = PathRecord {
        sgid_prefix: port.gid_prefix,
        sgid_guid: port.port_guid,
        dgid_prefix: prefix,
        dgid_guid: guid,
        ..PathRecord::default()
    };
    let mask = PathRecord::COMP_DGID | PathRecord::COMP_SGID;
    let request = SaMad::get(PathRecord::ATTR_ID, mask, &template.encode());
    let Some(answer) = rpc.sa(&request, sm_lid, out) else {
        ibdiag::warn(out, "ib_path_query_via", "sa call path_query failed");
        return None;
    };
    PathRecord::decode(&answer.data).ok().map(|pr| pr.dlid)
}

/// The port `-C`/`-P` name, as `umad_get_port` picks it: the numbered one, else (port 0)
/// the first active one, else the first; none for a negative number, as on the simulator.
pub fn local_port(rpc: &Rpc) -> Option<ibumad::CaPort> {
    let ca = Ca::get(rpc.ca.as_deref()).ok()?;
    let mut ports = ca.ports.into_iter();
    match u32::try_from(rpc.port_num) {
        Err(_) => None,
        Ok(n) if n > 0 => ports.find(|p| p.port_num == n),
        Ok(_) => {
            let all: Vec<_> = ports.collect();
            let active = all.iter().position(|p| p.state == 4);
            all.into_iter().nth(active.unwrap_or(0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lids_like_c() {
        assert_eq!(lid("1"), Some(1));
        assert_eq!(lid("0x10"), Some(16));
        assert_eq!(lid("0xbfff"), Some(0xbfff));
        for bad in ["0", "0xc000", "-1", "x", ""] {
            assert_eq!(lid(bad), None, "{bad}");
        }
    }

    #[test]
    fn dr_paths_like_c() {
        assert_eq!(dr_path("0"), Some(vec![0]));
        assert_eq!(dr_path("0,1,3"), Some(vec![0, 1, 3]));
        assert_eq!(dr_path("0,"), Some(vec![0]));
        assert_eq!(dr_path(","), Some(vec![0]));
        assert_eq!(dr_path("0,,1"), Some(vec![0, 0, 1]));
        assert_eq!(dr_path("0,a,256,-1, 7x"), Some(vec![0, 0, 0, 255, 7]));
        assert_eq!(dr_path(""), None);
    }

    #[test]
    fn number_ends_like_strtol() {
        assert_eq!(number_end("2 0,5"), 1);
        assert_eq!(number_end(" 0x1f,"), 5);
        assert_eq!(number_end("012 "), 3);
        assert_eq!(number_end("-7x"), 2);
        assert_eq!(number_end("x"), 0);
        assert_eq!(number_end("0x"), 1);
    }

    #[test]
    fn dest_strings_like_portid2str() {
        assert_eq!(Dest::Lid(99).to_string(), "Lid 99");
        assert_eq!(
            Dest::Dr(vec![0, 1]).to_string(),
            "DR path slid 65535; dlid 65535; 0,1"
        );
        assert_eq!(
            Dest::Dr(vec![0]).to_string(),
            "DR path slid 65535; dlid 65535; 0"
        );
    }
}
