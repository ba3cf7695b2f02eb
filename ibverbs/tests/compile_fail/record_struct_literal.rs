// As `settings_struct_literal`, for records (the values a peer sends, with public fields to
// read): they are `#[non_exhaustive]`, so outside the crate they are made by `new`, and a
// field added in a minor version breaks no caller.
use rdma_verbs::{Endpoint, Gid, RemoteMemory};

fn main() {
    let _peer = Endpoint {
        qpn: 1,
        psn: 2,
        lid: 0,
        gid: Gid::ZERO,
    };
    let _memory = RemoteMemory {
        addr: 0,
        len: 8,
        rkey: 1,
    };
}
