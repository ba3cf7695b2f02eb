//! Safe, RAII bindings to RDMA verbs (libibverbs from rdma-core): InfiniBand, RoCE and
//! iWARP from Rust without `unsafe`. Registered memory is owned by its region, requests
//! borrow what they point to and are checked against their queue before the provider sees
//! them: safe code cannot reach undefined behaviour ([`docs::soundness`] says how).
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use rdma_verbs::{AccessFlags, ConnectOptions, Context, QpType, SendRequest, WorkCompletion};
//!
//! # fn main() -> rdma_verbs::Result<()> {
//! let ctx = Context::open_first()?;
//! let pd = ctx.alloc_pd()?;
//! let cq = ctx.create_cq(16, None)?;
//! let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
//! let mut mr = pd.alloc_mr(4096, access)?;
//! mr.fill(0);
//! mr.write(0, b"hello")?;
//! // Peers may RDMA-write through the QP only if it grants that too (default: LOCAL_WRITE).
//! let qp = pd.create_qp(QpType::Rc, &cq, &cq).access(access).build()?;
//! let local = qp.endpoint(); // LID, QPN, PSN, GID: send it to the peer, receive the peer's
//! # let remote = local;
//! let qp = qp.connect(&remote, &ConnectOptions::new())?;
//! let sge = [mr.sge(0..5)?];
//! # let peer_memory = mr.remote();
//! qp.post_send(&mut [SendRequest::write(1, &sge, peer_memory).signaled()])?;
//! let mut wc = [WorkCompletion::default(); 16];
//! for done in cq.poll_until(&mut wc, 1, Some(Duration::from_secs(1)))? {
//!     done.ok()?;
//! }
//! # Ok(()) }
//! ```
//! Between two machines each side sends the other its [`Endpoint`] (and [`RemoteMemory`]
//! for RDMA), or rdma_cm connects them by IP address (feature `cm`). A whole client/server
//! to copy from: `ibverbs/examples/rc_pingpong.rs`, which talks to `ibv_rc_pingpong`.
//!
//! # Objects
//! Each type wraps one rdma-core object, made by the call named and destroyed on drop. An
//! object holds a counted reference to what it was made from, so children are destroyed
//! first whatever the order of the drops.
//!
//! | type | C object | made by | keeps alive |
//! |---|---|---|---|
//! | [`Context`] | `ibv_context` | [`Context::open`], [`Context::open_first`] | |
//! | [`ProtectionDomain`] | `ibv_pd` | [`Context::alloc_pd`] | context |
//! | [`MemoryRegion`] | `ibv_mr` and the memory it owns | [`ProtectionDomain::alloc_mr`], [`ProtectionDomain::register`] | PD |
//! | [`CompletionQueue`] | `ibv_cq` | [`Context::create_cq`] | context, channel |
//! | [`PreparedQueuePair`] | `ibv_qp` in INIT: receives, no `post_send` | [`ProtectionDomain::create_qp`] | PD, CQs, SRQ |
//! | [`QueuePair`] | `ibv_qp` ready to send | [`PreparedQueuePair::connect`] (RC, UC), [`PreparedQueuePair::ready`] (UD) | PD, CQs, SRQ |
//! | [`Sge`], [`SendRequest`], [`RecvRequest`] | `ibv_sge`, `ibv_send_wr`, `ibv_recv_wr` | [`MemoryRegion::sge`], their constructors | borrow the region |
//! | [`SharedReceiveQueue`] | `ibv_srq` | [`ProtectionDomain::create_srq`] | PD |
//! | [`AddressHandle`] | `ibv_ah` | [`ProtectionDomain::create_ah`] | PD |
//!
//! [`docs::objects`] has them all (memory sources, windows, domains, extended CQs, the `cm`
//! and `tokio` objects), what to know when connecting and polling, and the errors: every
//! fallible call returns [`Error`], naming the verb and its errno, the state change refused
//! or the limit broken, and a destroy that fails in `Drop` is counted ([`drop_error`]).
//!
//! # Feature flags
//! None is on by default; without any, the crate is the verbs above (Rust 1.77).
//!
//! | feature | what it adds | Rust |
//! |---|---|---|
//! | `cm` | [`cm`](cm/index.html): connection management over librdmacm (resolve, listen, connect, accept, UD, multicast), which it links; [`stream`](stream/index.html): blocking byte streams over one RC connection | 1.77 |
//! | `tokio` | [`tokio`](tokio/index.html): completions, device events and operations that own their buffers as futures; with `cm` also rdma_cm's events and the async byte streams of [`tokio::stream`](tokio/stream/index.html) | 1.85 (tokio 1.54) |
//! | `serde` | `Serialize` and `Deserialize` for [`Endpoint`], [`RemoteMemory`] and [`Gid`], what peers exchange | 1.77 |
//! | `bindgen` | nothing to the API: the raw bindings (`rdma-verbs-sys`'s, and `rdmacm-sys`'s with `cm`) are generated at build time from the installed rdma-core headers with bindgen, which needs libclang, instead of being the checked-in ones of x86_64 and aarch64 Linux | 1.77 |
//!
//! gRPC over these byte streams is the crate
//! [`rdma-verbs-tonic`](https://docs.rs/rdma-verbs-tonic) (Rust 1.88).
//!
//! # Stability
//! The crate follows semantic versioning; before 1.0 a breaking change raises the minor
//! version (0.3 to 0.4) and is listed, with what to write instead, in `CHANGELOG.md`.
//! Covered: every public item's name, path and signature, the types' auto traits (`Send`,
//! `Sync`), what a call checks and the error it gives. Not covered: the `ffi` re-export
//! (rdma-core's C API, whatever the installed headers say), the text of error messages,
//! `Debug` output, and items marked `#[doc(hidden)]`.
//!
//! The inputs are built so that they can grow in a minor version:
//! - **Settings** ([`ConnectOptions`], [`Route`], [`AltPath`], [`RateLimit`],
//!   [`QueuePairBuilder`], [`AddressHandleBuilder`], `cm::ConnParam`, `cm::AddrHints`, `stream::StreamConfig`)
//!   have private fields, a constructor with the defaults (`new`, or the call that starts
//!   the builder) and one chained setter per setting, named after the C field it sets.
//!   A minor version may add a setting, with a default that keeps what code written before
//!   it did.
//! - **Records**, the values a peer sends or a query returns and that go back in
//!   ([`Endpoint`], [`RemoteMemory`], [`AhAttr`], [`GlobalRoute`], `cm::IbAddr`), have
//!   public fields to read and are `#[non_exhaustive]`: made with `new` (the required
//!   values) and `with_*` setters for the rest. A minor version may add a field, which
//!   `new` fills with a default.
//! - **Outputs** (query results, events) are `#[non_exhaustive]` with public fields: a
//!   minor version may add a field. Enums of values the C library may extend are
//!   `#[non_exhaustive]` too: a minor version may add a variant.
//!
//! Outside the crate a struct literal of any of them does not compile (checked by
//! `tests/compile_fail/`), so none of these additions breaks a caller.
//!
//! # Guides
//! - [`docs::objects`]: every object, what it keeps alive, connecting, polling, errors.
//! - [`docs::soundness`]: the soundness model, its rules and tables, what does not compile.
//! - [`docs::migrating`]: from rust-ibverbs 0.9 or sideway 0.4, one program in all three.
//! - [`docs::async_io`]: from tokio's `TcpStream` to the byte streams over RDMA.
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
// docs.rs (nightly, `--cfg docsrs`): badges naming the feature each gated item needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use rdma_verbs_sys as ffi;

