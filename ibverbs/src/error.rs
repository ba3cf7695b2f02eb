//! The error type of the crate.

use std::io;

use crate::types::QpState;
use crate::types::QpType;
use crate::types::WcOpcode;
use crate::types::WcStatus;
use crate::types::WrOpcode;
use crate::types::{Gid, GidType};

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a verbs call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A verb failed; `source` carries the errno.
    #[error("{verb} failed: {source}")]
    Verb {
        /// The C function that failed, such as `ibv_reg_mr`.
        verb: &'static str,
        /// The errno it reported.
        #[source]
        source: io::Error,
    },
    /// `rdma_getaddrinfo` could not resolve the name or service: `code` is its `EAI_*`
    /// code (negative, as `getaddrinfo`'s), `message` glibc's `gai_strerror` text of it.
    #[error("rdma_getaddrinfo failed: {message}")]
    AddrInfo {
        /// The `EAI_*` code, such as `libc::EAI_NONAME`.
        code: i32,
        /// `gai_strerror(code)`.
        message: String,
    },
    /// No device has this name.
    #[error("no RDMA device named {name:?} (devices: {available})")]
    DeviceNotFound {
        /// The name asked for.
        name: String,
        /// The names of the devices there are, comma-separated.
        available: String,
    },
    /// The system has no RDMA device at all.
    #[error("no RDMA devices found")]
    NoDevices,
    /// A number is outside what the device or object allows.
    #[error("{what} {value} is out of range (valid: {min}..={max})")]
    OutOfRange {
        /// What the number is, such as `port` or `GID index`.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The smallest valid value.
        min: u64,
        /// The largest valid value.
        max: u64,
    },
    /// An argument is invalid for another reason.
    #[error("invalid {what}: {reason}")]
    InvalidArgument {
        /// Which argument.
        what: &'static str,
        /// Why it is rejected.
        reason: String,
    },
    /// Two objects that must belong to the same device context or protection domain do not.
    #[error("{what} belongs to a different {owner}")]
    Mismatch {
        /// The object passed in, such as `completion queue`.
        what: &'static str,
        /// What it must share, such as `device context`.
        owner: &'static str,
    },
    /// Posting a list of work requests failed at `index`; the ones before it were posted.
    #[error("{verb} failed at work request {index}: {source}")]
    Post {
        /// `ibv_post_send`, `ibv_post_recv` or `ibv_post_srq_recv`.
        verb: &'static str,
        /// Index in the list of the first request not posted.
        index: usize,
        /// The errno the provider returned.
        #[source]
        source: io::Error,
    },
    /// Posting a list stopped at `index` because the queue was full (the provider's
    /// `ENOMEM`); the ones before it were posted.
    #[error(
        "{verb} failed at work request {index}: {} full (depth {depth})",
        queue_of(verb)
    )]
    QueueFull {
        /// `ibv_post_send`, `ibv_post_recv` or `ibv_post_srq_recv`.
        verb: &'static str,
        /// Index in the list of the first request not posted.
        index: usize,
        /// The queue's granted depth: `max_send_wr`, `max_recv_wr` or the SRQ's `max_wr`.
        depth: u32,
    },
    /// A work request was refused before anything reached the provider: of a list, none
    /// was posted; in a [`WrBatch`](crate::WrBatch), this one was not added.
    #[error("work request {index} refused: {reason}")]
    Request {
        /// Index in the list (or the batch) of the refused request.
        index: usize,
        /// What is wrong with it.
        reason: WrError,
    },
    /// A work completion and the bytes it received make no address handle
    /// ([`Context::init_ah_from_wc`](crate::Context::init_ah_from_wc),
    /// [`ProtectionDomain::create_ah_from_wc`](crate::ProtectionDomain::create_ah_from_wc)):
    /// refused before `ibv_init_ah_from_wc`, or the lookup of the datagram's destination that
    /// failed in it.
    #[error("no address handle from the completion: {reason}")]
    AhFromWc {
        /// What is wrong with the completion or its GRH.
        reason: AhFromWcError,
    },
    /// A work completion carries an error status.
    #[error("work request {wr_id} completed with {status} (vendor error {vendor_err:#x})")]
    Completion {
        /// The `wr_id` of the failed request.
        wr_id: u64,
        /// The status.
        status: WcStatus,
        /// The provider's vendor error code.
        vendor_err: u32,
    },
    /// Waiting for something took longer than allowed.
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(std::time::Duration, &'static str),
    /// A queue pair state transition (`ibv_modify_qp`) failed.
    #[error("ibv_modify_qp to {to} failed: {source}")]
    Transition {
        /// The state the queue pair was to move to.
        to: QpState,
        /// The errno the provider returned.
        #[source]
        source: io::Error,
    },
    /// A size is more than the device supports, checked before the call against the
    /// device's attributes (`ibv_query_device`).
    #[error("{what} {value} is more than the device's {limit} ({max})")]
    DeviceLimit {
        /// What the number is, such as `CQ entries`.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The device attribute that limits it, such as `max_cqe`.
        limit: &'static str,
        /// The attribute's value.
        max: u64,
    },
    /// The device does not report a capability the call needs, checked before the call
    /// (`ibv_query_device_ex`), or, where nothing reports it, refused by the provider with
    /// `EOPNOTSUPP` (`ibv_reg_dmabuf_mr`); or its provider has no function for the verb
    /// (a null pointer, never called: `missing` names it, such as `bind_mw in its
    /// provider`).
    #[error("{what} is not supported: the device does not report {missing}")]
    Unsupported {
        /// What was asked for, such as `on-demand paging (AccessFlags::ON_DEMAND)`.
        what: &'static str,
        /// The capability that is missing, such as `IBV_ODP_SUPPORT in general_odp_caps`.
        missing: &'static str,
    },
    /// Something of the system the call needs is not there, such as free huge pages or
    /// `/dev/udmabuf`.
    #[error("{what} is not available: {reason}")]
    Unavailable {
        /// What was asked for, such as `huge pages (MAP_HUGETLB)`.
        what: &'static str,
        /// What is missing, and where to get it.
        reason: String,
    },
    /// The peer (or its CM, when nobody listens) refused an rdma_cm connect or accept
    /// (`RDMA_CM_EVENT_REJECTED`; feature `cm`). Its [`raw_os_error`](Error::raw_os_error)
    /// is `ECONNREFUSED`.
    #[cfg(feature = "cm")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cm")))]
    #[error("{verb} rejected: {reason_text} (reason {reason})")]
    Rejected {
        /// The call the connection was waiting on, such as `rdma_connect`.
        verb: &'static str,
        /// The reject reason (the IB CM's REJ reason on IB and RoCE; 28: the peer's
        /// `rdma_reject`).
        reason: i32,
        /// What the reason means ([`reject_reason_text`](crate::cm::reject_reason_text)).
        reason_text: &'static str,
        /// What the peer sent with its reject, zero-padded to the REJ message's field on
        /// IB and RoCE.
        private_data: Vec<u8>,
    },
    /// Memory refused because it breaks the rule of its memory source (the page
    /// [`docs::soundness`](crate::docs::soundness) has one per source:
    /// [`MemoryRule`](crate::MemoryRule)), checked
    /// before it is mapped or registered.
    #[error("{rule}: {reason}")]
    MemoryRule {
        /// The rule broken.
        rule: crate::MemoryRule,
        /// How this memory breaks it.
        reason: String,
    },
    /// Refused because the device's transport is iWARP, which forbids it ([`IwarpRule`]),
    /// checked before the provider.
    #[error("refused on an iWARP device: {0}")]
    Iwarp(IwarpRule),
    /// `ibv_rereg_mr` failed; `region` says what became of the memory region.
    #[error("ibv_rereg_mr failed with {code} ({region}): {source}")]
    Rereg {
        /// rdma-core's code: `IBV_REREG_MR_ERR_INPUT`, `_DONT_FORK_NEW`, `_DO_FORK_OLD`,
        /// `_CMD` or `_CMD_AND_DO_FORK_NEW`.
        code: &'static str,
        /// The region's state after the failure.
        region: crate::ReregState,
        /// The errno.
        #[source]
        source: io::Error,
    },
}

