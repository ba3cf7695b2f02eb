//! Where a request goes: the resolved destinations of the fabric tools (the C
//! `ib_portid_t` as they use it) and how a destination operand is written. A leaf: the
//! transport ([`super::rpc`]) routes requests by these, the operand parser
//! ([`super::dest`]) and the option loop ([`super::options`]) make them.

use std::fmt;

/// How the destination operand is written (`-L`, `-D`, `-G`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DestType {
    /// A LID.
    #[default]
    Lid,
    /// A directed-route path.
    DrPath,
    /// A port GUID.
    Guid,
    /// A LID and a directed route from it (`smpquery -c`).
    Combined,
}

/// A resolved destination (the C `ib_portid_t` as these tools use it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dest {
    /// LID-routed.
    Lid(u16),
    /// Directed route: entry 0 as given (the local port, not sent), then the port to leave
    /// by at each hop.
    Dr(Vec<u8>),
}

impl fmt::Display for Dest {
    /// The C `portid2str`: `Lid 5` or `DR path slid 65535; dlid 65535; 0,1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dest::Lid(lid) => write!(f, "Lid {lid}"),
            Dest::Dr(path) => {
                write!(f, "DR path slid 65535; dlid 65535; {}", path[0])?;
                path[1..].iter().try_for_each(|p| write!(f, ",{p}"))
            }
        }
    }
}

/// A combined route (`smpquery -c`, the C `IB_DEST_DRSLID`): LID-routed to `lid`, then
/// directed along `path` (entry 0 as given, not sent) with DrSLID `slid`, the local port's
/// LID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Combined {
    /// The LID the route starts from.
    pub lid: u16,
    /// DrSLID: the local port's LID.
    pub slid: u16,
    /// The directed part.
    pub path: Vec<u8>,
}

impl fmt::Display for Combined {
    /// The C `portid2str`: `Lid 2 DR path slid 1; dlid 65535; 0,5`, or `Lid 2` alone for a
    /// path of no hop.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lid {}", self.lid)?;
        if self.path.len() > 1 {
            write!(
                f,
                " DR path slid {}; dlid 65535; {}",
                self.slid, self.path[0]
            )?;
            self.path[1..].iter().try_for_each(|p| write!(f, ",{p}"))?;
        }
        Ok(())
    }
}
