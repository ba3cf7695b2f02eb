//! The FFI calls of the context: every unsafe block of `context/`, so that the context can be
//! audited here.
//!
//! [`RawContext`] owns the `ibv_context` (closed on drop, unless another library keeps it
//! open) and its methods are the verbs on it, safe because a live handle is an open
//! context. It is made only by the `unsafe` constructors of [`Context`] here, which take a
//! context opened elsewhere: by `Device::open` (`device.rs`), the caller or librdmacm. The
//! free functions are the calls that take no context.

use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::RawFd;
use std::panic::RefUnwindSafe;
use std::ptr::{self, NonNull};
use std::time::Duration;

use crate::context::Context;
use crate::drop_error;
use crate::error::{check, Error, Result};
use crate::fd::wait_readable;
use crate::ffi;
use crate::types::{AsyncEvent, AsyncEventKind, EventSource, ObjectId};

/// An open `ibv_context`, closed (`ibv_close_device`) on drop unless another library keeps
/// it open. Held once, in the [`Context`]'s shared state: every object created from the
/// context holds a clone of the [`Context`], so the handle outlives them all.
pub(super) struct RawContext {
    ptr: NonNull<ffi::ibv_context>,
    /// What keeps a context another library opened open (`cm::device`), dropped
    /// instead of `ibv_close_device`; `None` for a context this crate opened.
    keep_open: Option<Box<dyn Send + Sync + RefUnwindSafe>>,
}

// SAFETY: libibverbs contexts may be used from any thread; all verbs on them are thread-safe.
unsafe impl Send for RawContext {}
// SAFETY: as above.
unsafe impl Sync for RawContext {}

impl Drop for RawContext {
    fn drop(&mut self) {
        if self.keep_open.is_some() {
            return; // the library that opened it closes it
        }
        // SAFETY: the context is open, and every object created from it holds a clone of the
        // Context whose shared state owns this handle, so none is left.
        let rc = unsafe { ffi::ibv_close_device(self.ptr.as_ptr()) };
        drop_error::report("ibv_close_device", rc);
    }
}

impl Context {
    /// Takes ownership of an open context.
    ///
    /// # Safety
    /// `raw` must be an open context that nothing else closes.
    pub unsafe fn from_raw(raw: NonNull<ffi::ibv_context>) -> Self {
        // The caller's promise is the handle's invariant: an open context, closed on drop.
        Context::new(RawContext {
            ptr: raw,
            keep_open: None,
        })
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
        // The caller's promise is the handle's invariant: open while it holds `keep_open`.
        Context::new(RawContext {
            ptr: raw,
            keep_open: Some(keep_open),
        })
    }
}

impl RawContext {
    /// The raw `ibv_context`, valid while this handle lives.
    #[inline]
    pub(super) fn ptr(&self) -> *mut ffi::ibv_context {
        self.ptr.as_ptr()
    }

    /// The name of the device (`ibv_get_device_name`).
    pub(super) fn device_name(&self) -> &CStr {
        // SAFETY: the context is open, so its device and the device's name are valid.
        unsafe { CStr::from_ptr(ffi::ibv_get_device_name((*self.ptr()).device)) }
    }

    /// The context's `ibv_device`: the same pointer for every context of one device.
    pub(super) fn device(&self) -> *mut ffi::ibv_device {
        // SAFETY: the context is open; libibverbs sets `device` when opening it.
        unsafe { (*self.ptr()).device }
    }

    /// The device's `transport_type`.
    pub(super) fn transport_type(&self) -> ffi::ibv_transport_type {
        // SAFETY: the context is open, so its device is valid.
        unsafe { (*(*self.ptr()).device).transport_type }
    }

    /// `ibv_context::num_comp_vectors`.
    pub(super) fn num_comp_vectors(&self) -> libc::c_int {
        // SAFETY: the context is open; libibverbs sets this field when opening it and never
        // changes it afterwards.
        unsafe { (*self.ptr()).num_comp_vectors }
    }

    /// `ibv_context::async_fd`.
    pub(super) fn async_fd(&self) -> RawFd {
        // SAFETY: the context is open; libibverbs sets async_fd when opening it and never
        // changes it afterwards.
        unsafe { (*self.ptr()).async_fd }
    }

