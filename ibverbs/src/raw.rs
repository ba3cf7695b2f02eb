//! The escape hatch: the C object behind each verbs object, for what the crate does not wrap.

use std::ptr::NonNull;

use crate::ffi;

/// A verbs object's C object (`ibv_qp`, `ibv_cq`, ...), for calling libibverbs (through
/// [`ffi`]) or librdmacm where the crate has no wrapper: the one way to reach a raw handle.
///
/// The pointer is valid while `self` lives; using it is `unsafe`, and the caller then keeps
/// the crate's rules by hand. Above all, never destroy, deallocate or deregister the object
/// (the crate does it once, on drop), and never take an event the crate acknowledges: the
/// completion events of a channel's CQs (`ibv_get_cq_event`, a read of the channel's fd),
/// the context's asynchronous events, rdma_cm events; an event taken so is never
/// acknowledged and the object's drop then waits for it forever. On a CM id, never change
/// its `context` nor join a multicast group through librdmacm: the crate reads both back
/// from the id's events (a join's context as its own record of the join). Posting on a
/// queue pair outside the crate, or moving it through states, leaves the checks of the
/// crate's own posts (its view of the QP's state and limits) behind: hence
/// `QueuePair::modify` is `unsafe` too.
///
/// ```no_run
/// # fn f(qp: &rdma_verbs::QueuePair) {
/// use rdma_verbs::{ffi, AsRaw};
/// let raw = qp.as_raw();
/// // SAFETY: the QP lives while `qp` does; ibv_query_qp only reads it.
/// let mut attr = unsafe { std::mem::zeroed::<ffi::ibv_qp_attr>() };
/// let mut init = unsafe { std::mem::zeroed::<ffi::ibv_qp_init_attr>() };
/// let rc = unsafe {
///     ffi::ibv_query_qp(raw.as_ptr(), &mut attr, ffi::ibv_qp_attr_mask::IBV_QP_STATE.0 as i32, &mut init)
/// };
/// # }
/// ```
pub trait AsRaw {
    /// The C type.
    type Raw;
    /// The C object, valid while `self` lives.
    fn as_raw(&self) -> NonNull<Self::Raw>;
}

/// Implements [`AsRaw`] for each type through its `ptr()`, the pointer the crate itself
/// uses: every one comes from a creation that was checked for null.
macro_rules! as_raw {
    ($($(#[$cfg:meta])* $ty:ty => $raw:ty),* $(,)?) => {$(
        $(#[$cfg])*
        impl AsRaw for $ty {
            type Raw = $raw;
            #[inline]
            fn as_raw(&self) -> NonNull<$raw> {
                // SAFETY: `ptr` is the object's pointer, which its constructor checked to be
                // non-null, and which stays set while `self` lives.
                unsafe { NonNull::new_unchecked(self.ptr()) }
            }
        }
    )*};
}

as_raw! {
    crate::Device<'_> => ffi::ibv_device,
    crate::Context => ffi::ibv_context,
    crate::ProtectionDomain => ffi::ibv_pd,
    crate::ThreadDomain => ffi::ibv_td,
    crate::CompletionChannel => ffi::ibv_comp_channel,
    crate::CompletionQueue => ffi::ibv_cq,
    crate::ExtendedCq => ffi::ibv_cq_ex,
    crate::PreparedQueuePair => ffi::ibv_qp,
    crate::QueuePair => ffi::ibv_qp,
    crate::SharedReceiveQueue => ffi::ibv_srq,
    crate::DmaBufRegion => ffi::ibv_mr,
    crate::MemoryWindow => ffi::ibv_mw,
    crate::AddressHandle => ffi::ibv_ah,
    #[cfg(feature = "cm")]
    crate::cm::CmId => crate::cm::ffi::rdma_cm_id,
    #[cfg(feature = "cm")]
    crate::cm::EventChannel => crate::cm::ffi::rdma_event_channel,
}

impl<B: crate::RegistrableMemory> AsRaw for crate::MemoryRegion<B> {
    type Raw = ffi::ibv_mr;
    #[inline]
    fn as_raw(&self) -> NonNull<ffi::ibv_mr> {
        // SAFETY: as in the macro: the region's pointer was checked non-null at registration.
        unsafe { NonNull::new_unchecked(self.ptr()) }
    }
}
