// Borrowed memory cannot be registered: `&mut [u8]` is not `RegistrableMemory`, because a
// leaked region (`mem::forget`) would never be deregistered and would outlive the borrow,
// leaving the HCA and any peer with its rkey writing into memory Rust has reused.
use rdma_verbs::{AccessFlags, ProtectionDomain};

fn register(pd: ProtectionDomain) {
    let mut buf = [0u8; 64];
    let _mr = pd.register(&mut buf[..], AccessFlags::LOCAL_WRITE);
}

fn main() {}
