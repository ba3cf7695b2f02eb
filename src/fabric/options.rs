//! The options every infiniband-diags tool shares (`ibdiag_process_opts` of
//! `ibdiag_common.c`): `-C ca`, `-P port`, `-D`/`-G`/`-L` (how the destination is written),
//! `-t ms`, `-s lid`, `-K`, `-y m_key`, `-z config`, `-e`, `-v`, `-d`, `-h`, `-V`, after
//! the tool's own options and less the ones it excludes. The configuration file
//! `/etc/infiniband-diags/ibdiag.conf` is read first, as the C tools read it.

use std::ffi::OsString;

use super::addr::DestType;
use super::getpass::getpass;
use super::rpc::{Rpc, RpcConfig};
use crate::cli::{getopt_long, optstring_of, strtoull as strtoul, HasArg, Item, LongOpt, Output};
use crate::ibdiag;

/// The configuration file the C tools read before their options.
const CONFIG: &str = "/etc/infiniband-diags/ibdiag.conf";

/// One option of a tool: its long name, letter, value template (`None`: no value) and the
/// line of help the usage shows.
#[derive(Clone, Copy, Debug)]
pub struct Opt {
    /// Long name, without `--`.
    pub name: &'static str,
    /// Letter.
    pub letter: char,
    /// The value's template in the usage, e.g. `<ca>`; `None` if it takes no value.
    pub value: Option<&'static str>,
    /// What it does.
    pub help: &'static str,
}

/// Shorthand for an [`Opt`] table entry.
const fn opt(
    name: &'static str,
    letter: char,
    value: Option<&'static str>,
    help: &'static str,
) -> Opt {
    Opt {
        name,
        letter,
        value,
        help,
    }
}

/// The common options, in the order the usage lists them.
const COMMON: [Opt; 15] = [
    opt(
        "config",
        'z',
        Some("<config>"),
        "read options from this file",
    ),
    opt("Ca", 'C', Some("<ca>"), "the CA to use"),
    opt("Port", 'P', Some("<port>"), "the CA port to use"),
    opt("Direct", 'D', None, "the destination is a directed route"),
    opt("Lid", 'L', None, "the destination is a LID"),
    opt("Guid", 'G', None, "the destination is a port GUID"),
    opt("timeout", 't', Some("<ms>"), "MAD timeout in milliseconds"),
    opt("sm_port", 's', Some("<lid>"), "LID of the subnet manager"),
    opt("show_keys", 'K', None, "show the keys"),
    opt("m_key", 'y', Some("<key>"), "M_Key to send"),
    opt("errors", 'e', None, "report send and receive errors"),
    opt("verbose", 'v', None, "more output (repeatable)"),
    opt("debug", 'd', None, "debug output (repeatable)"),
    opt("help", 'h', None, "this help"),
    opt("version", 'V', None, "print the version"),
];

/// What a tool says about itself for its usage and option loop.
#[derive(Clone, Copy, Debug)]
pub struct Tool<'a> {
    /// The letters of the common options it does not take.
    pub exclude: &'a str,
    /// Its own options (they win over common ones with the same letter or name).
    pub opts: &'a [Opt],
    /// The operands, as the usage line shows them.
    pub usage_args: &'a str,
    /// Example argument lists for the usage.
    pub examples: &'a [&'a str],
}

/// The common options' values (the C tools' `ibd_*` globals).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Common {
    /// `-C`: the CA (`None`: libibumad's default).
    pub ca: Option<String>,
    /// `-P`: the port (0: the first active one).
    pub port: i32,
    /// `-D`/`-G`/`-L`: how the destination operand is written.
    pub dest: DestType,
    /// `-t` (or `timeout` in the configuration): MAD timeout in ms (0: the default).
    pub timeout_ms: u32,
    /// `-s`: the subnet manager's LID, when given.
    pub sm_lid: Option<u16>,
    /// `-K`: show keys.
    pub show_keys: bool,
    /// `-y` (or `m_key` in the configuration): the M_Key to send.
    pub m_key: u64,
    /// `-e`: report send and receive errors.
    pub show_errors: bool,
    /// `-v`, counted.
    pub verbose: u32,
    /// `-d`, counted.
    pub debug: u32,
}

impl Common {
    /// What the transport needs of these options.
    pub fn rpc_config(&self) -> RpcConfig {
        RpcConfig {
            ca: self.ca.clone(),
            port: self.port,
            timeout_ms: self.timeout_ms,
            show_errors: self.show_errors,
            debug: self.debug,
            m_key: self.m_key,
        }
    }
}

