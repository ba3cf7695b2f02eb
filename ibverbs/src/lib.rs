//! Safe bindings to RDMA verbs.
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]

pub use ibverbs_sys as ffi;

mod ah;
mod channel;
mod context;
mod cq;
mod device;
pub mod drop_error;
mod error;
mod mr;
mod mw;
mod pd;
mod qp;
mod srq;
mod wr;

pub use ah::AddressHandle;
pub use channel::CompletionChannel;
pub use context::Context;
pub use cq::{CompletionQueue, WcOpcode, WcStatus, WorkCompletion};
pub use device::{Device, DeviceList, NodeType, Transport};
pub use error::{Error, Result};
pub use mr::{AccessFlags, AlignedBuffer, MemoryRegion, RegistrableMemory};
pub use mw::{MemoryWindow, MwType};
pub use pd::ProtectionDomain;
pub use qp::{
    ConnectOptions, Endpoint, PreparedQueuePair, QpState, QpType, QueuePair, QueuePairBuilder,
    Route, DEFAULT_QKEY,
};
pub use srq::SharedReceiveQueue;
pub use wr::{RecvRequest, RemoteMemory, SendRequest, Sge};
