//! The plain values shared across the crate: GIDs, queue pair types and states, work
//! completion status and opcode, work request opcode, access flags, memory rules,
//! asynchronous events. A leaf: these files import nothing of the crate (only the C types
//! of `rdma-verbs-sys`), so that every other module, [`Error`](crate::Error) first, can
//! build on them.

pub(crate) mod access; // AccessFlags
pub(crate) mod async_event; // AsyncEvent, AsyncEventKind, EventSource, ObjectId
pub(crate) mod gid; // Gid, GidType
pub(crate) mod memory; // MemoryRule, ReregState
pub(crate) mod qp_state; // QpState, PathMigState
pub(crate) mod qp_type; // QpType
pub(crate) mod wc_opcode; // WcOpcode
pub(crate) mod wc_status; // WcStatus
pub(crate) mod wr_opcode; // WrOpcode, SendOps

pub use access::AccessFlags;
pub use async_event::{AsyncEvent, AsyncEventKind, EventSource, ObjectId};
pub use gid::{Gid, GidType};
pub use memory::{MemoryRule, ReregState};
pub use qp_state::{PathMigState, QpState};
pub use qp_type::QpType;
pub use wc_opcode::WcOpcode;
pub use wc_status::WcStatus;
pub use wr_opcode::{SendOps, WrOpcode};
