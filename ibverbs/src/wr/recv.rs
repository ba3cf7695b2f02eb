//! Receive requests (`struct ibv_recv_wr`).

use std::marker::PhantomData;
use std::ptr;

use crate::ffi;
use crate::wr::limits::recv_need;
use crate::wr::{Linked, SgList, Sge, SgeMemory};

/// A receive queue work request (`struct ibv_recv_wr`).
#[repr(C)]
pub struct RecvRequest<'a> {
    /// First, so that a pointer to the request is one to its `ibv_recv_wr`. Its list is
    /// read back by [`RecvRequest::sg`].
    pub(super) raw: ffi::ibv_recv_wr,
    /// What the request needs of a queue ([`limits`](crate::wr::limits)).
    need: u64,
    _borrows: PhantomData<&'a ()>,
}

impl<'a> RecvRequest<'a> {
    /// A receive into the SGEs.
    #[inline]
    pub fn new<M: SgeMemory>(wr_id: u64, sges: &'a [Sge<'a, M>]) -> Self {
        let sg = SgList::new(sges);
        let raw = ffi::ibv_recv_wr {
            wr_id,
            next: ptr::null_mut(),
            sg_list: sg.as_ptr(),
            num_sge: sg.len() as i32,
        };
        RecvRequest {
            need: recv_need(sg),
            raw,
            _borrows: PhantomData,
        }
    }

    /// The caller's identifier, returned in the completion.
    pub fn wr_id(&self) -> u64 {
        self.raw.wr_id
    }

    /// The raw request. Its `next` is what the last post of it wrote (posting sets it).
    pub fn as_raw(&self) -> &ffi::ibv_recv_wr {
        &self.raw
    }
}

/// A copy with the same `wr_id` and scatter/gather list (the list is borrowed, not copied),
/// not linked to any other request.
impl Clone for RecvRequest<'_> {
    fn clone(&self) -> Self {
        RecvRequest {
            raw: ffi::ibv_recv_wr {
                next: ptr::null_mut(),
                ..self.raw
            },
            need: self.need,
            _borrows: PhantomData,
        }
    }
}

impl Linked for RecvRequest<'_> {
    type Raw = ffi::ibv_recv_wr;
    #[inline(always)]
    fn need(&self) -> u64 {
        self.need
    }
    #[inline(always)]
    fn raw(&mut self) -> *mut ffi::ibv_recv_wr {
        &mut self.raw
    }
    #[inline(always)]
    fn set_next(&mut self, next: *mut ffi::ibv_recv_wr) {
        self.raw.next = next;
    }
}
