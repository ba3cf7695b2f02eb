//! Asynchronous events: `struct ibv_async_event` and `enum ibv_event_type`, as the
//! context reads them (`ibv_get_async_event`, in `context/`). Their descriptions
//! (`ibv_event_type_str`) are the context's too.

use crate::ffi;

/// The kind of an asynchronous event (`enum ibv_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AsyncEventKind {
    /// `IBV_EVENT_CQ_ERR`: a CQ overran.
    CqErr,
    /// `IBV_EVENT_QP_FATAL`: a QP hit a catastrophic error.
    QpFatal,
    /// `IBV_EVENT_QP_REQ_ERR`: a QP received an invalid request.
    QpReqErr,
    /// `IBV_EVENT_QP_ACCESS_ERR`: a QP hit a local access violation.
    QpAccessErr,
    /// `IBV_EVENT_COMM_EST`: a QP in RTR received its first packet.
    CommEst,
    /// `IBV_EVENT_SQ_DRAINED`: a QP's send queue drained in SQD.
    SqDrained,
    /// `IBV_EVENT_PATH_MIG`: a QP migrated to its alternate path, by itself or when asked
    /// ([`QueuePair::migrate_path`](crate::QueuePair::migrate_path)). The source is
    /// [`EventSource::Qp`] of that QP (see
    /// [`QueuePair::load_alt_path`](crate::QueuePair::load_alt_path)). rxe never reports
    /// it: its ports are RoCE, where no alternate path can be loaded.
    PathMig,
    /// `IBV_EVENT_PATH_MIG_ERR`: a QP failed to migrate to its alternate path. The source
    /// is [`EventSource::Qp`] of that QP. rxe never reports it.
    PathMigErr,
    /// `IBV_EVENT_DEVICE_FATAL`: the device failed.
    DeviceFatal,
    /// `IBV_EVENT_PORT_ACTIVE`: a port became active.
    PortActive,
    /// `IBV_EVENT_PORT_ERR`: a port left the active state.
    PortErr,
    /// `IBV_EVENT_LID_CHANGE`: a port's LID changed.
    LidChange,
    /// `IBV_EVENT_PKEY_CHANGE`: a port's P_Key table changed.
    PkeyChange,
    /// `IBV_EVENT_SM_CHANGE`: a port's subnet manager changed.
    SmChange,
    /// `IBV_EVENT_SRQ_ERR`: an SRQ failed.
    SrqErr,
    /// `IBV_EVENT_SRQ_LIMIT_REACHED`: an SRQ fell below its limit.
    SrqLimitReached,
    /// `IBV_EVENT_QP_LAST_WQE_REACHED`: a QP on an SRQ will complete no more receives.
    QpLastWqeReached,
    /// `IBV_EVENT_CLIENT_REREGISTER`: the subnet manager asks to re-register.
    ClientReregister,
    /// `IBV_EVENT_GID_CHANGE`: a port's GID table changed.
    GidChange,
    /// `IBV_EVENT_WQ_FATAL`: a work queue failed.
    WqFatal,
    /// A value libibverbs does not name.
    Unknown(u32),
}

impl AsyncEventKind {
    /// Converts the C value.
    pub fn from_raw(raw: ffi::ibv_event_type) -> Self {
        use ffi::ibv_event_type as E;
        match raw {
            E::IBV_EVENT_CQ_ERR => AsyncEventKind::CqErr,
            E::IBV_EVENT_QP_FATAL => AsyncEventKind::QpFatal,
            E::IBV_EVENT_QP_REQ_ERR => AsyncEventKind::QpReqErr,
            E::IBV_EVENT_QP_ACCESS_ERR => AsyncEventKind::QpAccessErr,
            E::IBV_EVENT_COMM_EST => AsyncEventKind::CommEst,
            E::IBV_EVENT_SQ_DRAINED => AsyncEventKind::SqDrained,
            E::IBV_EVENT_PATH_MIG => AsyncEventKind::PathMig,
            E::IBV_EVENT_PATH_MIG_ERR => AsyncEventKind::PathMigErr,
            E::IBV_EVENT_DEVICE_FATAL => AsyncEventKind::DeviceFatal,
            E::IBV_EVENT_PORT_ACTIVE => AsyncEventKind::PortActive,
            E::IBV_EVENT_PORT_ERR => AsyncEventKind::PortErr,
            E::IBV_EVENT_LID_CHANGE => AsyncEventKind::LidChange,
            E::IBV_EVENT_PKEY_CHANGE => AsyncEventKind::PkeyChange,
            E::IBV_EVENT_SM_CHANGE => AsyncEventKind::SmChange,
            E::IBV_EVENT_SRQ_ERR => AsyncEventKind::SrqErr,
            E::IBV_EVENT_SRQ_LIMIT_REACHED => AsyncEventKind::SrqLimitReached,
            E::IBV_EVENT_QP_LAST_WQE_REACHED => AsyncEventKind::QpLastWqeReached,
            E::IBV_EVENT_CLIENT_REREGISTER => AsyncEventKind::ClientReregister,
            E::IBV_EVENT_GID_CHANGE => AsyncEventKind::GidChange,
            E::IBV_EVENT_WQ_FATAL => AsyncEventKind::WqFatal,
            other => AsyncEventKind::Unknown(other.0),
        }
    }

