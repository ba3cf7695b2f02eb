//! The crate's error type.

use std::fmt;
use std::io;

/// What can go wrong talking to libibumad.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A libibumad call failed; `source` holds the errno it returned.
    Call {
        /// The C function, e.g. `"umad_open_port"`.
        call: &'static str,
        /// The error it reported.
        source: io::Error,
    },
    /// A CA name that cannot be passed to C: it holds a NUL byte or is longer than
    /// `UMAD_CA_NAME_LEN - 1` bytes.
    InvalidName(String),
    /// No answer to a request arrived within its timeout, on any of its tries.
    Timeout {
        /// How many times the request was sent.
        tries: u32,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error for a libibumad call that returned `rc`, a negative errno.
    pub(crate) fn call(call: &'static str, rc: i32) -> Error {
        Error::Call {
            call,
            source: io::Error::from_raw_os_error(rc.saturating_neg()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Call { call, source } => write!(f, "{call}: {source}"),
            Error::InvalidName(name) => write!(f, "invalid CA name {name:?}"),
            Error::Timeout { tries } => {
                write!(f, "no answer to the MAD after {tries} tries (timed out)")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Call { source, .. } => Some(source),
            _ => None,
        }
    }
}
