//! TCP and rdma_cm ports of the programs the tests run.

use std::net::{SocketAddr, TcpListener};
use std::process::Command;

/// A TCP port nobody listens on right now (the kernel's pick for a listener on `0.0.0.0`).
pub fn free_port() -> u16 {
    TcpListener::bind("0.0.0.0:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free TCP port")
}

/// Whether a socket listens on TCP `port`, IPv4 or IPv6 (`/proc/net/tcp` and
/// `/proc/net/tcp6`, state `0A`).
pub fn listening(port: u16) -> bool {
    let hex = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && cols[1].ends_with(&hex) && cols[3] == "0A"
            })
        })
    })
}

/// Whether an rdma_cm id listens on `addr` (IP and port), as `rdma resource show cm_id`
/// (iproute2, `/usr/bin/rdma`) lists them: rdma_cm ports are not TCP ports, so
/// [`listening`] does not see them.
pub fn cm_listening(addr: SocketAddr) -> bool {
    let out = Command::new("/usr/bin/rdma")
        .args(["resource", "show", "cm_id"])
        .output()
        .expect("running /usr/bin/rdma (iproute2)");
    let want = format!("src-addr {addr} ");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.contains(" state LISTEN ") && format!("{l} ").contains(&want))
}
