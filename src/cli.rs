//! What the tools share to behave like their C originals: C number parsing, `strerror`
//! text, getopt-style messages for clap errors, and writing output that may go to a closed
//! pipe.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write};

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The program name as invoked (`argv[0]`), which the C tools print in messages.
pub fn prog_name(args: &[OsString], default: &str) -> String {
    args.first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| default.to_owned())
}

/// `strtol(s, NULL, 0)`: leading white space, a sign, then a hexadecimal (`0x`), octal
/// (leading `0`) or decimal number up to the first other character; 0 if there is none;
/// clamped to the `long` range on overflow.
pub fn strtol(s: &str) -> i64 {
    let s = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let bytes = s.as_bytes();
    let hex_prefix = bytes.len() > 2
        && bytes[0] == b'0'
        && (bytes[1] | 0x20) == b'x'
        && bytes[2].is_ascii_hexdigit();
    let (radix, digits) = if hex_prefix {
        (16, &s[2..])
    } else if bytes.first() == Some(&b'0') {
        (8, s)
    } else {
        (10, s)
    };
    let mut value: i128 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        // Saturate far beyond the i64 range; the sign is applied below.
        value = (value * i128::from(radix) + i128::from(d)).min(i128::from(u64::MAX));
    }
    let value = if negative { -value } else { value };
    i64::try_from(value).unwrap_or(if negative { i64::MIN } else { i64::MAX })
}

/// The `strerror` text of an errno value, such as `No such file or directory`.
pub fn strerror(errno: i32) -> String {
    let text = io::Error::from_raw_os_error(errno).to_string();
    let suffix = format!(" (os error {errno})");
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

/// The message glibc's getopt prints for an argument clap rejected, such as
/// `ibv_devinfo: invalid option -- 'x'`; another clear message for other errors.
///
/// `cmd` is the command that parsed `args` (program name first), to tell an ambiguous long
/// option from an unknown one and `-d` from `--ib-dev`.
pub fn getopt_message(
    prog: &str,
    cmd: &clap::Command,
    args: &[OsString],
    err: &clap::Error,
) -> String {
    let arg = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg.clone(),
        _ => String::new(),
    };
    // clap names an option as `--ib-dev <IB_DEV>`: keep the option.
    let option = arg.split_whitespace().next().unwrap_or("");
    match err.kind() {
        ErrorKind::UnknownArgument if option.starts_with("--") => {
            let name = &option[2..];
            let name = name.split_once('=').map_or(name, |(name, _)| name);
            let matching: Vec<String> = cmd
                .get_arguments()
                .filter_map(|a| a.get_long())
                .filter(|long| long.starts_with(name))
                .map(|long| format!("'--{long}'"))
                .collect();
            if matching.len() > 1 {
                let possibilities = matching.join(" ");
                format!("{prog}: option '--{name}' is ambiguous; possibilities: {possibilities}")
            } else {
                format!("{prog}: unrecognized option '{option}'")
            }
        }
        ErrorKind::UnknownArgument => {
            let letter = option.trim_start_matches('-');
            format!("{prog}: invalid option -- '{letter}'")
        }
        ErrorKind::InvalidValue | ErrorKind::NoEquals => {
            // A value is missing only after the last argument: say it the way it was given.
            let last = args.last().map(|a| a.to_string_lossy().into_owned());
            match last.as_deref() {
                Some(last) if !last.starts_with("--") && last.starts_with('-') => {
                    let letter = last.chars().last().unwrap_or('?');
                    format!("{prog}: option requires an argument -- '{letter}'")
                }
                _ => format!("{prog}: option '{option}' requires an argument"),
            }
        }
        ErrorKind::TooManyValues => {
            format!("{prog}: option '{option}' doesn't allow an argument")
        }
        _ => {
            let text = err.kind().as_str().unwrap_or("invalid arguments");
            format!("{prog}: {text}")
        }
    }
}

/// Which of the `acting` options (short letter, long name), which getopt loops act on where
/// they stand (print and exit), comes before the argument clap rejected, if any: the C tool
/// never reaches the bad argument then. `with_value` lists the options that take a value.
pub fn acting_before_error(
    args: &[OsString],
    err: &clap::Error,
    acting: &[(char, &str)],
    with_value: &[(char, &str)],
) -> Option<char> {
    let bad = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg.split_whitespace().next()?.to_owned(),
        _ => return None,
    };
    let mut skip_value = false;
    for arg in args.iter().skip(1).map(|a| a.to_string_lossy()) {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        if arg == bad || arg == "--" || !arg.starts_with('-') || arg == "-" {
            return None;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, has_value) = long
                .split_once('=')
                .map_or((long, false), |(n, _)| (n, true));
            if let Some(&(c, _)) = acting.iter().find(|(_, l)| l.starts_with(name)) {
                return Some(c);
            }
            skip_value = !has_value && with_value.iter().any(|(_, l)| l.starts_with(name));
            continue;
        }
        for (i, c) in arg[1..].char_indices() {
            if acting.iter().any(|&(a, _)| a == c) {
                return Some(c);
            }
            if with_value.iter().any(|&(v, _)| v == c) {
                // The rest of the cluster, or the next argument, is the value.
                skip_value = i + c.len_utf8() == arg.len() - 1;
                break;
            }
        }
    }
    None
}

