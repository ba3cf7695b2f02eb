//! A TCP connection between two test processes carrying text lines.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A TCP connection carrying one-line messages; every read waits at most the timeout given
/// to [`Wire::new`], then panics.
pub struct Wire {
    out: TcpStream,
    lines: BufReader<TcpStream>,
}

impl Wire {
    /// Wraps `stream`, with reads timing out after `timeout` and Nagle's algorithm off.
    pub fn new(stream: TcpStream, timeout: Duration) -> Wire {
        stream.set_read_timeout(Some(timeout)).unwrap();
        stream.set_nodelay(true).unwrap();
        Wire {
            out: stream.try_clone().unwrap(),
            lines: BufReader::new(stream),
        }
    }

    /// Sends `line` and a newline.
    pub fn send(&mut self, line: &str) {
        self.out
            .write_all(format!("{line}\n").as_bytes())
            .unwrap_or_else(|e| panic!("sending {line:?}: {e}"));
    }

    /// The next line without its newline, or `None` at the end of the connection; `what`
    /// names it in the failure message.
    pub fn recv_opt(&mut self, what: &str) -> Option<String> {
        let mut line = String::new();
        match self.lines.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => Some(line.trim_end().to_owned()),
            Err(e) => panic!("reading {what}: {e}"),
        }
    }

    /// The next line without its newline; panics at the end of the connection.
    pub fn recv(&mut self, what: &str) -> String {
        self.recv_opt(what)
            .unwrap_or_else(|| panic!("the connection ended before {what}"))
    }

    /// Whether the other side has closed the connection, without blocking: `Some(how)` once
    /// it has (`"EOF"` or the error), `None` while it is open and quiet. Panics if a line
    /// arrived instead.
    pub fn closed(&mut self) -> Option<String> {
        self.out.set_nonblocking(true).unwrap();
        let got = match self.lines.fill_buf() {
            Ok([]) => Some("EOF".to_owned()),
            Ok(data) => panic!("unexpected data from the peer: {data:?}"),
            Err(e) if e.kind() == ErrorKind::WouldBlock => None,
            Err(e) => Some(format!("{:?}", e.kind())),
        };
        self.out.set_nonblocking(false).unwrap();
        got
    }
}