mod ah;
#[cfg(feature = "cm")]
#[cfg_attr(docsrs, doc(cfg(feature = "cm")))]
pub mod cm;
mod context;
mod cq;
mod device;
pub mod docs {
    //! Guides: pages of documentation with no items, to read after the crate page.
    //!
    //! - [`objects`]: every object, what it keeps alive, connecting, polling, errors.
    //! - [`soundness`]: the soundness model, its rules and tables, what does not compile.
    //! - [`migrating`]: from rust-ibverbs 0.9 or sideway 0.4, one program in all three.
    //! - [`async_io`]: from tokio's `TcpStream` to the byte streams over RDMA.

    #[doc = include_str!("../docs/objects.md")]
    pub mod objects {}

    #[doc = include_str!("../docs/soundness.md")]
    pub mod soundness {}

    #[doc = include_str!("../docs/migrating.md")]
    pub mod migrating {}

    // Its programs need both features; without them the page says so.
    #[cfg_attr(all(feature = "tokio", feature = "cm"), doc = include_str!("../docs/async.md"))]
    #[cfg_attr(
        not(all(feature = "tokio", feature = "cm")),
        doc = "From tokio's `TcpStream` to the byte streams over RDMA (features `tokio` and `cm`)."
    )]
    pub mod async_io {}
}
pub mod drop_error;
mod error;
mod fd;
mod fork;
mod mr;
mod mw;
mod pd;
mod qp;
mod raw;
mod route;
mod srq;
#[cfg(feature = "cm")]
#[cfg_attr(docsrs, doc(cfg(feature = "cm")))]
pub mod stream;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;
mod types;
mod wake;
mod wr;

