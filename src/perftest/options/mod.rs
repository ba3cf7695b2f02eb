//! Command line: perftest's options as typed ([`Args`], text as given), then with their
//! meanings, defaults and the dependencies between them (`force_dependecies`): [`Options`],
//! what the run asks for. What needs the device (GID index, MTU, inline size, outstanding
//! reads, the sizes UD carries) is resolved from them once, into the run (`rdma::Run`).

mod args;
mod defaults;
mod dependencies;
mod number;
mod qos;
#[cfg(test)]
mod tests;

use std::ffi::OsString;

pub use args::Args;
pub(crate) use qos::{Limiter, Qos};

use super::types::{AtomicOp, Conn, Error, Result, Test};
use super::wire::{self, Summary};

/// perftest's default TCP port.
pub const DEFAULT_PORT: u16 = 18515;
/// The largest message of `-a` (2^23).
pub const MAX_SIZE: u64 = 1 << 23;
/// Atomic operations move 8 bytes.
pub const ATOMIC_SIZE: u64 = 8;
/// Largest inline size on UD (`MAX_INLINE_UD`).
pub const MAX_INLINE_UD: u32 = 884;

/// What the command line asks for: perftest's options with its defaults and the dependencies
/// between them applied, by concern. The run resolves `device` and `size` against the device
/// and the peer; the other groups pass into it as they are.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Options {
    /// Which test.
    pub(crate) test: Test,
    /// Transport of the QPs.
    pub(crate) conn: Conn,
    /// The peer, and how the QPs reach its QPs.
    pub(crate) connection: Connection,
    /// The device, its port and what perftest decides with them, as asked for.
    pub(crate) device: DeviceOptions,
    /// The message size asked for.
    pub(crate) size: MessageSize,
    /// What is sent: how many or for how long, which way, which atomic operation.
    pub(crate) traffic: Traffic,
    /// QPs, queue depths, completion moderation and post lists.
    pub(crate) queues: Queues,
    /// What is computed and printed beyond the table.
    pub(crate) report: Reporting,
    /// The traffic class and the rate limiter.
    pub(crate) qos: Qos,
    /// Lines perftest prints on stdout while deciding the options.
    pub(crate) notes: String,
    /// Lines perftest prints on stderr while deciding the options.
    pub(crate) stderr_notes: String,
}

/// The peer, and how the QPs reach its QPs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Connection {
    /// The server to connect to (client), or none (server).
    pub(crate) server: Option<String>,
    /// TCP port of the exchange (with `-R`, of rdma_cm).
    pub(crate) port: u16,
    /// `-R`: QPs connected, and the exchange carried, by rdma_cm.
    pub(crate) rdma_cm: bool,
    /// Service level.
    pub(crate) sl: u8,
    /// ACK timeout exponent.
    pub(crate) qp_timeout: u8,
}

impl Connection {
    /// Whether this side is the client.
    pub(crate) fn is_client(&self) -> bool {
        self.server.is_some()
    }
}

/// The device and what perftest decides with it, as asked for: the run resolves these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeviceOptions {
    /// Device name (default: the first device).
    pub(crate) ib_dev: Option<String>,
    /// Port of the device.
    pub(crate) ib_port: u8,
    /// GID index asked for (default: perftest's pick on RoCE, none on InfiniBand).
    pub(crate) gid_index: Option<u8>,
    /// `--ipv6`: perftest's pick prefers IPv6 GIDs.
    pub(crate) ipv6: bool,
    /// MTU asked for in bytes (default: the port's active MTU; checked against the device).
    pub(crate) mtu: Option<u32>,
    /// Inline size asked for.
    pub(crate) inline_size: Option<u32>,
    /// Outstanding reads asked for (`-o`).
    pub(crate) out_reads: Option<i64>,
    /// PCIe relaxed ordering on the memory region.
    pub(crate) relaxed_ordering: bool,
}

/// The message size asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MessageSize {
    /// The size; with `-a`, the largest ([`MAX_SIZE`]).
    pub(crate) size: u64,
    /// Whether `-s` was given.
    pub(crate) given: bool,
    /// `-a`: every power of two from 2 up to the largest size.
    pub(crate) all: bool,
}

/// What is sent: how many or for how long, which way, which atomic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Traffic {
    /// Iterations per QP (0 in duration mode, where they are counted).
    pub(crate) iters: u64,
    /// Duration mode (`-D`).
    pub(crate) duration: Option<Timed>,
    /// `-b`: both sides send.
    pub(crate) duplex: bool,
    /// Atomic operation.
    pub(crate) atomic: AtomicOp,
    /// `--perform_warm_up`.
    pub(crate) warm_up: bool,
}

