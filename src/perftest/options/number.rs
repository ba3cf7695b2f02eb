//! perftest's number syntax: C integers as `strtol` reads them, range-checked with
//! perftest's messages, and the message size with its K and M suffixes.

use crate::perftest::types::{Error, Result};

/// Parses C integer text as `strtol(s, &end, 0)` with `*end == '\0'` required.
pub(super) fn c_int(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if t.len() > 2 && (t.starts_with("0x") || t.starts_with("0X")) {
        (16, &t[2..])
    } else if t.len() > 1 && t.starts_with('0') {
        (8, &t[1..])
    } else {
        (10, t)
    };
    // Digits only: strtol reads no number in "--5", "+-5" or "0x-5".
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i128::from(u64::from_str_radix(digits, radix).ok()?);
    i64::try_from(if neg { -v } else { v }).ok()
}

/// A number option in `min..=max`, with perftest's messages.
pub(super) fn number(
    value: &Option<String>,
    name: &str,
    min: i64,
    max: i64,
) -> Result<Option<i64>> {
    let Some(text) = value else { return Ok(None) };
    let v = c_int(text)
        .ok_or_else(|| Error::new(format!(" {name} argument {text} should be an integer")))?;
    if v < min || v > max {
        return Err(Error::new(format!(
            " {name} should be between {min} and {max}"
        )));
    }
    Ok(Some(v))
}

/// `-s`: perftest's K/M suffixes, then a C integer.
pub(super) fn parse_size(text: &str) -> Result<u64> {
    let (digits, factor) = match text.as_bytes().last() {
        Some(b'K') => (&text[..text.len() - 1], 1024),
        Some(b'M') => (&text[..text.len() - 1], 1024 * 1024),
        _ => (text, 1),
    };
    let max = u64::from(u32::MAX / 2);
    let v = c_int(digits)
        .and_then(|v| u64::try_from(v).ok())
        .and_then(|v| v.checked_mul(factor))
        .filter(|v| (1..=max).contains(v));
    v.ok_or_else(|| Error::new(format!(" Message Size should be between 1 and {max}")))
}
