//! Data patterns: each message or record has bytes of its own, so that stale, misplaced,
//! shifted or torn data does not compare equal.

/// The `len` bytes of message `id` (unique per message): each 8-byte word mixes the id with
/// the word's index.
pub fn pattern(id: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut word = 0u64;
    while out.len() < len {
        let w = (id ^ word.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        out.extend_from_slice(&w.to_le_bytes());
        word += 1;
    }
    out.truncate(len);
    out
}

/// A well-mixed hash of `x` (splitmix64's finaliser), for message lengths and choices.
pub fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Record `seq`, `len` bytes (at least 8): `seq` in the first 8 bytes (little-endian), then
/// the pattern of `seq`. A record found in memory tells which one it is.
pub fn record(seq: u64, len: usize) -> Vec<u8> {
    let mut r = seq.to_le_bytes().to_vec();
    r.extend(pattern(seq, len - 8));
    r
}