/// Duration mode (`-D`): how long, and the margin at both ends left out of the measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timed {
    /// The run's seconds.
    pub(crate) seconds: u32,
    /// The margin's seconds (`-f`, default a quarter of the run).
    pub(crate) margin: u32,
}

/// QPs, queue depths, completion moderation and post lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Queues {
    /// Number of QPs.
    pub(crate) num_qps: u32,
    /// Send queue depth.
    pub(crate) tx_depth: u32,
    /// Receive queue depth (send tests).
    pub(crate) rx_depth: u32,
    /// Completion moderation: one signaled request per this many.
    pub(crate) cq_mod: u32,
    /// Post list size.
    pub(crate) post_list: u32,
    /// `-e`: sleep on completion events.
    pub(crate) events: bool,
}

/// What is computed and printed beyond the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reporting {
    /// Whether the peak bandwidth is skipped.
    pub(crate) no_peak: bool,
    /// `-H`.
    pub(crate) histogram: bool,
    /// `-U`.
    pub(crate) unsorted: bool,
    /// `--report_gbits`.
    pub(crate) gbits: bool,
    /// `--report-both`.
    pub(crate) report_both: bool,
    /// `--out_json`: the file.
    pub(crate) out_json: Option<String>,
}

/// What the command line asks for: a test, or something to print.
#[derive(Debug)]
pub(crate) enum Command {
    /// Run the test.
    Run(Box<Options>),
    /// Print this on stdout and exit with status 1 (perftest's `-h` and `-V`).
    Print(String),
}

impl Options {
    /// Parses the command line of `test` (program name first).
    pub(crate) fn parse(test: Test, argv: &[OsString]) -> Result<Command> {
        let prog = crate::cli::prog_name(argv, test.name());
        let args = Args::parse(&crate::cli::arg_strings(argv))
            .map_err(|e| Error::new(e.message(&prog)))?;
        if args.help {
            return Ok(Command::Print(Args::help(&prog)));
        }
        if args.version {
            return Ok(Command::Print(format!("Version: {}\n", wire::VERSION)));
        }
        Options::from_args(test, &args).map(|o| Command::Run(Box::new(o)))
    }

    /// Applies perftest's defaults and dependencies to `a`; the errors come in perftest's
    /// order: the choices of test and transport, the numbers, the dependencies.
    pub(crate) fn from_args(test: Test, a: &Args) -> Result<Options> {
        if a.hosts.len() > 1 {
            return Err(Error::new(
                " Invalid Command line. Please check command rerun ",
            ));
        }
        let verb = test.verb();
        let conn = defaults::conn(verb, a)?;
        let atomic = defaults::atomic(verb, a)?;
        defaults::check_features(test, conn, a)?;
        let given = defaults::Given::parse(verb, a)?;
        let qos = qos::Given::parse(a)?;
        let mut o = Options {
            test,
            conn,
            connection: Connection::new(a, &given),
            device: DeviceOptions::new(test, a, &given),
            size: MessageSize::new(test, a, &given),
            traffic: Traffic::new(test, a, &given, atomic),
            queues: Queues::new(test, a, &given),
            report: Reporting::new(a),
            qos: Qos {
                tclass: 0,
                rate_limit: None,
            },
            notes: String::new(),
            stderr_notes: String::new(),
        };
        o.force_dependencies(&given)?;
        o.rate_limiter(&qos)?;
        Ok(o)
    }
}

impl From<&Options> for Summary {
    /// The options our peer must share.
    fn from(o: &Options) -> Summary {
        let t = &o.traffic;
        let server_takes_part =
            matches!(o.test, Test::SendBw | Test::SendLat | Test::WriteLat) || t.duplex;
        let length = t.duration.map_or(t.iters, |d| d.seconds.into());
        Summary {
            test: o.test,
            conn: o.conn,
            duplex: t.duplex,
            all_sizes: o.size.all,
            duration_mode: t.duration.is_some(),
            size: u32::try_from(o.size.size).unwrap_or(u32::MAX),
            num_qps: u16::try_from(o.queues.num_qps).unwrap_or(u16::MAX),
            length_hash: if server_takes_part {
                wire::length_hash(length)
            } else {
                0
            },
        }
    }
}