/// `mad_rpc_open_port`, then `IBEXIT` as the tools do when it fails: opens `-C`/`-P`'s
/// port, or returns the status to exit with (after libibmad's warning and the tool's
/// message on stderr).
pub fn open_rpc(prog: &str, common: &Common, out: &mut Output) -> Result<Rpc, i32> {
    Rpc::open(&common.rpc_config()).map_err(|err| {
        ibdiag::warn(out, "mad_rpc_open_port", &err.to_string());
        let msg = format!("Failed to open '{}' port '{}'", err.shown_ca(), err.port);
        ibdiag::exit(out, prog, common.debug, "main", &msg)
    })
}

/// What a tool's handler does with an option it is given first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    /// It took the option.
    Yes,
    /// Not its own: the common options get it.
    No,
    /// It took the option, which sets how the destination is written, as `-D`, `-G` and
    /// `-L` do (the last one given wins).
    Dest(DestType),
}

/// Parses `args` like `ibdiag_process_opts`: `tool`'s options go to `handler` first, the
/// others are the common ones. Returns the common values and the operands, or the status to
/// exit with (after a usage, `-V`, or an `IBEXIT` message, all written to `out`).
pub fn parse(
    prog: &str,
    args: &[OsString],
    tool: &Tool,
    out: &mut Output,
    mut handler: impl FnMut(char, Option<&str>, &mut Output) -> Handled,
) -> Result<(Common, Vec<String>), i32> {
    let table = table(tool);
    let long: Vec<LongOpt> = table
        .iter()
        .map(|o| LongOpt {
            name: o.name,
            has_arg: if o.value.is_some() {
                HasArg::Required
            } else {
                HasArg::No
            },
            val: o.letter,
        })
        .collect();
    let mut common = Common::default();
    read_config(CONFIG, &mut common);
    // As `make_str_opts`: every option's letter is also a short option.
    let parsed = getopt_long(&crate::cli::arg_strings(args), &optstring_of(&long), &long);
    for item in parsed.items {
        let (letter, value) = match item {
            Item::Opt(letter, value) => (letter, value),
            Item::Error(err) => {
                out.error(&err.message(prog));
                return Err(usage(prog, tool, out));
            }
        };
        let value = value.as_deref();
        let own = tool.opts.iter().any(|o| o.letter == letter);
        if own {
            match handler(letter, value, out) {
                Handled::Yes => continue,
                Handled::Dest(dest) => {
                    common.dest = dest;
                    continue;
                }
                Handled::No => {}
            }
        }
        common_opt(prog, tool, &mut common, letter, value, out)?;
    }
    Ok((common, parsed.operands))
}

/// The tool's options then the common ones it keeps (the C `make_long_opts`).
fn table(tool: &Tool) -> Vec<Opt> {
    let kept = COMMON.iter().filter(|o| !tool.exclude.contains(o.letter));
    tool.opts.iter().chain(kept).copied().collect()
}

/// The C `process_opt`: one common option.
fn common_opt(
    prog: &str,
    tool: &Tool,
    c: &mut Common,
    letter: char,
    value: Option<&str>,
    out: &mut Output,
) -> Result<(), i32> {
    let value = value.unwrap_or("");
    match letter {
        'z' => read_config(value, c),
        'h' => return Err(usage(prog, tool, out)),
        'V' => {
            out.error(&ibdiag::version_line(prog));
            return Err(0);
        }
        'e' => c.show_errors = true,
        'v' => c.verbose += 1,
        'd' => {
            c.debug += 1;
            c.show_errors = true;
        }
        'C' => c.ca = Some(value.to_owned()),
        'P' => c.port = strtoul(value) as i32,
        'D' => c.dest = DestType::DrPath,
        'L' => c.dest = DestType::Lid,
        'G' => c.dest = DestType::Guid,
        't' => match parse_timeout(value) {
            Some(ms) => c.timeout_ms = ms,
            None => {
                let msg = format!(
                    "Invalid timeout \"{value}\".  Timeout requires a positive integer value < {}.",
                    i32::MAX
                );
                return Err(ibdiag::exit(out, prog, c.debug, "process_opt", &msg));
            }
        },
        's' => match super::dest::lid(value) {
            Some(lid) => c.sm_lid = Some(lid),
            None => {
                let msg = format!("cannot resolve SM destination port {value}");
                return Err(ibdiag::exit(out, prog, c.debug, "process_opt", &msg));
            }
        },
        'K' => c.show_keys = true,
        'y' => {
            let key = parse_u64_exact(value).or_else(|| {
                out.flush();
                getpass("M_Key: ").and_then(|key| parse_u64_exact(&key))
            });
            match key {
                Some(key) => c.m_key = key,
                None => return Err(ibdiag::exit(out, prog, c.debug, "process_opt", "Bad M_Key")),
            }
        }
        _ => return Err(usage(prog, tool, out)),
    }
    Ok(())
}

