//! An open device: `struct ibv_context`.

pub(crate) mod async_event; // asynchronous events (ibv_get_async_event)
pub(crate) mod device_attr; // ibv_query_device_ex and its attributes
pub(crate) mod gid; // Gid and the GID table (ibv_query_gid_ex)
pub(crate) mod port; // ibv_query_port and its attributes
pub(crate) mod port_cache; // the ports' attributes and GID tables QPs and AHs read
mod raw; // the FFI calls of the context: every unsafe block of the folder
pub(crate) mod read_sinks; // iWARP: the regions an RDMA read may not land in

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::ffi;
use raw::RawContext;

/// An open RDMA device (`ibv_open_device`), closed when the last clone and the last object
/// created from it are dropped.
///
/// Cloning is cheap (a reference count); every object created from the context keeps a clone,
/// so the device is closed only after all of them are destroyed.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    /// The `ibv_context`, closed when this is dropped (unless another library keeps it open).
    raw: RawContext,
    /// `ibv_query_device`, read once: the limits do not change while the device is open.
    attr: OnceLock<ffi::ibv_device_attr>,
    /// The ports' attributes and GID tables, as QPs and address handles read them.
    ports: port_cache::PortCache,
    /// On an iWARP device, the regions registered without remote write.
    read_sinks: Option<read_sinks::ReadSinks>,
}

/// A [`Context`] that may have been dropped: [`upgrade`](Self::upgrade) gives it back while
/// a clone of it lives (and so while the device it wraps is open).
#[cfg(feature = "cm")]
pub(crate) struct WeakContext(std::sync::Weak<Inner>);

#[cfg(feature = "cm")]
impl WeakContext {
    /// The context, if a clone of it still lives.
    pub(crate) fn upgrade(&self) -> Option<Context> {
        self.0.upgrade().map(|inner| Context { inner })
    }
}

impl Context {
    /// The context of `raw`; on an iWARP device, with an empty
    /// [`ReadSinks`](read_sinks::ReadSinks).
    fn new(raw: RawContext) -> Self {
        let iwarp = raw.transport_type() == ffi::ibv_transport_type::IBV_TRANSPORT_IWARP;
        Context {
            inner: Arc::new(Inner {
                raw,
                attr: OnceLock::new(),
                ports: Default::default(),
                read_sinks: iwarp.then(Default::default),
            }),
        }
    }

    /// A handle that does not keep the context open (for librdmacm's contexts, shared by
    /// every CM id on the device: `cm::device`).
    #[cfg(feature = "cm")]
    pub(crate) fn downgrade(&self) -> WeakContext {
        WeakContext(Arc::downgrade(&self.inner))
    }

    /// Whether a clone besides this one lives (a handle, or an object made from it).
    #[cfg(feature = "cm")]
    pub(crate) fn has_other_holders(&self) -> bool {
        Arc::strong_count(&self.inner) > 1
    }

    /// The raw `ibv_context`, valid while this context lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_context {
        self.inner.raw.ptr()
    }

    /// The name of the device (`ibv_get_device_name`).
    pub fn name(&self) -> &str {
        self.inner.raw.device_name().to_str().unwrap_or("")
    }

    /// The device's `ibv_device`, which identifies it among every context of the process
    /// (libibverbs keeps one per device).
    pub(crate) fn device_ptr(&self) -> *mut ffi::ibv_device {
        self.inner.raw.device()
    }

    /// The transport the device speaks (its `ibv_device`'s `transport_type`).
    pub fn transport(&self) -> crate::Transport {
        crate::Transport::from_raw(self.inner.raw.transport_type())
    }

    /// Whether the device's transport is iWARP, whose rules the crate checks
    /// ([`IwarpRule`](crate::IwarpRule)).
    pub(crate) fn is_iwarp(&self) -> bool {
        self.inner.read_sinks.is_some()
    }

    /// On an iWARP device, the regions an RDMA read may not land in.
    pub(crate) fn read_sinks(&self) -> Option<&read_sinks::ReadSinks> {
        self.inner.read_sinks.as_ref()
    }

    /// The device's fixed attributes (`ibv_query_device`), queried on first use.
    pub(crate) fn device_limits(&self) -> Result<&ffi::ibv_device_attr> {
        if let Some(attr) = self.inner.attr.get() {
            return Ok(attr);
        }
        let attr = self.inner.raw.query_device()?;
        Ok(self.inner.attr.get_or_init(|| attr))
    }

    /// Fails with [`Error::Mismatch`] unless `other` is this same context (the same
    /// `ibv_context`: librdmacm's device context may be wrapped more than once).
    pub(crate) fn check_same(&self, other: &Context, what: &'static str) -> Result<()> {
        if self.ptr() == other.ptr() {
            Ok(())
        } else {
            Err(Error::Mismatch {
                what,
                owner: "device context",
            })
        }
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.name())
            .finish()
    }
}