/// A rule of iWARP (RDMAP over DDP over TCP, RFC 5040 and 5041) that InfiniBand and RoCE do
/// not have, checked by the crate on a device whose transport is iWARP
/// ([`Transport::Iwarp`](crate::Transport::Iwarp)) before the provider
/// ([`Error::Iwarp`], [`WrError::Iwarp`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IwarpRule {
    /// iWARP has reliable connected queue pairs only: no UD (and so no multicast), no UC.
    #[error("iWARP has reliable connected (RC) queue pairs only, not {qp_type}")]
    RcOnly {
        /// The transport asked for.
        qp_type: QpType,
    },
    /// iWARP has no atomic operations (compare-and-swap, fetch-and-add, atomic write).
    #[error("iWARP has no atomic operations")]
    NoAtomics,
    /// An iWARP connection is a TCP stream that rdma_cm sets up (MPA negotiation included):
    /// a queue pair is connected through a CM id (`CmId::connect` / `CmId::accept`, feature
    /// `cm`), never by moving it to RTR and RTS with `ibv_modify_qp`.
    #[error(
        "an iWARP queue pair is connected only through rdma_cm (its connection is a TCP \
         stream), not by ibv_modify_qp to RTR and RTS"
    )]
    ConnectThroughRdmaCm,
    /// An RDMA read's response is written into its sink (the read's local entries) as an
    /// RDMA write of the peer's: iWARP needs the sink's region registered with
    /// [`AccessFlags::REMOTE_WRITE`](crate::AccessFlags::REMOTE_WRITE).
    #[error(
        "an RDMA read's sink on iWARP is written as by a remote write: its region needs \
         AccessFlags::REMOTE_WRITE"
    )]
    ReadSinkNeedsRemoteWrite,
}

