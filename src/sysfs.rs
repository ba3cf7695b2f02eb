//! The files of `/sys/class/infiniband/<device>/` that the C tools read beside verbs, each
//! read with the rules of the C library that reads it there: libibverbs' for `ibv_devinfo`,
//! libibumad's for `ibstat`. They differ at the edges (buffer sizes, newlines, NULs).
//!
//! Reads go through `std::fs`, that is through `open64`, which ibsim's `libumad2sim`
//! preload does not interpose: a simulated fabric's faked sysfs is not seen here.

/// The sysfs directory of RDMA devices.
const CLASS_DIR: &str = "/sys/class/infiniband";

/// The path of `file` of `device`.
fn device_file(device: &str, file: &str) -> String {
    format!("{CLASS_DIR}/{device}/{file}")
}

/// `file` of `device` as libibverbs' `ibv_read_sysfs_file` reads it into `ibv_devinfo`'s
/// buffer and `printf("%s")` prints it; `None` where `ibv_devinfo` prints nothing (see
/// [`ibv_text`]), or if the file is missing.
pub fn read_ibv(device: &str, file: &str) -> Option<String> {
    ibv_text(&std::fs::read(device_file(device, file)).ok()?)
}

/// File contents as `ibv_read_sysfs_file` reads them into a 256-byte buffer: one trailing
/// newline removed, text up to the first NUL; `None` if that leaves nothing or if the file
/// fills the buffer without a newline at its end (the C call fails then).
pub fn ibv_text(contents: &[u8]) -> Option<String> {
    const SIZE: usize = 256;
    let len = contents.len().min(SIZE);
    let mut bytes = &contents[..len];
    if let Some(stripped) = bytes.strip_suffix(b"\n") {
        bytes = stripped;
    } else if len == SIZE {
        return None;
    }
    if bytes.is_empty() {
        return None;
    }
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

/// `file` of `device` as libibumad's `sys_read_string` reads it into a buffer of `max_len`
/// bytes (see [`umad_text`]); empty if the file is missing.
pub fn read_umad(device: &str, file: &str, max_len: usize) -> String {
    std::fs::read(device_file(device, file))
        .map(|contents| umad_text(&contents, max_len))
        .unwrap_or_default()
}

/// File contents as `sys_read_string` reads them into a buffer of `max_len` bytes: at most
/// `max_len - 1` bytes, up to the first NUL, cut at the last newline.
pub fn umad_text(contents: &[u8], max_len: usize) -> String {
    let mut bytes = &contents[..contents.len().min(max_len.saturating_sub(1))];
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        bytes = &bytes[..nul];
    }
    if let Some(newline) = bytes.iter().rposition(|&b| b == b'\n') {
        bytes = &bytes[..newline];
    }
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ibv_texts_like_libibverbs() {
        assert_eq!(
            ibv_text(b"MT_0000000010\n").as_deref(),
            Some("MT_0000000010")
        );
        assert_eq!(ibv_text(b"abc").as_deref(), Some("abc"));
        assert_eq!(ibv_text(b"a\0b\n").as_deref(), Some("a"));
        assert_eq!(ibv_text(b"\n"), None);
        assert_eq!(ibv_text(b""), None);
        assert_eq!(ibv_text(&[b'x'; 256]), None);
        let mut long = vec![b'x'; 255];
        long.push(b'\n');
        assert_eq!(ibv_text(&long).map(|s| s.len()), Some(255));
    }

    #[test]
    fn umad_texts_like_libibumad() {
        assert_eq!(umad_text(b"16.35.2000\n", 20), "16.35.2000");
        assert_eq!(umad_text(b"", 20), "");
        assert_eq!(umad_text(b"\n", 20), "");
        assert_eq!(umad_text(b"a\nb\n", 20), "a\nb");
        assert_eq!(umad_text(b"a\0b\n", 20), "a");
        // 19 bytes at most; the newline is cut only if it is within them.
        assert_eq!(
            umad_text(b"0123456789012345678\n", 20),
            "0123456789012345678"
        );
        assert_eq!(
            umad_text(b"01234567890123456789xyz\n", 20),
            "0123456789012345678"
        );
    }
}