    /// `ibv_query_device`.
    pub(super) fn query_device(&self) -> Result<ffi::ibv_device_attr> {
        let mut attr = ffi::ibv_device_attr::default();
        // SAFETY: the context is open and attr is writable.
        check("ibv_query_device", unsafe {
            ffi::ibv_query_device(self.ptr(), &mut attr)
        })?;
        Ok(attr)
    }

    /// `ibv_query_device_ex`, without input.
    pub(super) fn query_device_ex(&self) -> Result<ffi::ibv_device_attr_ex> {
        let mut raw = ffi::ibv_device_attr_ex::default();
        // SAFETY: the context is open, a null input is allowed, and raw is a writable
        // ibv_device_attr_ex.
        let rc = unsafe { ffi::ibv_query_device_ex(self.ptr(), ptr::null(), &mut raw) };
        check("ibv_query_device_ex", rc)?;
        Ok(raw)
    }

    /// `ibv_query_port` of `port`.
    ///
    /// The port need not exist, here and in the GID queries below (nor the index): the
    /// number only goes to the kernel (or into the names of sysfs files), which refuses a
    /// port or an entry the device does not have. The crate's callers check both against
    /// the device first ([`Context::query_port`], [`Context::query_gid`]), for their own
    /// error.
    pub(super) fn query_port(&self, port: u8) -> Result<ffi::ibv_port_attr> {
        let mut raw = ffi::ibv_port_attr::default();
        // SAFETY: the context is open, the port need not exist (above), and raw is a
        // writable ibv_port_attr.
        check("ibv_query_port", unsafe {
            ffi::ibv_query_port(self.ptr(), port, &mut raw)
        })?;
        Ok(raw)
    }

    /// Entry `index` of `port`'s GID table (`ibv_query_gid`); an empty entry reads as zero.
    pub(super) fn query_gid(&self, port: u8, index: u8) -> Result<ffi::ibv_gid> {
        let mut raw = ffi::ibv_gid::default();
        // SAFETY: the context is open, port and index need not exist (see query_port), raw is
        // a writable ibv_gid.
        check("ibv_query_gid", unsafe {
            ffi::ibv_query_gid(self.ptr(), port, index.into(), &mut raw)
        })?;
        Ok(raw)
    }

    /// Entry `index` of `port`'s GID table with its type and network device
    /// (`ibv_query_gid_ex`); `None` if it is empty (`ENODATA`).
    pub(super) fn query_gid_ex(&self, port: u8, index: u8) -> Result<Option<ffi::ibv_gid_entry>> {
        let mut raw = ffi::ibv_gid_entry::default();
        // SAFETY: the context is open, port and index need not exist (see query_port), raw is
        // a writable entry.
        let rc =
            unsafe { ffi::ibv_query_gid_ex(self.ptr(), port.into(), index.into(), &mut raw, 0) };
        if rc == libc::ENODATA {
            return Ok(None);
        }
        check("ibv_query_gid_ex", rc)?;
        Ok(Some(raw))
    }

    /// The valid entries of every port's GID table (`ibv_query_gid_table`), written to the
    /// start of `entries`: how many.
    pub(super) fn query_gid_table(&self, entries: &mut [ffi::ibv_gid_entry]) -> Result<usize> {
        // SAFETY: the context is open and entries has room for `entries.len()` entries.
        let n =
            unsafe { ffi::ibv_query_gid_table(self.ptr(), entries.as_mut_ptr(), entries.len(), 0) };
        usize::try_from(n).map_err(|_| {
            Error::errno(
                "ibv_query_gid_table",
                i32::try_from(-n).unwrap_or(libc::EINVAL),
            )
        })
    }

