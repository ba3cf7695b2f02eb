//! glibc's getopt as the C tools' option loops show it: its messages for a bad argument,
//! and which of the options that act where they stand (print and exit) comes first.

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};

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

#[cfg(test)]
mod tests {
    use super::*;

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