/// What is wrong with a work request that the crate refuses to post ([`Error::Request`]):
/// each names the queue's limit it broke, as granted when the queue was created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WrError {
    /// The operation does not exist on this transport (UC has no read or atomics, UD has
    /// only sends).
    #[error("{opcode} is not an operation of a {qp_type} queue pair")]
    OpcodeNotSupported {
        /// The request's operation.
        opcode: WrOpcode,
        /// The queue pair's transport.
        qp_type: QpType,
    },
    /// The operation breaks a rule of iWARP: an atomic ([`IwarpRule::NoAtomics`]), or a read
    /// into a region without remote write ([`IwarpRule::ReadSinkNeedsRemoteWrite`]).
    #[error("{opcode} is refused on an iWARP device: {rule}")]
    Iwarp {
        /// The request's operation.
        opcode: WrOpcode,
        /// The rule it breaks.
        rule: IwarpRule,
    },
    /// The operation is posted only through a [`WrBatch`](crate::WrBatch) (`ibv_wr_*`),
    /// not `ibv_post_send`.
    #[error("{opcode} is posted only through a WrBatch (the ibv_wr_* API)")]
    BatchOnly {
        /// The request's operation.
        opcode: WrOpcode,
    },
    /// The remote address of an 8-byte atomic is not 8-byte aligned.
    #[error("{opcode} at {addr:#x}: the remote address is not 8-byte aligned")]
    Misaligned {
        /// The request's operation.
        opcode: WrOpcode,
        /// The remote address.
        addr: u64,
    },
    /// A [`WrBatch`](crate::WrBatch) holds at most as many requests as its queue pair's
    /// send queue (the granted `max_send_wr`): the provider would fail the whole batch when
    /// it is posted (`ibv_wr_complete`, `ENOSPC` on rxe). The push past it is refused.
    #[error("a batch holds at most the send queue's {depth} requests (max_send_wr)")]
    BatchFull {
        /// The send queue's granted depth, `max_send_wr`.
        depth: u32,
    },
    /// The queue pair's extended send API was not created for the operation.
    #[error("{opcode} is not among the queue pair's send_ops")]
    OpcodeNotEnabled {
        /// The request's operation.
        opcode: WrOpcode,
    },
    /// The operation has no `ibv_wr_*` call that a [`WrBatch`](crate::WrBatch) makes (a
    /// memory window bind): post it with [`QueuePair::post_send`](crate::QueuePair::post_send).
    #[error("{opcode} cannot be posted through a WrBatch; post it with post_send")]
    NotInBatch {
        /// The request's operation.
        opcode: WrOpcode,
    },
    /// Inline data from entries of device memory ([`DeviceMemory`](crate::DeviceMemory), a
    /// dma-buf region): the provider would copy it from a device address with the CPU.
    #[error("{opcode} cannot carry inline data from device memory (a dma-buf region)")]
    InlineFromDeviceMemory {
        /// The request's operation.
        opcode: WrOpcode,
    },
    /// An atomic's result entry is not the 8 bytes the atomic returns.
    #[error("{opcode} needs a result entry of exactly {required} bytes, not {len}")]
    AtomicResultSize {
        /// The request's operation.
        opcode: WrOpcode,
        /// The length of its result entry.
        len: u64,
        /// 8.
        required: u64,
    },
    /// More scatter/gather entries than the queue takes.
    #[error("{requested} scatter/gather entries, more than the queue's {max}")]
    TooManySge {
        /// Entries in the request.
        requested: u32,
        /// The queue's `max_send_sge` / `max_recv_sge` / SRQ `max_sge`.
        max: u32,
    },
    /// Only sends and RDMA writes can carry inline data.
    #[error("{opcode} cannot carry inline data")]
    InlineNotSupported {
        /// The request's operation.
        opcode: WrOpcode,
    },
    /// More inline data than the queue pair takes.
    #[error("{total} bytes of inline data, more than the queue pair's {max}")]
    InlineTooLarge {
        /// The sum of the entries' lengths.
        total: u64,
        /// The queue pair's `max_inline_data`.
        max: u32,
    },
    /// A message longer than a message may be (2^31 bytes).
    #[error("a message of {total} bytes, more than {max}")]
    MessageTooLong {
        /// The sum of the entries' lengths.
        total: u64,
        /// 2^31.
        max: u64,
    },
    /// A send on a UD queue pair without [`SendRequest::ud`](crate::SendRequest::ud).
    #[error("a send on a UD queue pair needs an address handle (SendRequest::ud)")]
    MissingAddressHandle,
    /// The address handle belongs to another protection domain than the queue pair.
    #[error("the address handle belongs to a different protection domain")]
    ForeignAddressHandle,
    /// An entry is of a region of another protection domain than the queue's (a queue of a
    /// parent domain takes the regions of the PD it was made from): the device would fail
    /// the request, after it was posted. Checked for the regions the crate registered, on
    /// the queue's device; an entry made by [`Sge::from_raw`](crate::Sge::from_raw) of a key
    /// the crate did not register is not.
    #[error(
        "entry {entry} (lkey {lkey:#x}) is of a region of protection domain {region_pd}, not \
         of the queue's protection domain {queue_pd}"
    )]
    ForeignRegion {
        /// The entry's index in the request's list.
        entry: u32,
        /// Its local key.
        lkey: u32,
        /// The kernel's handle of the region's PD (`ibv_pd::handle`; of another context, the
        /// same number may name another PD).
        region_pd: u32,
        /// The kernel's handle of the queue's PD.
        queue_pd: u32,
    },
    /// A receive posted to a queue pair that takes its receives from a shared receive
    /// queue.
    #[error("the queue pair takes its receives from a shared receive queue")]
    ReceivesFromSrq,
}

