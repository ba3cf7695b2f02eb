//! Where the discovery's SMPs go: the [`Smi`] trait, and [`UmadSmi`], which sends them as
//! directed-route Gets through libibumad (the `ibumad` crate), several in flight.

use std::collections::VecDeque;
use std::fmt;

use ibumad::mad::{Route, Smp};
use ibumad::{Address, Pipeline};

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

/// Sends Gets of SMP attributes along directed routes from the local port, several in
/// flight, their answers taken in the order they were sent.
pub trait Smi {
    /// Sends a Get of attribute `attr` (with `modifier`) of the node at the end of `path`
    /// (the port to leave by at each hop; empty for the local node), behind those in flight.
    /// A failure to send comes out of [`answer`](Smi::answer) in its turn.
    fn send(&mut self, path: &[u8], attr: u16, modifier: u32);
    /// The 64 bytes of the attribute from the answer to the oldest Get in flight.
    fn answer(&mut self) -> Result<[u8; 64], QueryError>;
}

/// [`Smi`] over a pipeline of a directed-route agent (class 0x81) of an open port.
pub struct UmadSmi<'a, 'p> {
    /// The agent's pipeline (its timeout and retries per Get).
    pub pipeline: Pipeline<'a, 'p>,
    /// The M_Key each SMP carries.
    pub m_key: u64,
    /// Per Get in flight, oldest first: `None` if it is in the pipeline, else why it could
    /// not be sent.
    pub sent: VecDeque<Option<QueryError>>,
}

impl Smi for UmadSmi<'_, '_> {
    fn send(&mut self, path: &[u8], attr: u16, modifier: u32) {
        let mut smp = Smp::get(attr, modifier, Route::directed(path));
        smp.m_key = self.m_key;
        let sent = match smp.encode() {
            Ok(request) => self
                .pipeline
                .send(&request, &Address::smi(0xffff))
                .err()
                .map(QueryError::Io),
            Err(e) => Some(QueryError::Bad(e.to_string())),
        };
        self.sent.push_back(sent);
    }

    fn answer(&mut self) -> Result<[u8; 64], QueryError> {
        if let Some(e) = self.sent.pop_front().flatten() {
            return Err(e);
        }
        let answer = self
            .pipeline
            .answer()
            .unwrap_or(Err(ibumad::Error::Timeout { tries: 0 }))
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
