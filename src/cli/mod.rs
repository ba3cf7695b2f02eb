//! What the tools share to behave like their C originals: the option parser (glibc's
//! `getopt_long`, in [`getopt`]), C number parsing, `strerror` text, exit statuses, and
//! writing output that may go to a closed pipe.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

pub mod getopt;

/// `inet_ntop(3)`, as the device listing prints addresses (for the examples).
pub use crate::devinfo::inet_ntop;
pub use getopt::{getopt_long, optstring_of, GetoptError, HasArg, Item, LongOpt, Parsed};

/// The program name as invoked (`argv[0]`), which the C tools print in messages.
pub fn prog_name(args: &[OsString], default: &str) -> String {
    args.first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| default.to_owned())
}

/// The arguments after the program name as text (bytes that are not UTF-8 replaced), for
/// [`getopt_long`].
pub fn arg_strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// The exit code of a C `main` returning `status` (or of `exit(status)`): its low 8 bits,
/// so that -1 is 255.
pub fn exit_code(status: i32) -> ExitCode {
    ExitCode::from(status.to_le_bytes()[0])
}

/// `strtol(s, NULL, 0)`: leading white space, a sign, then a hexadecimal (`0x`), octal
/// (leading `0`) or decimal number up to the first other character; 0 if there is none;
/// clamped to the `long` range on overflow.
pub fn strtol(s: &str) -> i64 {
    let (negative, value) = c_number(s, None);
    long(negative, value)
}

/// `atoi(s)`, which glibc makes `(int) strtol(s, NULL, 10)`: a decimal number as
/// [`strtol`] reads it, clamped to the `long` range, then its low 32 bits.
pub fn atoi(s: &str) -> i32 {
    let (negative, value) = c_number(s, Some(10));
    long(negative, value) as i32
}

/// The signed magnitude clamped to the `long` range, as `strtol` returns it.
fn long(negative: bool, value: i128) -> i64 {
    let value = if negative { -value } else { value };
    i64::try_from(value).unwrap_or(if negative { i64::MIN } else { i64::MAX })
}

/// `strtoull(s, NULL, 0)` (and `strtoul` on 64-bit Linux): as [`strtol`], but `u64::MAX` on
/// overflow and a negative number wrapping around.
pub fn strtoull(s: &str) -> u64 {
    let (negative, value) = c_number(s, None);
    match u64::try_from(value) {
        Ok(v) if negative => v.wrapping_neg(),
        Ok(v) => v,
        Err(_) => u64::MAX,
    }
}

/// The sign and magnitude (saturated beyond `u64::MAX`) of a C number, as `strtol` and
/// `strtoull` read it with base 0 (`radix` `None`: the prefix says) or `radix`.
fn c_number(s: &str, radix: Option<u32>) -> (bool, i128) {
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
    let (radix, digits) = if let Some(radix) = radix {
        (radix, s)
    } else if hex_prefix {
        (16, &s[2..])
    } else if bytes.first() == Some(&b'0') {
        (8, s)
    } else {
        (10, s)
    };
    let mut value: i128 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        value = (value * i128::from(radix) + i128::from(d)).min(i128::from(u64::MAX) + 1);
    }
    (negative, value)
}

/// The `strerror` text of an errno value, such as `No such file or directory`.
pub fn strerror(errno: i32) -> String {
    let text = io::Error::from_raw_os_error(errno).to_string();
    let suffix = format!(" (os error {errno})");
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

/// The `strerror`-style text of a failed verb, as `perror` prints it.
pub fn verbs_error_text(err: &rdma_verbs::Error) -> String {
    err.raw_os_error().map_or_else(|| err.to_string(), strerror)
}

/// `perror(what)` of a failed call of the library: `what` and the error's `strerror` text
/// ([`verbs_error_text`]), on stderr.
pub fn perror(what: &str, err: &rdma_verbs::Error) {
    eprintln!("{what}: {}", verbs_error_text(err));
}

/// A C example's usage text: `usage: PROG`, then each line after a tab.
pub fn print_usage(prog: &str, lines: &[&str]) {
    println!("usage: {prog}");
    for line in lines {
        println!("\t{line}");
    }
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
        assert_eq!(strtoull("0xffffffffffffffff"), u64::MAX);
        assert_eq!(strtoull("0x10000000000000000"), u64::MAX);
        assert_eq!(strtoull("-1"), u64::MAX);
        assert_eq!(atoi(" 010"), 10);
        assert_eq!(atoi("0x10"), 0);
        assert_eq!(atoi("-12abc"), -12);
        assert_eq!(atoi("4294967297"), 1);
        assert_eq!(atoi("99999999999999999999999"), -1);
        assert_eq!(strtoull("0x100001"), 0x100001);
    }

    #[test]
    fn strerror_has_no_suffix() {
        assert_eq!(strerror(2), "No such file or directory");
        assert_eq!(strerror(38), "Function not implemented");
    }
}
