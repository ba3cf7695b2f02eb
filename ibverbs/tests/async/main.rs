//! The `tokio` feature on a real device (run through `scripts/with-rdma`; rxe0 on `lo` in
//! CI): `cq` (completions awaited, busy-polled or by event, CQs sharing a channel, the
//! completion stream), `events` (the device's async events as a stream), `ops` (operations
//! that own their regions: cancellation, flushes, forgetting), `cm` (with the `cm` feature:
//! rdma_cm as futures on the CM device), `kv` (with `cm`: the `kv` example's server and
//! 64 clients), `stream` (with `cm`: byte streams), `stream_listener` (with `cm`: the
//! listener out of memory or file descriptors). `common` holds
//! the QP pairs they share. A missing device is a failure, not a skip; every test checks at
//! its end that no destroy call failed in a destructor.

#[cfg(feature = "cm")]
mod cm;
#[cfg(feature = "cm")]
mod cm_qp;
mod common;
mod cq;
mod events;
#[cfg(feature = "cm")]
mod kv;
mod ops;
#[cfg(feature = "cm")]
mod stream;
#[cfg(feature = "cm")]
mod stream_listener;