/// The sysfs directory of RDMA devices, which the C tools read beside verbs.
pub const SYS_CLASS_INFINIBAND: &str = "/sys/class/infiniband";

/// The `strerror`-style text of a failed verb, as `perror` prints it.
pub fn verbs_error_text(err: &ibverbs::Error) -> String {
    err.raw_os_error().map_or_else(|| err.to_string(), strerror)
}

/// A tool's standard output, buffered like C's `printf`, and its error messages.
///
/// Write with `write!`; [`Output::error`] first sends what is buffered, so that on a
/// terminal messages appear where the C tool's would. Writes that fail (such as to a closed
/// pipe) are ignored, as `printf` ignores them.
#[derive(Default)]
pub struct Output {
    buf: String,
}

impl Output {
    /// An empty output.
    pub fn new() -> Self {
        Output::default()
    }

    /// Writes what is buffered to stdout.
    pub fn flush(&mut self) {
        let mut out = io::stdout().lock();
        let _ = out
            .write_all(self.buf.as_bytes())
            .and_then(|()| out.flush());
        self.buf.clear();
    }

    /// Flushes stdout, then writes `msg` and a newline to stderr.
    pub fn error(&mut self, msg: &str) {
        self.flush();
        let _ = writeln!(io::stderr().lock(), "{msg}");
    }
}

impl fmt::Write for Output {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.buf.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_like_c() {
        assert_eq!(strtol("1"), 1);
        assert_eq!(strtol("  42abc"), 42);
        assert_eq!(strtol("0x1f"), 31);
        assert_eq!(strtol("0X1F"), 31);
        assert_eq!(strtol("010"), 8);
        assert_eq!(strtol("09"), 0);
        assert_eq!(strtol("0x"), 0);
        assert_eq!(strtol("0xg"), 0);
        assert_eq!(strtol("-3"), -3);
        assert_eq!(strtol("+7"), 7);
        assert_eq!(strtol("abc"), 0);
        assert_eq!(strtol(""), 0);
        assert_eq!(strtol("-"), 0);
        assert_eq!(strtol("99999999999999999999999"), i64::MAX);
        assert_eq!(strtol("-99999999999999999999999"), i64::MIN);
        assert_eq!(strtol("4294967297") as i32, 1);
    }

    #[test]
    fn strerror_has_no_suffix() {
        assert_eq!(strerror(2), "No such file or directory");
        assert_eq!(strerror(38), "Function not implemented");
    }

    #[test]
    fn getopt_messages() {
        use clap::{Arg, ArgAction, Command};
        let cmd = Command::new("t")
            .arg(Arg::new("dev").short('d').long("ib-dev"))
            .arg(Arg::new("port").short('i').long("ib-port"))
            .arg(
                Arg::new("list")
                    .short('l')
                    .long("list")
                    .action(ArgAction::SetTrue),
            )
            .infer_long_args(true);
        let msg = |args: &[&str]| {
            let args: Vec<OsString> = args.iter().map(OsString::from).collect();
            let err = cmd.clone().try_get_matches_from(&args).unwrap_err();
            getopt_message("prog", &cmd, &args, &err)
        };
        assert_eq!(msg(&["t", "-x"]), "prog: invalid option -- 'x'");
        assert_eq!(msg(&["t", "-lx"]), "prog: invalid option -- 'x'");
        assert_eq!(msg(&["t", "--foo"]), "prog: unrecognized option '--foo'");
        assert_eq!(
            msg(&["t", "--ib"]),
            "prog: option '--ib' is ambiguous; possibilities: '--ib-dev' '--ib-port'"
        );
        assert_eq!(
            msg(&["t", "-d"]),
            "prog: option requires an argument -- 'd'"
        );
        assert_eq!(
            msg(&["t", "-ld"]),
            "prog: option requires an argument -- 'd'"
        );
        assert_eq!(
            msg(&["t", "--ib-dev"]),
            "prog: option '--ib-dev' requires an argument"
        );
        assert_eq!(
            msg(&["t", "--list=1"]),
            "prog: option '--list' doesn't allow an argument"
        );
    }
}
