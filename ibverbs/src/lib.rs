//! Safe bindings to RDMA verbs.
pub use ibverbs_sys as ffi;
