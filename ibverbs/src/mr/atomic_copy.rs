//! Copies to and from registered memory with relaxed atomic loads and stores.
//!
//! The HCA and remote peers may write registered memory at any time, so Rust never reads or
//! writes it with plain accesses: every byte is reached through `AtomicU8` / `AtomicUsize`
//! (aligned words for the bulk, bytes for the ends). Relaxed ordering is enough; the order
//! against the HCA comes from completions, as in C.
//!
//! A raw file of the folder besides `raw.rs`, kept apart because copying through a pointer
//! into memory the HCA shares is its whole purpose: its callers are `raw.rs`'s
//! `Registration`, on ranges it has checked against the registered memory.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

const WORD: usize = std::mem::size_of::<usize>();

/// The bytes before `ptr` reaches word alignment, and the number of whole words after them,
/// for `len` bytes.
fn split(ptr: *const u8, len: usize) -> (usize, usize) {
    let head = ptr
        .align_offset(std::mem::align_of::<AtomicUsize>())
        .min(len);
    (head, (len - head) / WORD)
}

/// Copies `src` to `dst`.
///
/// # Safety
/// `dst` is valid for writes of `src.len()` bytes, and accessed only atomically meanwhile.
pub(crate) unsafe fn store(dst: *mut u8, src: &[u8]) {
    let (head, words) = split(dst, src.len());
    let body = head + words * WORD;
    for at in (0..head).chain(body..src.len()) {
        // SAFETY: `at` < src.len(): inside dst (caller); a byte is always aligned.
        unsafe { AtomicU8::from_ptr(dst.add(at)) }.store(src[at], Relaxed);
    }
    for (i, chunk) in src[head..body].chunks_exact(WORD).enumerate() {
        let mut word = [0; WORD];
        word.copy_from_slice(chunk);
        // SAFETY: inside dst (caller), and word-aligned (split).
        let cell = unsafe { AtomicUsize::from_ptr(dst.add(head + i * WORD).cast()) };
        cell.store(usize::from_ne_bytes(word), Relaxed);
    }
}

/// Copies from `src` into `dst`.
///
/// # Safety
/// `src` is valid for reads of `dst.len()` bytes, and accessed only atomically meanwhile.
pub(crate) unsafe fn load(src: *const u8, dst: &mut [u8]) {
    let (head, words) = split(src, dst.len());
    let body = head + words * WORD;
    for (i, chunk) in dst[head..body].chunks_exact_mut(WORD).enumerate() {
        // SAFETY: inside src (caller), and word-aligned (split).
        let cell = unsafe { AtomicUsize::from_ptr(src.add(head + i * WORD).cast_mut().cast()) };
        chunk.copy_from_slice(&cell.load(Relaxed).to_ne_bytes());
    }
    let len = dst.len();
    for at in (0..head).chain(body..len) {
        // SAFETY: `at` < dst.len(): inside src (caller).
        dst[at] = unsafe { load_u8(src.add(at)) };
    }
}

/// Sets `len` bytes at `dst` to `byte`.
///
/// # Safety
/// `dst` is valid for writes of `len` bytes, and accessed only atomically meanwhile.
pub(crate) unsafe fn fill(dst: *mut u8, len: usize, byte: u8) {
    let (head, words) = split(dst, len);
    let body = head + words * WORD;
    for at in (0..head).chain(body..len) {
        // SAFETY: `at` < len: inside dst (caller); a byte is always aligned.
        unsafe { AtomicU8::from_ptr(dst.add(at)) }.store(byte, Relaxed);
    }
    let word = usize::from_ne_bytes([byte; WORD]);
    for i in 0..words {
        // SAFETY: inside dst (caller), and word-aligned (split).
        unsafe { AtomicUsize::from_ptr(dst.add(head + i * WORD).cast()) }.store(word, Relaxed);
    }
}

/// Loads the byte at `src`.
///
/// # Safety
/// `src` is valid for reads, and accessed only atomically meanwhile.
#[inline]
pub(crate) unsafe fn load_u8(src: *const u8) -> u8 {
    // SAFETY: valid, and only accessed atomically (caller); a byte is always aligned.
    unsafe { AtomicU8::from_ptr(src.cast_mut()) }.load(Relaxed)
}
