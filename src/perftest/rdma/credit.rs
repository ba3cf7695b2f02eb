//! The memory of perftest's receive credits, which `ib_send_bw` uses on iWARP: a send that
//! arrives before its receive is posted breaks an iWARP connection (there is no RNR retry),
//! so each receiver tells its sender, by RDMA writes into a small region of the sender's,
//! how many messages it has taken (and posted receives for again), and the sender never
//! runs more than the RX depth ahead of that count.
//!
//! Wire format (perftest's `ctx_alloc_credit`): with credits, the RKey and VAddr of a
//! side's QP records name its credit slot of that QP instead of its buffer (a send test
//! does not use them otherwise); the peer writes the count there as a 4-byte integer in
//! the host's byte order, as perftest does. This side's slots are 8 bytes apart and
//! 8-aligned, so that one aligned word load reads a count whole while the device writes it.

use rdma_verbs::{AccessFlags, MemoryRegion, ProtectionDomain, Sge};

use crate::perftest::types::{Ctx as _, Result};

/// Bytes between two slots (the peer writes the first 4 of each).
const SLOT: usize = 8;
/// Bytes of a count on the wire: what a write of one to the peer's slot carries.
pub const COUNT_LEN: u64 = 4;

/// This side's credit slots, one per QP, where the peer writes its counts, and the
/// outgoing counts, from which this side's writes take their bytes.
pub struct Credits {
    mr: MemoryRegion,
    num_qps: usize,
}

impl Credits {
    /// Registers the slots of `num_qps` QPs in `pd`, writable by the peer.
    pub fn new(pd: &ProtectionDomain, num_qps: usize) -> Result<Credits> {
        let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
        let mr = pd
            .alloc_mr(2 * num_qps * SLOT, access)
            .ctx("Couldn't allocate MR")?;
        Ok(Credits { mr, num_qps })
    }

    /// The remote key the records announce.
    pub fn rkey(&self) -> u32 {
        self.mr.rkey()
    }

    /// The address of QP `q`'s slot, which its record announces.
    pub fn slot_addr(&self, q: usize) -> u64 {
        self.mr.addr() + (q * SLOT) as u64
    }

    /// Sets every slot to 0 before a measurement (perftest clears its counts before each
    /// size).
    pub fn reset(&mut self) -> Result<()> {
        self.mr
            .write(0, &[0; SLOT].repeat(self.num_qps))
            .ctx("clearing the credits")
    }

    /// The count the peer last wrote for QP `q`: receives it has taken on it.
    #[inline]
    pub fn granted(&self, q: usize) -> Result<u32> {
        let mut slot = [0u8; SLOT];
        // An 8-aligned read of 8 bytes is one word load (MemoryRegion::read), so the
        // count is never half old and half new.
        self.mr.read(q * SLOT, &mut slot).ctx("reading a credit")?;
        Ok(u32::from_ne_bytes([slot[0], slot[1], slot[2], slot[3]]))
    }

    /// Stores `count` as QP `q`'s outgoing count; the bytes of the write that sends it
    /// ([`outgoing`](Self::outgoing)).
    pub fn set_outgoing(&mut self, q: usize, count: u32) -> Result<()> {
        self.mr
            .write((self.num_qps + q) * SLOT, &count.to_ne_bytes())
            .ctx("storing a credit")
    }

    /// The local bytes of QP `q`'s outgoing count, for the RDMA write that sends it.
    pub fn outgoing(&self, q: usize) -> Result<Sge<'_>> {
        let at = (self.num_qps + q) * SLOT;
        self.mr
            .sge(at..at + COUNT_LEN as usize)
            .ctx("the credit's entry")
    }
}