/// Why a work completion and the bytes it received make no address handle
/// ([`Error::AhFromWc`]). The GRH is written by the datagram's sender (or anything on the path
/// to this port), so each of these is an input to report, never a panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AhFromWcError {
    /// The completion is not of a receive (`IBV_WC_RECV`, `IBV_WC_RECV_RDMA_WITH_IMM`): only
    /// a receive has a sender to answer.
    #[error("the completion is {opcode:?}, not a receive")]
    NotReceive {
        /// The completion's operation.
        opcode: WcOpcode,
    },
    /// The completion has no GRH (`IBV_WC_GRH` not set) on a RoCE port, where every datagram
    /// carries one and an address handle needs one. (On InfiniBand a datagram from the same
    /// subnet may come without, and is answered by its LID.)
    #[error(
        "the completion has no GRH (IBV_WC_GRH), which every datagram received on a RoCE \
         port (port {port}) carries"
    )]
    NoGrh {
        /// The port given.
        port: u8,
    },
    /// Fewer bytes than the GRH: the receive buffer is handed in from its start, GRH
    /// included.
    #[error("{len} received bytes, fewer than the {required}-byte GRH they start with")]
    ShortBuffer {
        /// The length of the slice given.
        len: usize,
        /// 40.
        required: usize,
    },
    /// The first 40 bytes hold neither a GRH / IPv6 header (IP version 6 in bytes 0..4) nor
    /// an IPv4 header in their last 20 bytes (version 4 in byte 20).
    #[error(
        "the GRH's IP version is {version}, not 6, and its last 20 bytes hold no IPv4 header \
         (version {ipv4_version}, not 4)"
    )]
    UnknownHeader {
        /// The version in the top 4 bits of byte 0.
        version: u8,
        /// The version in the top 4 bits of byte 20.
        ipv4_version: u8,
    },
    /// A GRH / IPv6 header whose next header is neither the InfiniBand transport header
    /// (0x1B: InfiniBand, RoCE v1) nor UDP (17: RoCE v2).
    #[error(
        "the GRH's next header is {next_header:#04x}, neither 0x1b (an InfiniBand transport \
         header: InfiniBand, RoCE v1) nor 0x11 (UDP: RoCE v2)"
    )]
    UnknownNextHeader {
        /// Byte 6 of the GRH.
        next_header: u8,
    },
    /// The datagram was sent to a multicast group: no GID of the port is its destination,
    /// so none says where to answer from. Answer from a GID of your choosing
    /// ([`ProtectionDomain::create_ah`](crate::ProtectionDomain::create_ah)).
    #[error(
        "the datagram went to multicast group {group}, which is no GID of the port to answer from"
    )]
    MulticastDestination {
        /// The group: the GRH's destination GID, or the IPv4-mapped destination address.
        group: Gid,
    },
    /// The datagram's destination is no GID of the port, of the type its header says (a
    /// GRH with next header 0x1B: InfiniBand or RoCE v1; UDP or IPv4: RoCE v2): it was not
    /// addressed to this port (or was received on another port than the one given).
    #[error("the datagram's destination {gid} is no {gid_type} GID of port {port}")]
    GidNotFound {
        /// The destination GID (IPv4-mapped for RoCE v2 over IPv4).
        gid: Gid,
        /// The type the GID table entry would have to have.
        gid_type: GidType,
        /// The port searched.
        port: u8,
    },
    /// An address on InfiniBand needs a field of the completion that the extended CQ was not
    /// created with.
    #[error(
        "the extended CQ's completions lack {field}, which an address on InfiniBand needs \
         (WcFields::STANDARD has it)"
    )]
    MissingField {
        /// The field, such as `WcFields::SLID`.
        field: &'static str,
    },
}

