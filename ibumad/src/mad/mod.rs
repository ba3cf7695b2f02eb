//! MADs as typed values: the common header ([`MadHeader`], IBA 13.4.2), subnet management
//! packets LID-routed and directed-route ([`Smp`], 14.2.1), the SMP attributes
//! [`NodeInfo`], [`NodeDescription`], [`PortInfo`], [`SwitchInfo`], [`SmInfo`] and
//! [`PortInfoExtended`] (14.2.5), the performance class's [`ClassPortInfo`] (13.4.8.1),
//! [`PortCounters`], [`PortCountersExtended`], [`PortSamplesControl`] and
//! [`PortExtendedSpeedsCounters`] (16.1), and
//! subnet administration MADs ([`SaMad`], 15.2) with the [`PathRecord`] attribute.
//! Decoding takes any bytes (a MAD from the wire is untrusted) and returns an error, never
//! panics; encoding writes the IBTA layout (big-endian, fields at their bit offsets,
//! reserved bits zero).

mod attr;
mod bits;
mod header;
mod perf;
mod port_ext;
mod sa;
mod samples;
mod smp;
mod switch;

pub use attr::{NodeDescription, NodeInfo, PortInfo};
pub use header::MadHeader;
pub use perf::{counter_run, ClassPortInfo, PortCounters, PortCountersExtended, PERF_DATA_OFFSET};
pub use port_ext::PortInfoExtended;
pub use sa::{PathRecord, SaMad, SA_CLASS, SA_CLASS_VERSION, SA_DATA_OFFSET};
pub use samples::{PortExtendedSpeedsCounters, PortSamplesControl};
pub use smp::{parse_dr_path, Route, Smp};
pub use switch::{SmInfo, SwitchInfo};

use std::fmt;

/// Why bytes are not the MAD or attribute asked for, or a value cannot be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MadError {
    /// Fewer bytes than the layout needs.
    TooShort {
        /// Bytes the layout needs.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// A management class other than the ones this type decodes.
    Class(u8),
    /// A directed-route hop count over 63 (the path holds 64 bytes, entry 0 unused).
    HopCount(usize),
    /// A field width outside 1 to 64 bits.
    Width(usize),
    /// A directed-route path that is not `0,<port>,<port>...` with ports 0-255.
    Path(String),
}

impl fmt::Display for MadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MadError::TooShort { needed, got } => {
                write!(f, "MAD too short: {got} bytes, {needed} needed")
            }
            MadError::Class(class) => write!(f, "unexpected management class {class:#04x}"),
            MadError::HopCount(n) => write!(f, "directed route of {n} hops (at most 63)"),
            MadError::Width(width) => write!(f, "field width of {width} bits (1 to 64)"),
            MadError::Path(path) => write!(f, "malformed directed-route path {path:?}"),
        }
    }
}

impl std::error::Error for MadError {}

/// `bytes`, if it holds at least `needed` of them.
fn need(bytes: &[u8], needed: usize) -> Result<&[u8], MadError> {
    if bytes.len() < needed {
        return Err(MadError::TooShort {
            needed,
            got: bytes.len(),
        });
    }
    Ok(&bytes[..needed])
}
