//! The ground floor of the perftest tools: which test, its operation, transport and atomic
//! operation, and the error every layer returns. Nothing here calls up into the others.

use std::fmt::{self, Display};

/// The eight programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// `ib_send_bw`.
    SendBw,
    /// `ib_write_bw`.
    WriteBw,
    /// `ib_read_bw`.
    ReadBw,
    /// `ib_atomic_bw`.
    AtomicBw,
    /// `ib_send_lat`.
    SendLat,
    /// `ib_write_lat`.
    WriteLat,
    /// `ib_read_lat`.
    ReadLat,
    /// `ib_atomic_lat`.
    AtomicLat,
}

impl Test {
    /// All of them, in the order of their discriminants.
    pub const ALL: [Test; 8] = [
        Test::SendBw,
        Test::WriteBw,
        Test::ReadBw,
        Test::AtomicBw,
        Test::SendLat,
        Test::WriteLat,
        Test::ReadLat,
        Test::AtomicLat,
    ];

    /// The program name, such as `ib_write_bw`.
    pub fn name(self) -> &'static str {
        match self {
            Test::SendBw => "ib_send_bw",
            Test::WriteBw => "ib_write_bw",
            Test::ReadBw => "ib_read_bw",
            Test::AtomicBw => "ib_atomic_bw",
            Test::SendLat => "ib_send_lat",
            Test::WriteLat => "ib_write_lat",
            Test::ReadLat => "ib_read_lat",
            Test::AtomicLat => "ib_atomic_lat",
        }
    }

    /// The operation measured.
    pub fn verb(self) -> Verb {
        match self {
            Test::SendBw | Test::SendLat => Verb::Send,
            Test::WriteBw | Test::WriteLat => Verb::Write,
            Test::ReadBw | Test::ReadLat => Verb::Read,
            Test::AtomicBw | Test::AtomicLat => Verb::Atomic,
        }
    }

    /// Whether it measures bandwidth (else latency).
    pub fn is_bw(self) -> bool {
        matches!(
            self,
            Test::SendBw | Test::WriteBw | Test::ReadBw | Test::AtomicBw
        )
    }
}

/// The operation of a test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Send/receive.
    Send,
    /// RDMA write.
    Write,
    /// RDMA read.
    Read,
    /// Atomic fetch-and-add or compare-and-swap.
    Atomic,
}

impl Verb {
    /// perftest's name, such as `RDMA_Write`.
    pub fn perftest_name(self) -> &'static str {
        match self {
            Verb::Send => "Send",
            Verb::Write => "RDMA_Write",
            Verb::Read => "RDMA_Read",
            Verb::Atomic => "Atomic",
        }
    }
}

/// The transport of the test's QPs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conn {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
}

impl Conn {
    /// perftest's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Conn::Rc => "RC",
            Conn::Uc => "UC",
            Conn::Ud => "UD",
        }
    }
}

/// The atomic operation of the atomic tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// Compare and swap.
    CmpAndSwap,
    /// Fetch and add.
    FetchAndAdd,
}

impl AtomicOp {
    /// perftest's name for it.
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::CmpAndSwap => "CMP_AND_SWAP",
            AtomicOp::FetchAndAdd => "FETCH_AND_ADD",
        }
    }
}

/// A failure, with the message to print.
#[derive(Debug)]
pub struct Error(String);

impl Error {
    /// An error saying `msg`.
    pub fn new(msg: impl Into<String>) -> Error {
        Error(msg.into())
    }
}

impl Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Results of the perftest tools.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Adds what was being done to an error.
pub(crate) trait Ctx<T> {
    /// The error, as `what: error`.
    fn ctx(self, what: impl Display) -> Result<T>;
}

impl<T, E: Display> Ctx<T> for std::result::Result<T, E> {
    fn ctx(self, what: impl Display) -> Result<T> {
        self.map_err(|e| Error(format!("{what}: {e}")))
    }
}
