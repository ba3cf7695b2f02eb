//! An open port (`umad_open_port`) and the management agents registered on it
//! (`umad_register`), which send MADs and receive their answers (`umad_send`, `umad_recv`).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use ibumad_sys as sys;

use crate::ca::ca_name;
use crate::pipeline::Pipeline;
use crate::{init, Error, Result};

/// Size of a MAD on the wire (no RMPP).
pub const MAD_SIZE: usize = 256;

/// Offset of the transaction ID (8 bytes, big-endian) in the common MAD header.
pub(crate) const TID_OFFSET: usize = 8;

/// The Q_Key of the general services QP (QP1) (IBA 9.6.1.1).
pub const GSI_QKEY: u32 = 0x8001_0000;

/// A port opened for MAD access (`umad_open_port`); closed on drop (`umad_close_port`).
#[derive(Debug)]
pub struct Port {
    fd: c_int,
}

/// Where a MAD goes: the destination LID and queue pair (`umad_set_addr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address {
    /// Destination LID; 0xffff (permissive) for a directed-route SMP.
    pub lid: u16,
    /// Destination QP: 0 for SMPs (subnet management), 1 for the general services.
    pub qpn: u32,
    /// Service level.
    pub sl: u8,
    /// Q_Key (0 for SMPs, [`GSI_QKEY`] for QP1).
    pub qkey: u32,
}

impl Address {
    /// A subnet management packet to `lid` (QP0); `0xffff` for directed route.
    pub fn smi(lid: u16) -> Address {
        Address {
            lid,
            qpn: 0,
            sl: 0,
            qkey: 0,
        }
    }

    /// A general services MAD (performance, subnet administration, ...) to `lid` (QP1).
    pub fn gsi(lid: u16) -> Address {
        Address {
            lid,
            qpn: 1,
            sl: 0,
            qkey: GSI_QKEY,
        }
    }
}

impl Port {
    /// Opens port `port_num` of CA `ca` (`umad_open_port`); `None` and port 0 let
    /// libibumad pick the first CA and the first active port.
    pub fn open(ca: Option<&str>, port_num: u32) -> Result<Port> {
        init()?;
        let name = ca.map(ca_name).transpose()?;
        let name_ptr = name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
        let port_num = c_int::try_from(port_num).map_err(|_| Error::Call {
            call: "umad_open_port",
            source: std::io::Error::from_raw_os_error(libc::EINVAL),
        })?;
        // SAFETY: name_ptr is null or a NUL-terminated string.
        let fd = unsafe { sys::umad_open_port(name_ptr, port_num) };
        if fd < 0 {
            return Err(Error::call("umad_open_port", fd));
        }
        Ok(Port { fd })
    }

    /// Registers a client agent for `class` (e.g. 0x01 LID-routed SMPs, 0x81 directed-route
    /// SMPs, 0x04 performance) at `version` (`umad_register`, no RMPP, no unsolicited
    /// methods): it receives only the answers to what it sends.
    pub fn register(&self, class: u8, version: u8) -> Result<Agent<'_>> {
        // SAFETY: fd is open; a null method mask registers a client only.
        let id = unsafe {
            sys::umad_register(
                self.fd,
                c_int::from(class),
                c_int::from(version),
                0,
                std::ptr::null_mut(),
            )
        };
        if id < 0 {
            return Err(Error::call("umad_register", id));
        }
        Ok(Agent { port: self, id })
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: fd was opened by umad_open_port and is closed once; every Agent borrows
        // self, so none is left.
        unsafe { sys::umad_close_port(self.fd) };
    }
}

/// A management agent registered on a [`Port`]; unregistered on drop (`umad_unregister`).
#[derive(Debug)]
pub struct Agent<'p> {
    port: &'p Port,
    id: c_int,
}

/// The low 32 bits of the transaction IDs this process sends (the kernel owns the high
/// 32 bits: it puts the agent's there).
static NEXT_TID: AtomicU32 = AtomicU32::new(0);