impl Error {
    /// [`Error::OutOfRange`] for a setting (`what`) whose range is `0..=max`, if `value` is
    /// past it: the one check of such a setting before the provider sees it.
    pub(crate) fn at_most(what: &'static str, value: u64, max: u64) -> Result<(), Error> {
        if value > max {
            return Err(Error::OutOfRange {
                what,
                value,
                min: 0,
                max,
            });
        }
        Ok(())
    }

    /// A [`Error::Verb`] from the calling thread's `errno`.
    pub(crate) fn last(verb: &'static str) -> Self {
        Error::Verb {
            verb,
            source: io::Error::last_os_error(),
        }
    }

    /// A [`Error::Verb`] from an errno value returned by the verb.
    pub(crate) fn errno(verb: &'static str, errno: i32) -> Self {
        Error::Verb {
            verb,
            source: io::Error::from_raw_os_error(errno),
        }
    }

    /// This error, or [`Error::Unsupported`] of `what` and `missing` if it is `EOPNOTSUPP`:
    /// what a verb returns where the provider has no function for it (the `rdma-verbs-sys`
    /// ports and libibverbs's stubs) or refuses the operation.
    #[cold]
    pub(crate) fn or_unsupported(self, what: &'static str, missing: &'static str) -> Self {
        if self.raw_os_error() == Some(libc::EOPNOTSUPP) {
            Error::Unsupported { what, missing }
        } else {
            self
        }
    }