    /// The C value.
    pub fn raw(self) -> ffi::ibv_event_type {
        use ffi::ibv_event_type as E;
        match self {
            AsyncEventKind::CqErr => E::IBV_EVENT_CQ_ERR,
            AsyncEventKind::QpFatal => E::IBV_EVENT_QP_FATAL,
            AsyncEventKind::QpReqErr => E::IBV_EVENT_QP_REQ_ERR,
            AsyncEventKind::QpAccessErr => E::IBV_EVENT_QP_ACCESS_ERR,
            AsyncEventKind::CommEst => E::IBV_EVENT_COMM_EST,
            AsyncEventKind::SqDrained => E::IBV_EVENT_SQ_DRAINED,
            AsyncEventKind::PathMig => E::IBV_EVENT_PATH_MIG,
            AsyncEventKind::PathMigErr => E::IBV_EVENT_PATH_MIG_ERR,
            AsyncEventKind::DeviceFatal => E::IBV_EVENT_DEVICE_FATAL,
            AsyncEventKind::PortActive => E::IBV_EVENT_PORT_ACTIVE,
            AsyncEventKind::PortErr => E::IBV_EVENT_PORT_ERR,
            AsyncEventKind::LidChange => E::IBV_EVENT_LID_CHANGE,
            AsyncEventKind::PkeyChange => E::IBV_EVENT_PKEY_CHANGE,
            AsyncEventKind::SmChange => E::IBV_EVENT_SM_CHANGE,
            AsyncEventKind::SrqErr => E::IBV_EVENT_SRQ_ERR,
            AsyncEventKind::SrqLimitReached => E::IBV_EVENT_SRQ_LIMIT_REACHED,
            AsyncEventKind::QpLastWqeReached => E::IBV_EVENT_QP_LAST_WQE_REACHED,
            AsyncEventKind::ClientReregister => E::IBV_EVENT_CLIENT_REREGISTER,
            AsyncEventKind::GidChange => E::IBV_EVENT_GID_CHANGE,
            AsyncEventKind::WqFatal => E::IBV_EVENT_WQ_FATAL,
            AsyncEventKind::Unknown(raw) => ffi::ibv_event_type(raw),
        }
    }
}

/// An opaque identifier of the QP, CQ, SRQ or WQ an event is about: the address of its C
/// object, equal for events about the same object while it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjectId(pub(crate) usize);

impl ObjectId {
    /// The address of the C object.
    pub fn addr(self) -> usize {
        self.0
    }
}

/// What an asynchronous event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventSource {
    /// The whole device (`IBV_EVENT_DEVICE_FATAL`, unknown kinds).
    Device,
    /// A port, numbered from 1.
    Port(u8),
    /// A queue pair.
    Qp(ObjectId),
    /// A completion queue.
    Cq(ObjectId),
    /// A shared receive queue.
    Srq(ObjectId),
    /// A work queue.
    Wq(ObjectId),
}

/// An asynchronous event of a device (`struct ibv_async_event`), already acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct AsyncEvent {
    /// What happened.
    pub kind: AsyncEventKind,
    /// What it happened to.
    pub source: EventSource,
}
