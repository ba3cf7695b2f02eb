//! An open device: `struct ibv_context`.

pub(crate) mod async_event; // asynchronous events (ibv_get_async_event)
pub(crate) mod device_attr; // ibv_query_device_ex and its attributes
pub(crate) mod gid; // Gid and the GID table (ibv_query_gid_ex)
pub(crate) mod port; // ibv_query_port and its attributes
pub(crate) mod port_cache; // the ports' attributes and GID tables QPs and AHs read
pub(crate) mod read_sinks; // iWARP: the regions an RDMA read may not land in

use std::fmt;
use std::panic::RefUnwindSafe;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

use crate::drop_error;
use crate::error::{Error, Result};
use crate::ffi;

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
    raw: NonNull<ffi::ibv_context>,
    /// `ibv_query_device`, read once: the limits do not change while the device is open.
    attr: OnceLock<ffi::ibv_device_attr>,
    /// What keeps a context another library opened open (`cm::device`), dropped
    /// instead of `ibv_close_device`; `None` for a context this crate opened.
    keep_open: Option<Box<dyn Send + Sync + RefUnwindSafe>>,
    /// The ports' attributes and GID tables, as QPs and address handles read them.
    ports: port_cache::PortCache,
    /// On an iWARP device, the regions registered without remote write.
    read_sinks: Option<read_sinks::ReadSinks>,
}

// SAFETY: libibverbs contexts may be used from any thread; all verbs on them are thread-safe.
unsafe impl Send for Inner {}
// SAFETY: as above.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.keep_open.is_some() {
            return; // the library that opened it closes it
        }
        // SAFETY: the context is open, and every object created from it holds a clone of the
        // Arc, so none is left.
        let rc = unsafe { ffi::ibv_close_device(self.raw.as_ptr()) };
        drop_error::report("ibv_close_device", rc);
    }
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

/// An empty [`ReadSinks`](read_sinks::ReadSinks) for a context of an iWARP device, else
/// `None`.
///
/// # Safety
/// `raw` must be an open context.
unsafe fn iwarp_read_sinks(raw: NonNull<ffi::ibv_context>) -> Option<read_sinks::ReadSinks> {
    // SAFETY: the context is open (caller), so its device is valid.
    let transport = unsafe { (*(*raw.as_ptr()).device).transport_type };
    (transport == ffi::ibv_transport_type::IBV_TRANSPORT_IWARP).then(Default::default)
}

impl Context {
    /// Takes ownership of an open context.
    ///
    /// # Safety
    /// `raw` must be an open context that nothing else closes.
    pub unsafe fn from_raw(raw: NonNull<ffi::ibv_context>) -> Self {
        Context {
            inner: Arc::new(Inner {
                raw,
                attr: OnceLock::new(),
                keep_open: None,
                ports: Default::default(),
                // SAFETY: raw is an open context (caller).
                read_sinks: unsafe { iwarp_read_sinks(raw) },
            }),
        }
    }

    /// Wraps a context another library opened and keeps open while `keep_open` lives (such
    /// as librdmacm's device contexts: `cm::device`); it is never closed here.
    ///
    /// # Safety
    /// `raw` must be an open context that stays open until `keep_open` is dropped.
    #[cfg(feature = "cm")]
    pub(crate) unsafe fn from_raw_kept(
        raw: NonNull<ffi::ibv_context>,
        keep_open: Box<dyn Send + Sync + RefUnwindSafe>,
    ) -> Self {
        Context {
            inner: Arc::new(Inner {
                raw,
                attr: OnceLock::new(),
                keep_open: Some(keep_open),
                ports: Default::default(),
                // SAFETY: raw is an open context (caller).
                read_sinks: unsafe { iwarp_read_sinks(raw) },
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
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_context {
        self.inner.raw.as_ptr()
    }

    /// The name of the device (`ibv_get_device_name`).
    pub fn name(&self) -> &str {
        // SAFETY: the context is open, so its device and the device's name are valid.
        let name =
            unsafe { std::ffi::CStr::from_ptr(ffi::ibv_get_device_name((*self.ptr()).device)) };
        name.to_str().unwrap_or("")
    }

    /// The transport the device speaks (its `ibv_device`'s `transport_type`).
    pub fn transport(&self) -> crate::Transport {
        // SAFETY: the context is open, so its device is valid.
        crate::Transport::from_raw(unsafe { (*(*self.ptr()).device).transport_type })
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
        let mut attr = ffi::ibv_device_attr::default();
        // SAFETY: the context is open and attr is writable.
        crate::error::check("ibv_query_device", unsafe {
            ffi::ibv_query_device(self.ptr(), &mut attr)
        })?;
        Ok(self.inner.attr.get_or_init(|| attr))
    }

    /// Fails with [`Error::Mismatch`] unless `other` is this same context (the same
    /// `ibv_context`: librdmacm's device context may be wrapped more than once).
    pub(crate) fn check_same(&self, other: &Context, what: &'static str) -> Result<()> {
        if self.inner.raw == other.inner.raw {
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