    /// The errno behind a failed verb or post, if that is what this is.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Verb { source, .. }
            | Error::Post { source, .. }
            | Error::Transition { source, .. }
            | Error::Rereg { source, .. } => source.raw_os_error(),
            Error::QueueFull { .. } => Some(libc::ENOMEM),
            #[cfg(feature = "cm")]
            Error::Rejected { .. } => Some(libc::ECONNREFUSED),
            _ => None,
        }
    }
}

/// The error as an [`io::Error`] (for byte streams and other I/O traits): of the kind of
/// its errno where it has one ([`Error::raw_os_error`]), `InvalidInput` for a refused
/// argument, `Unsupported`, `NotFound` for a missing device, else `Other`; the error
/// itself is its source.
impl From<Error> for io::Error {
    fn from(error: Error) -> io::Error {
        let kind = match (&error, error.raw_os_error()) {
            (_, Some(errno)) => io::Error::from_raw_os_error(errno).kind(),
            (
                Error::InvalidArgument { .. }
                | Error::OutOfRange { .. }
                | Error::Mismatch { .. }
                | Error::Request { .. },
                None,
            ) => io::ErrorKind::InvalidInput,
            (Error::Unsupported { .. }, None) => io::ErrorKind::Unsupported,
            (Error::NoDevices | Error::DeviceNotFound { .. }, None) => io::ErrorKind::NotFound,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, error)
    }
}

/// The queue a post `verb` fills.
fn queue_of(verb: &str) -> &'static str {
    match verb {
        "ibv_post_send" => "send queue",
        "ibv_post_srq_recv" => "shared receive queue",
        _ => "receive queue",
    }
}

/// Maps a verb's return code (0 or an errno) to a result.
#[inline]
pub(crate) fn check(verb: &'static str, rc: i32) -> Result<()> {
    match rc {
        0 => Ok(()),
        // Some providers return -1 and set errno instead of returning it.
        rc if rc < 0 => Err(Error::last(verb)),
        rc => Err(Error::errno(verb, rc)),
    }
}

/// Maps a pointer returned by a verb (null on failure, errno set) to a result.
pub(crate) fn check_ptr<T>(verb: &'static str, ptr: *mut T) -> Result<std::ptr::NonNull<T>> {
    std::ptr::NonNull::new(ptr).ok_or_else(|| Error::last(verb))
}
