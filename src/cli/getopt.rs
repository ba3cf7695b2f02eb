//! glibc's `getopt_long`, as the C tools' option loops see it: one parser for every tool.
//!
//! - Short options from an option string as C writes it (`"d:i:lv"`: a `:` after a letter
//!   means a value, `::` an optional one glued to it): clusters (`-vl`), a value glued
//!   (`-p18515`) or in the next argument (`-p 18515`, even if it starts with `-`).
//! - Long options: `--name=value` or `--name value`, and any prefix of a name that is
//!   unambiguous as glibc decides it (prefixes of several options that all mean the same
//!   are not ambiguous: the first one wins).
//! - Operands anywhere: GNU permutation (options after operands are still options), unless
//!   the option string starts with `+` (POSIX order: the first operand ends the options).
//!   `--` ends the options; `-` alone is an operand.
//! - Errors as typed values ([`GetoptError`]) whose [`message`](GetoptError::message) is
//!   glibc's text, without the newline.
//!
//! The options come back in argument order, up to and including the first error, so that a
//! tool can act on those before it as its C loop does (`-h` before a bad option prints the
//! usage, not the error). glibc's `POSIXLY_CORRECT` environment variable is not read.

use std::fmt;

/// Whether a long option takes a value (`struct option`'s `has_arg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HasArg {
    /// `no_argument`.
    No,
    /// `required_argument`: `--name=value` or `--name value`.
    Required,
    /// `optional_argument`: only `--name=value`.
    Optional,
}

/// One long option (`struct option`): its name, whether it takes a value, and what the
/// option loop sees for it (`val`: usually the letter of the same short option).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongOpt {
    /// The name, without `--`.
    pub name: &'static str,
    /// Whether it takes a value.
    pub has_arg: HasArg,
    /// What the option loop switches on.
    pub val: char,
}

impl LongOpt {
    /// An option without a value.
    pub const fn flag(name: &'static str, val: char) -> LongOpt {
        LongOpt {
            name,
            has_arg: HasArg::No,
            val,
        }
    }

    /// An option with a (required) value.
    pub const fn value(name: &'static str, val: char) -> LongOpt {
        LongOpt {
            name,
            has_arg: HasArg::Required,
            val,
        }
    }
}

/// A bad argument, as glibc's getopt reports it (it returns `?` then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetoptError {
    /// A short option that is not in the option string: `invalid option -- 'x'`.
    InvalidShort(char),
    /// A short option without its value at the end: `option requires an argument -- 'x'`.
    MissingShortValue(char),
    /// A long option matching none: `unrecognized option '--text'` (the whole argument,
    /// `=value` included).
    Unrecognized(String),
    /// A prefix of several long options that differ: `option '--text' is ambiguous;
    /// possibilities: '--a' '--b'` (the first match and those that differ from it).
    Ambiguous {
        /// The argument after `--`, `=value` included.
        given: String,
        /// The long names listed.
        possibilities: Vec<&'static str>,
    },
    /// A long option that takes a value, last and without one: `option '--name' requires
    /// an argument`.
    MissingLongValue(&'static str),
    /// `--name=value` for an option without a value: `option '--name' doesn't allow an
    /// argument`.
    UnexpectedValue(&'static str),
}

impl GetoptError {
    /// glibc's message, as `prog: ...`, without the newline.
    pub fn message(&self, prog: &str) -> String {
        format!("{prog}: {self}")
    }
}

impl fmt::Display for GetoptError {
    /// The message without the program name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GetoptError::InvalidShort(c) => write!(f, "invalid option -- '{c}'"),
            GetoptError::MissingShortValue(c) => {
                write!(f, "option requires an argument -- '{c}'")
            }
            GetoptError::Unrecognized(text) => write!(f, "unrecognized option '--{text}'"),
            GetoptError::Ambiguous {
                given,
                possibilities,
            } => {
                write!(f, "option '--{given}' is ambiguous; possibilities:")?;
                possibilities
                    .iter()
                    .try_for_each(|name| write!(f, " '--{name}'"))
            }
            GetoptError::MissingLongValue(name) => {
                write!(f, "option '--{name}' requires an argument")
            }
            GetoptError::UnexpectedValue(name) => {
                write!(f, "option '--{name}' doesn't allow an argument")
            }
        }
    }
}

impl std::error::Error for GetoptError {}

/// What `getopt_long` returns, in argument order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// An option (by its letter or `val`) and its value.
    Opt(char, Option<String>),
    /// A bad argument; always the last item.
    Error(GetoptError),
}

