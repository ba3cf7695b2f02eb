//! The text line a test process sends another about its QP: its endpoint and the memory
//! the other may access, as nine numbers separated by spaces.

use std::net::Ipv6Addr;

use ibverbs::{Endpoint, RemoteMemory};

/// The hello line (without a newline) of `ep` and `mem`.
pub fn hello(ep: &Endpoint, mem: &RemoteMemory) -> String {
    format!(
        "{} {} {} {} {} {} {} {} {}",
        ep.qpn, ep.psn, ep.lid, ep.gid, ep.port, ep.mtu, mem.addr, mem.len, mem.rkey
    )
}

/// The endpoint and memory of a [`hello`] line (surrounding whitespace is ignored); panics
/// on a bad line.
pub fn parse_hello(line: &str) -> (Endpoint, RemoteMemory) {
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f.len(), 9, "bad hello {line:?}");
    let num = |i: usize| -> u64 {
        f[i].parse()
            .unwrap_or_else(|_| panic!("bad hello {line:?}"))
    };
    let ep = Endpoint {
        qpn: num(0) as u32,
        psn: num(1) as u32,
        lid: num(2) as u16,
        gid: f[3]
            .parse::<Ipv6Addr>()
            .unwrap_or_else(|_| panic!("bad hello {line:?}")),
        port: num(4) as u8,
        mtu: num(5) as u32,
    };
    let mem = RemoteMemory {
        addr: num(6),
        len: num(7),
        rkey: num(8) as u32,
    };
    (ep, mem)
}
