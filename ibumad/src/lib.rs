//! Safe access to InfiniBand management datagrams (MADs) through libibumad, rdma-core's
//! user MAD library: list the local CAs and their ports ([`ca_names`], [`Ca::get`]), open a
//! port ([`Port::open`]), register an agent for a management class ([`Port::register`]) and
//! send a request and get its answer with a timeout and retries ([`Agent::request`]), or
//! keep several in flight ([`Agent::pipeline`]).
//! Every handle releases what it holds on drop. The [`mad`] module encodes and decodes the
//! MADs themselves.
//!
//! Tests run on a simulated fabric: `scripts/with-ibsim cargo test -p ibumad` (ibsim and
//! opensm, libibumad redirected to them by `libumad2sim.so`, on the host).
//!
//! The raw bindings are the `ibumad-sys` crate: checked in for x86_64 and aarch64 Linux, so
//! that a build needs libibumad to link but neither its header nor libclang. The feature
//! `bindgen` (which turns on `ibumad-sys`'s) generates them at build time from the installed
//! `<infiniband/umad.h>` instead.

mod ca;
mod error;
pub mod mad;
mod pipeline;
mod port;

pub use ca::{ca_names, Ca, CaPort};
pub use error::{Error, Result};
pub use pipeline::Pipeline;
pub use port::{Address, Agent, Port, GSI_QKEY, MAD_SIZE};

use std::sync::OnceLock;

/// Initialises libibumad once per process (`umad_init`) and lists the CAs once, so that
/// the first access to the devices is made by one thread: the simulator's `libumad2sim`
/// attaches a process on its first access and aborts it when two threads attach at once.
fn init() -> Result<()> {
    static INIT: OnceLock<std::result::Result<(), i32>> = OnceLock::new();
    let rc = *INIT.get_or_init(|| {
        // SAFETY: no preconditions; called once.
        let rc = unsafe { ibumad_sys::umad_init() };
        if rc < 0 {
            return Err(rc);
        }
        let mut names = [[0; ibumad_sys::UMAD_CA_NAME_LEN as usize]; 1];
        // SAFETY: one entry of UMAD_CA_NAME_LEN bytes, as max says.
        unsafe { ibumad_sys::umad_get_cas_names(names.as_mut_ptr(), 1) };
        Ok(())
    });
    rc.map_err(|rc| Error::call("umad_init", rc))
}