/// A command line as getopt reads it: the options in order (up to and including the first
/// error) and the operands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The options and the error that ended them, if any.
    pub items: Vec<Item>,
    /// The operands, in order (those after `--` last).
    pub operands: Vec<String>,
}

impl Parsed {
    /// The options before the first error, and that error.
    pub fn options(
        &self,
    ) -> (
        impl Iterator<Item = (char, Option<&str>)>,
        Option<&GetoptError>,
    ) {
        let error = match self.items.last() {
            Some(Item::Error(e)) => Some(e),
            _ => None,
        };
        let opts = self.items.iter().filter_map(|item| match item {
            Item::Opt(c, v) => Some((*c, v.as_deref())),
            Item::Error(_) => None,
        });
        (opts, error)
    }
}

/// The short options of an option string: each letter and whether it takes a value.
fn short_opt(optstring: &str, c: char) -> Option<HasArg> {
    if c == ':' || c == ';' {
        return None;
    }
    let at = optstring.find(c)?;
    let after = &optstring[at + c.len_utf8()..];
    Some(if after.starts_with("::") {
        HasArg::Optional
    } else if after.starts_with(':') {
        HasArg::Required
    } else {
        HasArg::No
    })
}

/// `getopt_long(argc, argv, optstring, longopts)` until it returns -1 or `?`: `args` is
/// `argv` without the program name (the messages are made by [`GetoptError::message`]).
pub fn getopt_long<S: AsRef<str>>(args: &[S], optstring: &str, longopts: &[LongOpt]) -> Parsed {
    let posix_order = optstring.starts_with('+');
    let optstring = optstring.trim_start_matches(['+', '-']);
    let mut parsed = Parsed::default();
    let mut rest = args.iter().map(AsRef::as_ref);
    while let Some(arg) = rest.next() {
        if arg == "--" {
            parsed.operands.extend(rest.by_ref().map(str::to_owned));
            break;
        }
        let errors_before = parsed.items.len();
        if let Some(long) = arg.strip_prefix("--") {
            parsed.items.push(long_opt(long, longopts, &mut rest));
        } else if arg.len() > 1 && arg.starts_with('-') {
            short_cluster(&arg[1..], optstring, &mut rest, &mut parsed.items);
        } else {
            parsed.operands.push(arg.to_owned());
            if posix_order {
                parsed.operands.extend(rest.by_ref().map(str::to_owned));
                break;
            }
            continue;
        }
        if matches!(parsed.items[errors_before..].last(), Some(Item::Error(_))) {
            break;
        }
    }
    parsed
}

/// `--name[=value]` (`text` is what follows `--`).
fn long_opt<'a>(text: &str, opts: &[LongOpt], rest: &mut impl Iterator<Item = &'a str>) -> Item {
    let (name, value) = match text.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (text, None),
    };
    let opt = match opts.iter().find(|o| o.name == name) {
        Some(o) => o,
        None => {
            let mut matches = opts.iter().filter(|o| o.name.starts_with(name));
            let Some(first) = matches.next() else {
                return Item::Error(GetoptError::Unrecognized(text.to_owned()));
            };
            let differ: Vec<&LongOpt> = matches
                .filter(|o| o.has_arg != first.has_arg || o.val != first.val)
                .collect();
            if !differ.is_empty() {
                let possibilities = std::iter::once(first)
                    .chain(differ)
                    .map(|o| o.name)
                    .collect();
                return Item::Error(GetoptError::Ambiguous {
                    given: text.to_owned(),
                    possibilities,
                });
            }
            first
        }
    };
    match (opt.has_arg, value) {
        (HasArg::No, None) | (HasArg::Optional, None) => Item::Opt(opt.val, None),
        (HasArg::No, Some(_)) => Item::Error(GetoptError::UnexpectedValue(opt.name)),
        (HasArg::Required | HasArg::Optional, Some(v)) => Item::Opt(opt.val, Some(v.to_owned())),
        (HasArg::Required, None) => match rest.next() {
            Some(v) => Item::Opt(opt.val, Some(v.to_owned())),
            None => Item::Error(GetoptError::MissingLongValue(opt.name)),
        },
    }
}

