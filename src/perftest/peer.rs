//! The connection to the peer that carries the out-of-band exchange (the messages are
//! `wire`'s): TCP, or with `-R` an rdma_cm connection (`comm`).
//!
//! Every exchange is symmetric: the client writes its message and then reads the server's,
//! the server reads first and then writes. Each message goes out in one `write`, because
//! perftest reads each with a single `read` of the message size.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::comm::CmLink;
use super::types::{Error, Result};
use super::wire::{Record, ReportMsg, DEST_LEN, RECORD_LEN_GID};

/// The `strerror` text of an I/O error (its description if it has no errno).
fn io_text(e: &std::io::Error) -> String {
    e.raw_os_error()
        .map_or_else(|| e.to_string(), crate::cli::strerror)
}

/// What carries the messages.
enum Link {
    /// A TCP connection; records are text.
    Tcp(TcpStream),
    /// An rdma_cm connection (`-R`); records are binary.
    Cm(Box<CmLink>),
}

/// The connection to the peer.
pub struct Peer {
    link: Link,
    client: bool,
}

impl Peer {
    /// Connects to `host:port` over IPv4 (as perftest), within `timeout`.
    pub fn connect(host: &str, port: u16, timeout: Duration) -> Result<Peer> {
        let fail = |why: String| Error::new(format!("Couldn't connect to {host}:{port}: {why}"));
        let addrs: Vec<_> = (host, port)
            .to_socket_addrs()
            .map_err(|e| fail(e.to_string()))?
            .filter(|a| a.is_ipv4())
            .collect();
        if addrs.is_empty() {
            return Err(fail("no IPv4 address".into()));
        }
        let mut last = String::new();
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => return Peer::new(stream, true),
                Err(e) => last = io_text(&e),
            }
        }
        Err(fail(last))
    }

    /// Listens on `port` on every IPv4 address and takes the first client (waiting as
    /// long as it takes).
    pub fn accept(port: u16) -> Result<Peer> {
        Peer::accept_on(&Peer::listen(port)?)
    }

    /// Listens on `port` on every IPv4 address, for [`accept_on`](Self::accept_on).
    pub fn listen(port: u16) -> Result<TcpListener> {
        TcpListener::bind(("0.0.0.0", port))
            .map_err(|e| Error::new(format!("Couldn't listen to port {port}: {}", io_text(&e))))
    }

    /// Takes the next client of `listener` (waiting as long as it takes).
    pub fn accept_on(listener: &TcpListener) -> Result<Peer> {
        let (stream, _) = listener
            .accept()
            .map_err(|e| Error::new(format!("accept() failed: {}", io_text(&e))))?;
        Peer::new(stream, false)
    }

    /// Connects to `host:port` over rdma_cm (`-R`), within `timeout`.
    pub fn connect_cm(host: &str, port: u16, timeout: Duration) -> Result<Peer> {
        let link = CmLink::connect(host, port, timeout)
            .map_err(|e| Error::new(format!("Couldn't connect to {host}:{port}: {e}")))?;
        Ok(Peer {
            link: Link::Cm(Box::new(link)),
            client: true,
        })
    }

    /// Listens on rdma_cm `port` and takes the first client (`-R`).
    pub fn accept_cm(port: u16) -> Result<Peer> {
        Ok(Peer {
            link: Link::Cm(Box::new(CmLink::accept(port)?)),
            client: false,
        })
    }

    fn new(stream: TcpStream, client: bool) -> Result<Peer> {
        stream
            .set_nodelay(true)
            .map_err(|e| Error::new(format!("setting TCP_NODELAY: {e}")))?;
        Ok(Peer {
            link: Link::Tcp(stream),
            client,
        })
    }

    /// Bounds every following read by `timeout`.
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<()> {
        match &mut self.link {
            Link::Tcp(stream) => stream
                .set_read_timeout(Some(timeout))
                .map_err(|e| Error::new(format!("setting the socket timeout: {e}"))),
            Link::Cm(link) => {
                link.set_timeout(timeout);
                Ok(())
            }
        }
    }

    /// Swaps `mine` for the peer's message of `theirs.len()` bytes.
    pub fn exchange(&mut self, mine: &[u8], theirs: &mut [u8], what: &str) -> Result<()> {
        if self.client {
            self.send(mine, what)?;
            self.recv(theirs, what)
        } else {
            self.recv(theirs, what)?;
            self.send(mine, what)
        }
    }

    fn send(&mut self, msg: &[u8], what: &str) -> Result<()> {
        let stream = match &mut self.link {
            Link::Tcp(stream) => stream,
            Link::Cm(link) => return link.send(msg, what),
        };
        stream
            .write_all(msg)
            .map_err(|e| Error::new(format!("Couldn't send {what} to the peer: {}", io_text(&e))))
    }

    fn recv(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        let stream = match &mut self.link {
            Link::Tcp(stream) => stream,
            Link::Cm(link) => return link.recv(buf, what),
        };
        let timeout = stream.read_timeout().ok().flatten();
        stream.read_exact(buf).map_err(|e| match e.kind() {
            ErrorKind::UnexpectedEof => Error::new(format!(
                "the peer closed the connection while sending {what}"
            )),
            ErrorKind::WouldBlock | ErrorKind::TimedOut => Error::new(format!(
                "timed out after {}s waiting for {what} from the peer",
                timeout.map_or(0, |t| t.as_secs())
            )),
            _ => Error::new(format!(
                "Couldn't read {what} from the peer: {}",
                io_text(&e)
            )),
        })
    }

    /// Swaps QP records; `with_gid` is this side's format, which perftest assumes for both
    /// over TCP (over rdma_cm, records are binary and always carry the GID).
    pub fn hand_shake(&mut self, mine: &Record, with_gid: bool) -> Result<Record> {
        self.swap_records(mine, with_gid, "the QP record")
    }

    /// perftest's barrier between the phases of a test: the QP record swapped once more,
    /// its content unused.
    pub fn sync(&mut self, mine: &Record, with_gid: bool) -> Result<()> {
        self.swap_records(mine, with_gid, "its end-of-run sync message")
            .map(drop)
    }

    fn swap_records(&mut self, mine: &Record, with_gid: bool, what: &str) -> Result<Record> {
        if let Link::Cm(_) = self.link {
            let mut theirs = [0u8; DEST_LEN];
            self.exchange(&mine.encode_dest(), &mut theirs, what)?;
            return Ok(Record::decode_dest(&theirs));
        }
        let msg = mine.encode();
        let mut theirs = vec![0u8; msg.len()];
        debug_assert_eq!(with_gid, msg.len() == RECORD_LEN_GID);
        self.exchange(&msg, &mut theirs, what)?;
        Record::decode(&theirs, with_gid)
    }

    /// Swaps bandwidth results as perftest's `xchg_bw_reports` for peers from 5.33, each of
    /// the [`ReportMsg::encode`] messages in its own exchange.
    pub fn exchange_reports(&mut self, mine: &ReportMsg) -> Result<ReportMsg> {
        let mut theirs = [[0u8; 8]; 5];
        for (t, m) in theirs.iter_mut().zip(mine.encode()) {
            self.exchange(&m, t, "the bandwidth results")?;
        }
        Ok(ReportMsg::decode(&theirs))
    }

    /// perftest's `ctx_close_connection`: one more record exchange, then over TCP `done`
    /// and close.
    pub fn close(&mut self, mine: &Record, with_gid: bool) -> Result<()> {
        self.sync(mine, with_gid)?;
        if let Link::Tcp(_) = self.link {
            self.send(b"done\0", "the final message")?;
        }
        if let Link::Tcp(stream) = &self.link {
            let _ = stream.shutdown(Shutdown::Write);
        }
        Ok(())
    }

    /// Whether the peer has closed the connection (without waiting): for telling a dead
    /// peer from a slow one while waiting for the RDMA traffic.
    pub fn closed(&self) -> bool {
        let stream = match &self.link {
            Link::Tcp(stream) => stream,
            Link::Cm(link) => return link.closed(),
        };
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut b = [0u8; 1];
        let gone = match stream.peek(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != ErrorKind::WouldBlock,
        };
        let _ = stream.set_nonblocking(false);
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_cross_a_socket_in_perftest_byte_order() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            for w in [
                7u64,
                1000,
                2.5f64.to_bits(),
                1.25f64.to_bits(),
                0.5f64.to_bits(),
            ] {
                let mut b = [0u8; 8];
                s.read_exact(&mut b).unwrap();
                got.push(b);
                s.write_all(&w.to_be_bytes()).unwrap();
            }
            got
        });
        let mut peer = Peer::connect("127.0.0.1", port, Duration::from_secs(5)).unwrap();
        peer.set_timeout(Duration::from_secs(5)).unwrap();
        let mine = ReportMsg {
            size: 65536,
            iters: 5000,
            bw_peak: 1.0,
            bw_avg: 2.0,
            msg_rate: 3.0,
        };
        let theirs = peer.exchange_reports(&mine).unwrap();
        assert_eq!(
            theirs,
            ReportMsg {
                size: 7,
                iters: 1000,
                bw_peak: 2.5,
                bw_avg: 1.25,
                msg_rate: 0.5
            }
        );
        let got = server.join().unwrap();
        assert_eq!(got[0], [0, 0, 0, 0, 0, 1, 0, 0]);
        assert_eq!(got[1], 5000u64.to_be_bytes());
        // A double, byte-swapped: the big-endian bytes of its bits.
        assert_eq!(got[3], 2.0f64.to_bits().to_be_bytes());
        assert!(peer.closed());
    }

    #[test]
    fn eof_and_timeouts_are_clear_errors() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(300));
            // Both messages are read, so closing sends a FIN and no reset.
            let mut b = [0u8; 32];
            s.read_exact(&mut b).unwrap();
        });
        let mut peer = Peer::connect("127.0.0.1", port, Duration::from_secs(5)).unwrap();
        peer.set_timeout(Duration::from_millis(100)).unwrap();
        let mut b = [0u8; 16];
        let e = peer.exchange(&[0; 16], &mut b, "the version").unwrap_err();
        assert!(e.to_string().contains("timed out"), "{e}");
        peer.set_timeout(Duration::from_secs(5)).unwrap();
        let e = peer.exchange(&[0; 16], &mut b, "the version").unwrap_err();
        assert!(e.to_string().contains("closed"), "{e}");
        server.join().unwrap();
    }
}
