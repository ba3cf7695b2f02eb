//! The text line a test process sends another about its QP: its endpoint and the memory
//! the other may access, as seven fields separated by spaces; and the hello of a byte
//! stream's connect.

use rdma_verbs::{Endpoint, Gid, RemoteMemory};

/// The hello line (without a newline) of `ep` and `mem`.
pub fn hello(ep: &Endpoint, mem: &RemoteMemory) -> String {
    format!(
        "{} {} {} {} {} {} {}",
        ep.qpn, ep.psn, ep.lid, ep.gid, mem.addr, mem.len, mem.rkey
    )
}

/// The endpoint and memory of a [`hello`] line (surrounding whitespace is ignored); panics
/// on a bad line.
pub fn parse_hello(line: &str) -> (Endpoint, RemoteMemory) {
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f.len(), 7, "bad hello {line:?}");
    let num = |i: usize| -> u64 {
        f[i].parse()
            .unwrap_or_else(|_| panic!("bad hello {line:?}"))
    };
    let ep = Endpoint::new(
        num(0) as u32,
        num(1) as u32,
        num(2) as u16,
        f[3].parse::<Gid>()
            .unwrap_or_else(|_| panic!("bad hello {line:?}")),
    );
    let mem = RemoteMemory::new(num(4), num(5), num(6) as u32);
    (ep, mem)
}

/// The hello of `rdma_verbs`'s byte streams (the private data of a connect), as a
/// hand-made peer sends it: "RVS\x01", then its receive ring: `slot` bytes per slot, `data`
/// data and `ctrl` control slots, little-endian.
pub fn stream_hello(slot: u32, data: u16, ctrl: u16) -> Vec<u8> {
    let mut hello = b"RVS\x01".to_vec();
    hello.extend_from_slice(&slot.to_le_bytes());
    hello.extend_from_slice(&data.to_le_bytes());
    hello.extend_from_slice(&ctrl.to_le_bytes());
    hello
}