/// `-abc`, `-Cvalue` or `-C value` (`cluster` is what follows `-`): pushes each option, or
/// the first error.
fn short_cluster<'a>(
    cluster: &str,
    optstring: &str,
    rest: &mut impl Iterator<Item = &'a str>,
    items: &mut Vec<Item>,
) {
    for (i, c) in cluster.char_indices() {
        let glued = &cluster[i + c.len_utf8()..];
        let item = match short_opt(optstring, c) {
            None => Item::Error(GetoptError::InvalidShort(c)),
            Some(HasArg::No) => {
                items.push(Item::Opt(c, None));
                continue;
            }
            Some(HasArg::Optional) => Item::Opt(c, (!glued.is_empty()).then(|| glued.to_owned())),
            Some(HasArg::Required) if !glued.is_empty() => Item::Opt(c, Some(glued.to_owned())),
            Some(HasArg::Required) => match rest.next() {
                Some(v) => Item::Opt(c, Some(v.to_owned())),
                None => Item::Error(GetoptError::MissingShortValue(c)),
            },
        };
        items.push(item);
        return;
    }
}

/// The option string of `longopts` whose `val`s are also short options (as infiniband-diags'
/// `make_str_opts` builds it: every `val`, with `:` after those taking a value).
pub fn optstring_of(longopts: &[LongOpt]) -> String {
    let mut s = String::new();
    for o in longopts {
        s.push(o.val);
        match o.has_arg {
            HasArg::No => {}
            HasArg::Required => s.push(':'),
            HasArg::Optional => s.push_str("::"),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: [LongOpt; 5] = [
        LongOpt::value("Ca", 'C'),
        LongOpt::flag("verbose", 'v'),
        LongOpt::flag("version", 'V'),
        LongOpt::flag("Direct", 'D'),
        LongOpt::flag("verbosely", 'v'),
    ];
    const SHORTS: &str = "C:vVDo::";

    fn parse(args: &[&str]) -> (Vec<Item>, Vec<String>) {
        let p = getopt_long(args, SHORTS, &OPTS);
        (p.items, p.operands)
    }

    fn opt(c: char, v: Option<&str>) -> Item {
        Item::Opt(c, v.map(str::to_owned))
    }

    fn msg(args: &[&str]) -> String {
        match parse(args).0.last() {
            Some(Item::Error(e)) => e.message("p"),
            other => panic!("no error: {other:?}"),
        }
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
        // A value may start with `-`, even be `--`.
        let (items, ops) = parse(&["-C", "-v", "--Ca", "--", "x"]);
        assert_eq!(items, [opt('C', Some("-v")), opt('C', Some("--"))]);
        assert_eq!(ops, ["x"]);
        // Optional values only glued.
        let (items, ops) = parse(&["-o", "x", "-oy"]);
        assert_eq!(items, [opt('o', None), opt('o', Some("y"))]);
        assert_eq!(ops, ["x"]);
        // `--verb` is a prefix of two options that mean the same: not ambiguous.
        assert_eq!(parse(&["--verb"]).0, [opt('v', None)]);
        assert_eq!(parse(&["--verbosely"]).0, [opt('v', None)]);
    }

    #[test]
    fn posix_order_stops_at_the_first_operand() {
        let p = getopt_long(&["-v", "x", "-D"], "+vD", &[]);
        assert_eq!(p.items, [opt('v', None)]);
        assert_eq!(p.operands, ["x", "-D"]);
    }

    #[test]
    fn glibc_messages() {
        assert_eq!(
            parse(&["-x", "-v"]).0,
            [Item::Error(GetoptError::InvalidShort('x'))]
        );
        assert_eq!(msg(&["-x", "-v"]), "p: invalid option -- 'x'");
        assert_eq!(msg(&["-:"]), "p: invalid option -- ':'");
        assert_eq!(
            parse(&["-vC"]).0,
            [
                opt('v', None),
                Item::Error(GetoptError::MissingShortValue('C'))
            ]
        );
        assert_eq!(msg(&["-vC"]), "p: option requires an argument -- 'C'");
        assert_eq!(msg(&["--Ca"]), "p: option '--Ca' requires an argument");
        assert_eq!(msg(&["--C"]), "p: option '--Ca' requires an argument");
        assert_eq!(msg(&["--foo"]), "p: unrecognized option '--foo'");
        assert_eq!(msg(&["--foo=1"]), "p: unrecognized option '--foo=1'");
        assert_eq!(
            msg(&["--ver"]),
            "p: option '--ver' is ambiguous; possibilities: '--verbose' '--version'"
        );
        assert_eq!(
            msg(&["--ver=1"]),
            "p: option '--ver=1' is ambiguous; possibilities: '--verbose' '--version'"
        );
        assert_eq!(
            msg(&["--verb=1"]),
            "p: option '--verbose' doesn't allow an argument"
        );
    }

    #[test]
    fn optstrings_of_tables() {
        assert_eq!(optstring_of(&OPTS), "C:vVDv");
    }
}
