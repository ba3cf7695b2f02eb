//! QP creation flags (`enum ibv_qp_create_flags`): [`QueuePairBuilder::create_flags`].
//!
//! No device attribute says which flags a provider takes (rxe takes none), so a creation
//! that asked for some and failed is tried again without them (and that QP at once
//! destroyed): if it succeeds, the flags were the refusal, and the error names them.

use bitflags::bitflags;

use super::raw::QpInit;
use super::QueuePairBuilder;
use crate::error::Error;
use crate::ffi;

bitflags! {
    /// Flags a QP is created with (`ibv_qp_init_attr_ex::create_flags`); a provider that
    /// does not take one fails the creation ([`Error::Unsupported`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct QpCreateFlags: u32 {
        /// `IBV_QP_CREATE_BLOCK_SELF_MCAST_LB`: the QP does not receive the multicast
        /// datagrams it sends itself (mckey's `-l`).
        const BLOCK_SELF_MCAST_LB = ffi::ibv_qp_create_flags::IBV_QP_CREATE_BLOCK_SELF_MCAST_LB.0;
        /// `IBV_QP_CREATE_SCATTER_FCS`: a raw packet QP keeps the frame check sequence.
        const SCATTER_FCS = ffi::ibv_qp_create_flags::IBV_QP_CREATE_SCATTER_FCS.0;
        /// `IBV_QP_CREATE_CVLAN_STRIPPING`: a raw packet QP strips the customer VLAN tag.
        const CVLAN_STRIPPING = ffi::ibv_qp_create_flags::IBV_QP_CREATE_CVLAN_STRIPPING.0;
        /// `IBV_QP_CREATE_PCI_WRITE_END_PADDING`: receives pad the last PCI write.
        const PCI_WRITE_END_PADDING = ffi::ibv_qp_create_flags::IBV_QP_CREATE_PCI_WRITE_END_PADDING.0;
    }
}

impl QueuePairBuilder<'_> {
    /// Creates the QP with `flags` (`IBV_QP_INIT_ATTR_CREATE_FLAGS`; none by default).
    pub fn create_flags(mut self, flags: QpCreateFlags) -> Self {
        self.create_flags = flags;
        self
    }
}

/// The error of the failed creation of a QP of `init`, `err` as the provider gave it:
/// [`Error::Unsupported`] when `init` asked for creation flags and a QP of the same
/// attributes without them is created; else `err`.
#[cold]
#[inline(never)]
pub(super) fn creation_error(init: &QpInit<'_>, err: Error) -> Error {
    if init.attr().create_flags == 0 {
        return err;
    }
    if !super::inline_limit::creates(&init.without_create_flags()) {
        return err;
    }
    Error::Unsupported {
        what: "a QP with these creation flags (QueuePairBuilder::create_flags)",
        missing: "support for them by its provider",
    }
}
