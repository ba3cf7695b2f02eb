//! glibc's `getopt_long` as infiniband-diags' option loops use it: short options (clusters
//! like `-vD`, a value glued or in the next argument), long options (`--name=value` or
//! `--name value`, any unambiguous prefix) and operands anywhere (GNU permutation), `--`
//! ending the options. Errors carry the message glibc prints for them.

/// One option a tool accepts: its long name, its letter and whether it takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongOpt {
    /// The long name, without `--`.
    pub name: &'static str,
    /// The short letter (also what the option loop switches on).
    pub letter: char,
    /// Whether it takes a value.
    pub has_arg: bool,
}

/// What `getopt_long` returns, in argument order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// An option (by its letter) and its value.
    Opt(char, Option<String>),
    /// A bad argument, with glibc's message (without the trailing newline); the C loops
    /// show their usage then.
    Error(String),
}

/// Parses `args` (`argv[0]` first) against `opts`: the options in order, up to and
/// including the first error, and the operands.
pub fn getopt_long(prog: &str, args: &[String], opts: &[LongOpt]) -> (Vec<Item>, Vec<String>) {
    let mut items = Vec::new();
    let mut operands = Vec::new();
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        let item = if arg == "--" {
            operands.extend(rest.by_ref().cloned());
            break;
        } else if let Some(long) = arg.strip_prefix("--") {
            long_opt(prog, long, opts, &mut rest)
        } else if arg.len() > 1 && arg.starts_with('-') {
            let before = items.len();
            short_cluster(prog, &arg[1..], opts, &mut rest, &mut items);
            if matches!(items[before..].last(), Some(Item::Error(_))) {
                break;
            }
            continue;
        } else {
            operands.push(arg.clone());
            continue;
        };
        let failed = matches!(item, Item::Error(_));
        items.push(item);
        if failed {
            break;
        }
    }
    (items, operands)
}

/// `--name[=value]`.
fn long_opt<'a>(
    prog: &str,
    text: &str,
    opts: &[LongOpt],
    rest: &mut impl Iterator<Item = &'a String>,
) -> Item {
    let (name, value) = match text.split_once('=') {
        Some((name, value)) => (name, Some(value.to_owned())),
        None => (text, None),
    };
    let opt = match opts.iter().find(|o| o.name == name) {
        Some(o) => o,
        None => {
            let candidates: Vec<&LongOpt> =
                opts.iter().filter(|o| o.name.starts_with(name)).collect();
            let Some(&first) = candidates.first() else {
                return Item::Error(format!("{prog}: unrecognized option '--{name}'"));
            };
            let differ = |o: &&LongOpt| o.letter != first.letter || o.has_arg != first.has_arg;
            if candidates.iter().any(differ) {
                let names: String = candidates
                    .iter()
                    .map(|o| format!(" '--{}'", o.name))
                    .collect();
                return Item::Error(format!(
                    "{prog}: option '--{name}' is ambiguous; possibilities:{names}"
                ));
            }
            first
        }
    };
    match (opt.has_arg, value) {
        (false, None) => Item::Opt(opt.letter, None),
        (false, Some(_)) => Item::Error(format!(
            "{prog}: option '--{}' doesn't allow an argument",
            opt.name
        )),
        (true, Some(v)) => Item::Opt(opt.letter, Some(v)),
        (true, None) => match rest.next() {
            Some(v) => Item::Opt(opt.letter, Some(v.clone())),
            None => Item::Error(format!(
                "{prog}: option '--{}' requires an argument",
                opt.name
            )),
        },
    }
}

/// `-abc`, `-Cvalue` or `-C value`: pushes each option, or the first error.
fn short_cluster<'a>(
    prog: &str,
    cluster: &str,
    opts: &[LongOpt],
    rest: &mut impl Iterator<Item = &'a String>,
    items: &mut Vec<Item>,
) {
    for (i, c) in cluster.char_indices() {
        let Some(opt) = opts.iter().find(|o| o.letter == c && c != ':') else {
            items.push(Item::Error(format!("{prog}: invalid option -- '{c}'")));
            return;
        };
        if !opt.has_arg {
            items.push(Item::Opt(c, None));
            continue;
        }
        let glued = &cluster[i + c.len_utf8()..];
        let value = if glued.is_empty() {
            rest.next().cloned()
        } else {
            Some(glued.to_owned())
        };
        items.push(match value {
            Some(v) => Item::Opt(c, Some(v)),
            None => Item::Error(format!("{prog}: option requires an argument -- '{c}'")),
        });
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: [LongOpt; 4] = [
        LongOpt {
            name: "Ca",
            letter: 'C',
            has_arg: true,
        },
        LongOpt {
            name: "verbose",
            letter: 'v',
            has_arg: false,
        },
        LongOpt {
            name: "version",
            letter: 'V',
            has_arg: false,
        },
        LongOpt {
            name: "Direct",
            letter: 'D',
            has_arg: false,
        },
    ];

    fn parse(args: &[&str]) -> (Vec<Item>, Vec<String>) {
        let mut all = vec!["p".to_owned()];
        all.extend(args.iter().map(|a| a.to_string()));
        getopt_long("p", &all, &OPTS)
    }

    fn opt(c: char, v: Option<&str>) -> Item {
        Item::Opt(c, v.map(str::to_owned))
    }

    fn err(msg: &str) -> Item {
        Item::Error(msg.to_owned())
    }

    #[test]
    fn options_and_operands_in_any_order() {
        let (items, ops) = parse(&["1", "-vD", "-Cx", "2", "-C", "y", "--Ca=z", "--C", "w"]);
        let want = [
            opt('v', None),
            opt('D', None),
            opt('C', Some("x")),
            opt('C', Some("y")),
            opt('C', Some("z")),
            opt('C', Some("w")),
        ];
        assert_eq!(items, want);
        assert_eq!(ops, ["1", "2"]);
        let (items, ops) = parse(&["-v", "--", "-D", "-"]);
        assert_eq!(items, [opt('v', None)]);
        assert_eq!(ops, ["-D", "-"]);
    }

    #[test]
    fn glibc_messages() {
        assert_eq!(parse(&["-x", "-v"]).0, [err("p: invalid option -- 'x'")]);
        assert_eq!(
            parse(&["-vC"]).0,
            [opt('v', None), err("p: option requires an argument -- 'C'")]
        );
        assert_eq!(
            parse(&["--Ca"]).0,
            [err("p: option '--Ca' requires an argument")]
        );
        assert_eq!(parse(&["--foo"]).0, [err("p: unrecognized option '--foo'")]);
        assert_eq!(
            parse(&["--ver"]).0,
            [err(
                "p: option '--ver' is ambiguous; possibilities: '--verbose' '--version'"
            )]
        );
        assert_eq!(
            parse(&["--verb=1"]).0,
            [err("p: option '--verbose' doesn't allow an argument")]
        );
    }
}
