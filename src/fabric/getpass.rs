//! glibc's `getpass`, which `-y` falls back to for a key it cannot read: the prompt and the
//! answer go through the terminal (`/dev/tty`, echo off while typing), else stderr and
//! stdin.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::AsRawFd;

/// Writes `prompt` and reads one line (without its newline; empty at end of input). `None`
/// when there is no terminal, after prompting on stderr and reading stdin: glibc's failed
/// `open` of `/dev/tty` then leaves `errno` set, and the C tools take that as a bad key.
pub fn getpass(prompt: &str) -> Option<String> {
    match File::options().read(true).write(true).open("/dev/tty") {
        Ok(mut tty) => {
            let _ = tty.write_all(prompt.as_bytes());
            let _ = tty.flush();
            let echo = EchoOff::new(&tty);
            let line = read_line(BufReader::new(&tty));
            if echo.saved.is_some() {
                let _ = tty.write_all(b"\n");
            }
            drop(echo);
            Some(line)
        }
        Err(_) => {
            let _ = io::stderr().write_all(prompt.as_bytes());
            read_line(io::stdin().lock());
            None
        }
    }
}

/// One line of `input` without its newline; empty at end of input or on an error.
fn read_line(mut input: impl BufRead) -> String {
    let mut line = String::new();
    if input.read_line(&mut line).is_err() {
        line.clear();
    }
    line.strip_suffix('\n').unwrap_or(&line).to_owned()
}

/// The terminal's echo turned off (`tcsetattr`) until dropped, when the saved settings come
/// back.
struct EchoOff {
    fd: i32,
    saved: Option<libc::termios>,
}

impl EchoOff {
    fn new(tty: &File) -> EchoOff {
        let fd = tty.as_raw_fd();
        let mut term = std::mem::MaybeUninit::<libc::termios>::uninit();
        // SAFETY: fd is open for the lifetime of `tty`; term is writable for a termios.
        let saved = (unsafe { libc::tcgetattr(fd, term.as_mut_ptr()) } == 0).then(|| {
            // SAFETY: tcgetattr succeeded and filled it in.
            unsafe { term.assume_init() }
        });
        if let Some(saved) = saved {
            let mut quiet = saved;
            quiet.c_lflag &= !(libc::ECHO | libc::ECHONL);
            // SAFETY: fd is open; quiet is a valid termios.
            unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &quiet) };
        }
        EchoOff { fd, saved }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            // SAFETY: the tty is still open (EchoOff is dropped before it); saved is the
            // termios tcgetattr gave.
            unsafe { libc::tcsetattr(self.fd, libc::TCSAFLUSH, saved) };
        }
    }
}