impl Agent<'_> {
    /// The agent ID libibumad gave.
    pub fn id(&self) -> u32 {
        self.id.unsigned_abs()
    }

    /// Sends the request `mad` to `to` and returns its answer: the first MAD received whose
    /// transaction ID matches (low 32 bits) and whose method is a response. The TID field of
    /// the request is set here, from a process-wide counter. Each try waits up to `timeout`;
    /// with no answer it is sent again, `retries` more times, then [`Error::Timeout`].
    /// Other MADs received on the port meanwhile are dropped.
    pub fn request(
        &self,
        mad: &[u8; MAD_SIZE],
        to: &Address,
        timeout: Duration,
        retries: u32,
    ) -> Result<[u8; MAD_SIZE]> {
        let mut pipeline = self.pipeline(timeout, retries);
        pipeline.send(mad, to)?;
        pipeline
            .answer()
            .unwrap_or(Err(Error::Timeout { tries: 0 }))
    }

    /// A [`Pipeline`] on this agent: requests sent one after the other without waiting, their
    /// answers taken in the order they were sent, each try waiting up to `timeout`, each
    /// request sent `retries` more times without an answer.
    pub fn pipeline(&self, timeout: Duration, retries: u32) -> Pipeline<'_, '_> {
        Pipeline::new(self, timeout, retries)
    }

    /// Sends the MAD in `buf` (its TID set), addressed to `to` (`umad_send`), with the
    /// kernel's timeout `timeout`.
    pub(crate) fn send(&self, buf: &mut UmadBuf, to: &Address, timeout: Duration) -> Result<()> {
        let timeout_ms = c_int::try_from(timeout.as_millis())
            .unwrap_or(c_int::MAX)
            .max(1);
        buf.set_addr(to)?;
        // SAFETY: fd and agent are live; the buffer holds a header and MAD_SIZE bytes.
        let rc = unsafe {
            sys::umad_send(
                self.port.fd,
                self.id,
                buf.as_mut_ptr(),
                MAD_SIZE as c_int,
                timeout_ms,
                0,
            )
        };
        if rc < 0 {
            return Err(Error::call("umad_send", rc));
        }
        Ok(())
    }

    /// Receives one MAD into `buf` (`umad_recv`), waiting up to `wait`, and says what it is.
    pub(crate) fn receive(&self, buf: &mut UmadBuf, wait: Duration) -> Result<Received> {
        let wait_ms = c_int::try_from(wait.as_millis())
            .unwrap_or(c_int::MAX)
            .max(1);
        let mut len = MAD_SIZE as c_int;
        // SAFETY: fd is live; the buffer holds a header and `len` bytes of MAD.
        let rc = unsafe { sys::umad_recv(self.port.fd, buf.as_mut_ptr(), &mut len, wait_ms) };
        if rc == -libc::ETIMEDOUT || rc == -libc::EAGAIN {
            return Ok(Received::Nothing);
        }
        if rc < 0 {
            return Err(Error::call("umad_recv", rc));
        }
        if rc != self.id {
            return Ok(Received::Other); // another agent's
        }
        let mad = buf.mad_mut();
        let tid = u32::from_be_bytes([
            mad[TID_OFFSET + 4],
            mad[TID_OFFSET + 5],
            mad[TID_OFFSET + 6],
            mad[TID_OFFSET + 7],
        ]);
        let response = mad[3] & 0x80 != 0;
        if buf.status() != 0 {
            return Ok(Received::HandedBack(tid)); // our request, handed back: timed out
        }
        Ok(if response {
            Received::Answer(tid)
        } else {
            Received::Other
        })
    }
}

/// What [`Agent::receive`] got.
pub(crate) enum Received {
    /// Nothing within the wait.
    Nothing,
    /// A response with this TID (low 32 bits), in the buffer.
    Answer(u32),
    /// A request of this agent with this TID, handed back by the kernel as timed out.
    HandedBack(u32),
    /// Anything else: another agent's MAD, or a request.
    Other,
}

/// The next transaction ID (low 32 bits) this process sends.
pub(crate) fn next_tid() -> u32 {
    NEXT_TID.fetch_add(1, Ordering::Relaxed)
}

impl Drop for Agent<'_> {
    fn drop(&mut self) {
        // SAFETY: the agent was registered on this open port and is unregistered once.
        unsafe { sys::umad_unregister(self.port.fd, self.id) };
    }
}

/// A libibumad buffer: the `ib_user_mad` header (`umad_size` bytes, which depends on the
/// ABI the open port negotiated) followed by one MAD, 8-byte aligned as the header is.
#[derive(Debug)]
pub(crate) struct UmadBuf {
    words: Vec<u64>,
    header: usize,
}

impl UmadBuf {
    /// A zeroed buffer; call once a port is open (the header size is known then).
    pub(crate) fn new() -> UmadBuf {
        // SAFETY: no preconditions.
        let header = unsafe { sys::umad_size() };
        UmadBuf {
            words: vec![0; (header + MAD_SIZE).div_ceil(8)],
            header,
        }
    }

    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.words.as_mut_ptr().cast()
    }

    /// The MAD after the header.
    pub(crate) fn mad_mut(&mut self) -> &mut [u8; MAD_SIZE] {
        let header = self.header;
        // SAFETY: the words are plain bytes to u8, and the buffer holds header + MAD_SIZE
        // bytes, so the MAD_SIZE bytes from `header` are in bounds and borrowed with self.
        unsafe {
            &mut *self
                .words
                .as_mut_ptr()
                .cast::<u8>()
                .add(header)
                .cast::<[u8; MAD_SIZE]>()
        }
    }

    /// The header's status: nonzero when the kernel hands back a send that timed out.
    fn status(&mut self) -> c_int {
        // SAFETY: the buffer starts with an ib_user_mad header.
        unsafe { sys::umad_status(self.as_mut_ptr()) }
    }

    /// Addresses the MAD to `to` (`umad_set_addr`).
    fn set_addr(&mut self, to: &Address) -> Result<()> {
        let qpn =
            c_int::try_from(to.qpn).map_err(|_| Error::call("umad_set_addr", -libc::EINVAL))?;
        // SAFETY: the buffer starts with an ib_user_mad header. The Q_Key's bits are passed
        // as C's int, as the prototype has it.
        let rc = unsafe {
            sys::umad_set_addr(
                self.as_mut_ptr(),
                c_int::from(to.lid),
                qpn,
                c_int::from(to.sl),
                to.qkey as c_int,
            )
        };
        if rc < 0 {
            return Err(Error::call("umad_set_addr", rc));
        }
        Ok(())
    }
}