/// `-t`: a whole number (C syntax: decimal, `0x` hex or `0` octal) from 1 to `INT_MAX`,
/// nothing after it.
fn parse_timeout(text: &str) -> Option<u32> {
    let t = text.trim_start();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (radix, body) = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => (16, hex),
        None if digits.len() > 1 && digits.starts_with('0') => (8, &digits[1..]),
        None => (10, digits),
    };
    let value = i64::from_str_radix(body, radix).ok()?;
    let value = if t.starts_with('-') { -value } else { value };
    (1..=i64::from(i32::MAX))
        .contains(&value)
        .then_some(value as u32)
}

/// `strtoull(text, &end, 0)` without overflow and with nothing left after the number (an
/// empty text is 0, a negative number wraps around); `None` otherwise.
pub(crate) fn parse_u64_exact(text: &str) -> Option<u64> {
    if text.is_empty() {
        return Some(0);
    }
    let t = text.trim_start();
    let (negative, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let value = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None if t.len() > 1 && t.starts_with('0') => u64::from_str_radix(&t[1..], 8).ok(),
        None => t.parse().ok(),
    }?;
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// Reads a configuration file as `read_ibdiag_config` does: `NAME=value` lines (`#`
/// comments), of which `CA`, `Port`, `timeout` and `m_key` concern these tools; a file
/// that cannot be read is ignored.
fn read_config(path: &str, c: &mut Common) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name.starts_with("CA") {
            c.ca = Some(value.to_owned());
        } else if name.starts_with("Port") {
            c.port = strtoul(value) as i32;
        } else if name.starts_with("timeout") {
            c.timeout_ms = strtoul(value) as u32;
        } else if name.starts_with("m_key") {
            c.m_key = strtoul(value);
        }
    }
}

/// `ibdiag_show_usage`: `tool`'s usage on stderr; returns the exit status, 2.
pub fn usage(prog: &str, tool: &Tool, out: &mut Output) -> i32 {
    let mut text = format!("\nUsage: {prog} [options] {}\n\n", tool.usage_args);
    let table = table(tool);
    text.push_str("Options:\n");
    for o in &table {
        let mut line = format!("  --{}", o.name);
        if o.letter.is_ascii_graphic() {
            line.push_str(&format!(", -{}", o.letter));
        }
        if let Some(value) = o.value {
            line.push(' ');
            line.push_str(value);
        }
        text.push_str(&format!("{line:<24}  {}\n", o.help));
    }
    if !tool.examples.is_empty() {
        text.push_str("\nExamples:\n");
        for example in tool.examples {
            text.push_str(&format!("  {prog} {example}\n"));
        }
    }
    out.error(&text);
    2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_like_c() {
        assert_eq!(parse_timeout("100"), Some(100));
        assert_eq!(parse_timeout("0x10"), Some(16));
        assert_eq!(parse_timeout("010"), Some(8));
        assert_eq!(parse_timeout("2147483647"), Some(i32::MAX as u32));
        for bad in ["0", "-5", "", "10ms", "2147483648", "0x"] {
            assert_eq!(parse_timeout(bad), None, "{bad}");
        }
    }

    #[test]
    fn m_keys_like_c() {
        assert_eq!(parse_u64_exact("0x10"), Some(16));
        assert_eq!(parse_u64_exact("12"), Some(12));
        assert_eq!(parse_u64_exact("0"), Some(0));
        assert_eq!(parse_u64_exact("1z"), None);
        assert_eq!(parse_u64_exact(""), Some(0));
        assert_eq!(parse_u64_exact("-1"), Some(u64::MAX));
        assert_eq!(parse_u64_exact(" "), None);
        assert_eq!(parse_u64_exact("0x"), None);
        assert_eq!(parse_u64_exact("18446744073709551616"), None);
    }
}