    /// Reads the next asynchronous event (`ibv_get_async_event`) and acknowledges it
    /// (`ibv_ack_async_event`) after copying it. The error is `WouldBlock` if the fd is
    /// non-blocking and has none.
    pub(super) fn get_async_event(&self) -> io::Result<AsyncEvent> {
        let mut raw = MaybeUninit::<ffi::ibv_async_event>::uninit();
        // SAFETY: the context is open and raw is writable.
        let rc = unsafe { ffi::ibv_get_async_event(self.ptr(), raw.as_mut_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: ibv_get_async_event succeeded, so it filled the event.
        let mut raw = unsafe { raw.assume_init() };
        let event = event_of(&raw);
        // SAFETY: raw is an event from ibv_get_async_event not acknowledged yet; nothing
        // refers to the object it names after this.
        unsafe { ffi::ibv_ack_async_event(&mut raw) };
        Ok(event)
    }

    /// Waits up to `ms` milliseconds (-1: forever) for the async fd to become readable
    /// (`poll`); true if it did.
    pub(super) fn poll_async_fd(&self, ms: libc::c_int) -> Result<bool> {
        wait_readable(self.async_fd(), ms)
    }
}

/// The kind and source of a C event.
fn event_of(raw: &ffi::ibv_async_event) -> AsyncEvent {
    use AsyncEventKind as K;
    let kind = AsyncEventKind::from_raw(raw.event_type);
    let element = &raw.element;
    let source = match kind {
        K::CqErr => {
            // SAFETY: libibverbs sets the `cq` member for CQ events.
            EventSource::Cq(ObjectId(unsafe { element.cq } as usize))
        }
        K::QpFatal
        | K::QpReqErr
        | K::QpAccessErr
        | K::CommEst
        | K::SqDrained
        | K::PathMig
        | K::PathMigErr
        | K::QpLastWqeReached => {
            // SAFETY: libibverbs sets the `qp` member for QP events.
            EventSource::Qp(ObjectId(unsafe { element.qp } as usize))
        }
        K::SrqErr | K::SrqLimitReached => {
            // SAFETY: libibverbs sets the `srq` member for SRQ events.
            EventSource::Srq(ObjectId(unsafe { element.srq } as usize))
        }
        K::WqFatal => {
            // SAFETY: libibverbs sets the `wq` member for WQ events.
            EventSource::Wq(ObjectId(unsafe { element.wq } as usize))
        }
        K::PortActive
        | K::PortErr
        | K::LidChange
        | K::PkeyChange
        | K::SmChange
        | K::ClientReregister
        | K::GidChange => {
            // SAFETY: libibverbs sets the `port_num` member for port events.
            let port = unsafe { element.port_num };
            // Port numbers fit in u8 (ibv_query_port takes a u8); 0 is no port.
            EventSource::Port(u8::try_from(port).unwrap_or(0))
        }
        K::DeviceFatal | K::Unknown(_) => EventSource::Device,
    };
    AsyncEvent { kind, source }
}

/// The verbs description of an event type (`ibv_event_type_str`).
pub(super) fn event_type_str(kind: ffi::ibv_event_type) -> &'static CStr {
    // SAFETY: ibv_event_type_str returns a static string for any value.
    unsafe { CStr::from_ptr(ffi::ibv_event_type_str(kind)) }
}

/// The verbs description of a port state (`ibv_port_state_str`).
pub(super) fn port_state_str(state: ffi::ibv_port_state) -> &'static CStr {
    // SAFETY: ibv_port_state_str returns a static string for any value.
    unsafe { CStr::from_ptr(ffi::ibv_port_state_str(state)) }
}

/// The name of network interface `ifindex`, such as `eth0` (`if_indextoname`); `None` if
/// there is none.
pub(super) fn if_name(ifindex: u32) -> Option<String> {
    let mut name = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: name has the IF_NAMESIZE bytes if_indextoname may write.
    let ret = unsafe { libc::if_indextoname(ifindex, name.as_mut_ptr()) };
    if ret.is_null() {
        return None;
    }
    // SAFETY: on success name holds a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

/// `CLOCK_MONOTONIC_COARSE`: the kernel's last tick, read from the vDSO page without a
/// system call even where the fine clock needs one (a VM whose clock source the vDSO
/// cannot read), which `Instant::now` would pay for every QP. `None` if it fails.
pub(super) fn coarse_now() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u32::try_from(ts.tv_nsec).ok()?;
    (rc == 0).then(|| Duration::new(secs, nanos))
}
