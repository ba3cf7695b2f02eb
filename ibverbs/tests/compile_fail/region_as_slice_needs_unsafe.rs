// Registered memory is not reachable as a slice without `unsafe`: the HCA or a peer may
// change it at any time, which a Rust reference forbids, so safe access is by copy
// (`read`, `write`) and `as_slice` is an `unsafe fn` for callers who can prove no DMA runs.
use rdma_verbs::MemoryRegion;

fn look(mr: MemoryRegion) {
    let _bytes: &[u8] = mr.as_slice();
}

fn main() {}