pub use ah::attr::{AhAttr, GlobalRoute};
pub use ah::from_wc::{Completion, GRH_LEN};
pub use ah::{AddressHandle, AddressHandleBuilder};
pub use context::device_attr::{
    AtomicCap, CqModerationCaps, DeviceAttr, DeviceCapFlags, OdpCaps, OdpGeneralCaps,
    OdpTransportCaps, PacketPacingCaps, PciAtomicCaps, RawPacketCaps, RssCaps, TmCaps, TsoCaps,
};
pub use context::gid::GidEntry;
pub use context::port::{
    LinkLayer, Mtu, PhysState, PortAttr, PortCapFlags, PortCapFlags2, PortState, Speed, Width,
};
pub use context::Context;
pub use cq::channel::CompletionChannel;
pub use cq::ex::{ExCompletion, ExtendedCq, PollSession, WcFields};
pub use cq::{CompletionQueue, WorkCompletion};
pub use device::{Device, DeviceList, NodeType, Transport};
pub use error::{AhFromWcError, Error, IwarpRule, Result, WrError};
pub use fork::{fork_init, fork_status, ForkStatus};
pub use mr::dmabuf::{DmaBuf, DmaBufRegion};
pub use mr::mapping::{huge_page_size, Mapping, MappingKind};
pub use mr::odp::{Advice, ImplicitOdp};
pub use mr::rereg::Rereg;
pub use mr::{page_size, AlignedBuffer, MemoryRegion, RegistrableMemory};
pub use mw::{MemoryWindow, MwType};
pub use pd::domain::ThreadDomain;
pub use pd::ProtectionDomain;
pub use qp::attr::QpAttributes;
pub use qp::create_flags::QpCreateFlags;
pub use qp::ex::{BatchRequest, WrBatch};
pub use qp::mcast::MULTICAST_QPN;
pub use qp::{
    AltPath, ConnectOptions, PreparedQueuePair, QueuePair, QueuePairBuilder, RateLimit,
    DEFAULT_QKEY,
};
pub use raw::AsRaw;
pub use route::{Endpoint, Route};
pub use srq::{SharedReceiveQueue, SrqAttributes};
pub use types::{
    AccessFlags, AsyncEvent, AsyncEventKind, EventSource, Gid, GidType, MemoryRule, ObjectId,
    PathMigState, QpState, QpType, ReregState, SendOps, WcOpcode, WcStatus, WrOpcode,
};
pub use wr::post_error::PostError;
pub use wr::{DeviceMemory, HostMemory, RecvRequest, RemoteMemory, SendRequest, Sge, SgeMemory};
