//! Where the discovery's SMPs go: the [`Smi`] trait, and [`UmadSmi`], which sends them as
//! directed-route Gets through libibumad (the `ibumad` crate).

use std::fmt;
use std::time::Duration;

use ibumad::mad::{Route, Smp};
use ibumad::{Address, Agent};

/// Why a query got no usable answer.
#[derive(Debug)]
pub enum QueryError {
    /// No answer (the kernel's, or the simulator's, timeout on every try).
    Timeout,
    /// An answer with a nonzero status (the 15 bits of a directed-route SMP).
    Status(u16),
    /// An answer that is not an SMP, or a request that cannot be encoded.
    Bad(String),
    /// The send or receive failed.
    Io(ibumad::Error),
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueryError::Timeout => write!(f, "bad status 110; Connection timed out"),
            QueryError::Status(s) => write!(f, "bad status {s:#x}"),
            QueryError::Bad(msg) => write!(f, "{msg}"),
            QueryError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Sends a Get of an SMP attribute along a directed route from the local port.
pub trait Smi {
    /// The 64 bytes of attribute `attr` (with `modifier`) of the node at the end of `path`
    /// (the port to leave by at each hop; empty for the local node).
    fn get(&mut self, path: &[u8], attr: u16, modifier: u32) -> Result<[u8; 64], QueryError>;
}

/// [`Smi`] over a directed-route agent (class 0x81) of an open port.
pub struct UmadSmi<'p> {
    /// The agent registered for class 0x81.
    pub agent: Agent<'p>,
    /// Time to wait for each try.
    pub timeout: Duration,
    /// Tries after the first.
    pub retries: u32,
    /// The M_Key each SMP carries.
    pub m_key: u64,
}

impl Smi for UmadSmi<'_> {
    fn get(&mut self, path: &[u8], attr: u16, modifier: u32) -> Result<[u8; 64], QueryError> {
        let mut smp = Smp::get(attr, modifier, Route::directed(path));
        smp.m_key = self.m_key;
        let request = smp.encode().map_err(|e| QueryError::Bad(e.to_string()))?;
        let answer = self
            .agent
            .request(&request, &Address::smi(0xffff), self.timeout, self.retries)
            .map_err(|e| match e {
                ibumad::Error::Timeout { .. } => QueryError::Timeout,
                e => QueryError::Io(e),
            })?;
        let smp = Smp::decode(&answer).map_err(|e| QueryError::Bad(e.to_string()))?;
        if smp.status != 0 {
            return Err(QueryError::Status(smp.status));
        }
        Ok(smp.data)
    }
}
