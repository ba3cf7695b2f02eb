// Registered memory is not reachable by indexing either: `MemoryRegion` has no `Index`
// (which would hand out a reference into memory the HCA or a peer may write); a byte is
// read by copy with `read_u8`.
use rdma_verbs::MemoryRegion;

fn look(mr: MemoryRegion) {
    let _byte: u8 = mr[0];
}

fn main() {}
