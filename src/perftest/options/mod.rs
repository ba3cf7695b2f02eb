//! Command line: perftest's options with its meanings, defaults and dependencies between
//! them (`force_dependecies`), up to what needs the device.

mod args;
mod number;

use std::ffi::OsString;
use std::fmt::Write as _;

pub use args::Args;

use super::report::{RunInfo, RESULT_LINE};
use super::stats::BwShape;
use super::types::{AtomicOp, Conn, Error, Result, Test, Verb};
use super::wire::{self, Summary};
use number::{number, parse_size};

/// perftest's default TCP port.
pub const DEFAULT_PORT: u16 = 18515;
/// The largest message of `-a` (2^23).
pub const MAX_SIZE: u64 = 1 << 23;
/// Atomic operations move 8 bytes.
pub const ATOMIC_SIZE: u64 = 8;
/// Above this size, completion moderation is off unless asked for (`MSG_SIZE_CQ_MOD_LIMIT`).
const CQ_MOD_SIZE_LIMIT: u64 = 8192;
/// Default receive depth of send tests (`DEF_RX_SEND`).
const DEFAULT_RX_SEND: u32 = 512;
/// Receive depth cap for UC and UD (`UC_MAX_RX`).
const UC_MAX_RX: u64 = 16000;
/// Above this many iterations the peak is not computed (its cost is quadratic).
const PEAK_ITERS_LIMIT: u64 = 20000;
/// Largest inline size on UD (`MAX_INLINE_UD`).
pub const MAX_INLINE_UD: u32 = 884;

/// Everything the command line decides, with perftest's defaults and dependencies applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Which test.
    pub test: Test,
    /// The server to connect to (client), or none (server).
    pub server: Option<String>,
    /// TCP port.
    pub port: u16,
    /// Device name (default: the first device).
    pub ib_dev: Option<String>,
    /// Port of the device.
    pub ib_port: u8,
    /// MTU asked for in bytes (0: the port's active MTU; checked against the device).
    pub mtu: u32,
    /// Message size.
    pub size: u64,
    /// Whether `-s` was given.
    pub size_given: bool,
    /// Iterations per QP (0 in duration mode, where they are counted).
    pub iters: u64,
    /// Send queue depth.
    pub tx_depth: u32,
    /// Receive queue depth (send tests).
    pub rx_depth: u32,
    /// ACK timeout exponent.
    pub qp_timeout: u8,
    /// Service level.
    pub sl: u8,
    /// GID index asked for.
    pub gid_index: Option<u8>,
    /// `-a`.
    pub all_sizes: bool,
    /// Transport.
    pub conn: Conn,
    /// Number of QPs.
    pub num_qps: u32,
    /// `-e`.
    pub events: bool,
    /// Inline size asked for.
    pub inline_size: Option<u32>,
    /// Outstanding reads asked for (`-o`).
    pub out_reads: Option<i64>,
    /// `-b`.
    pub duplex: bool,
    /// Completion moderation.
    pub cq_mod: u32,
    /// Whether `-Q` was given.
    pub cq_mod_given: bool,
    /// Whether the peak bandwidth is skipped.
    pub no_peak: bool,
    /// `-H`.
    pub histogram: bool,
    /// `-U`.
    pub unsorted: bool,
    /// Atomic operation.
    pub atomic: AtomicOp,
    /// Post list size.
    pub post_list: u32,
    /// Duration mode: seconds.
    pub duration: Option<u32>,
    /// Duration margin in seconds.
    pub margin: u32,
    /// `--report_gbits`.
    pub gbits: bool,
    /// `--report-both`.
    pub report_both: bool,
    /// `--out_json`: the file.
    pub out_json: Option<String>,
    /// `--perform_warm_up`.
    pub warm_up: bool,
    /// `--ipv6`.
    pub ipv6: bool,
    /// PCIe relaxed ordering on the memory region.
    pub relaxed_ordering: bool,
    /// `-R`: QPs connected, and the exchange carried, by rdma_cm.
    pub rdma_cm: bool,
    /// Lines perftest prints on stdout while deciding the parameters.
    pub notes: String,
}

/// What the command line asks for: a test, or something to print.
#[derive(Debug)]
pub enum Command {
    /// Run the test.
    Run(Box<Params>),
    /// Print this on stdout and exit with status 1 (perftest's `-h` and `-V`).
    Print(String),
}

fn bad(msg: impl Into<String>) -> Error {
    Error::new(msg)
}

impl Params {
    /// Parses the command line of `test` (program name first).
    pub fn parse(test: Test, argv: &[OsString]) -> Result<Command> {
        let prog = crate::cli::prog_name(argv, test.name());
        let args =
            Args::parse(&crate::cli::arg_strings(argv)).map_err(|e| bad(e.message(&prog)))?;
        if args.help {
            return Ok(Command::Print(Args::help(&prog)));
        }
        if args.version {
            return Ok(Command::Print(format!("Version: {}\n", wire::VERSION)));
        }
        Params::from_args(test, &args).map(|p| Command::Run(Box::new(p)))
    }

    /// Applies perftest's defaults and dependencies to `args`.
    pub fn from_args(test: Test, a: &Args) -> Result<Params> {
        let verb = test.verb();
        let bw = test.is_bw();
        let mut notes = String::new();
        if a.hosts.len() > 1 {
            return Err(bad(" Invalid Command line. Please check command rerun "));
        }
        let conn = match a.connection.as_deref() {
            None | Some("RC") => Conn::Rc,
            Some("UC") => {
                if matches!(verb, Verb::Read | Verb::Atomic) {
                    return Err(bad(" UC connection not possible in READ/ATOMIC verbs"));
                }
                Conn::Uc
            }
            Some("UD") => {
                if verb != Verb::Send {
                    return Err(bad(" UD connection only possible in SEND verb"));
                }
                Conn::Ud
            }
            Some(other @ ("XRC" | "DC" | "SRD" | "RawEth")) => {
                return Err(bad(format!(
                    " Connection type {other} is not supported by this implementation (RC, UC, UD)"
                )))
            }
            Some(_) => {
                return Err(bad(
                    " Invalid Connection type. Please choose from {RC,UC,UD}",
                ))
            }
        };
        let atomic = match a.atomic_type.as_deref() {
            None => AtomicOp::FetchAndAdd,
            Some(_) if verb != Verb::Atomic => {
                return Err(bad(
                    " You are not running the atomic_lat/bw test!\n To change the atomic action type, you must run one of the atomic tests",
                ))
            }
            Some("CMP_AND_SWAP") => AtomicOp::CmpAndSwap,
            Some("FETCH_AND_ADD") => AtomicOp::FetchAndAdd,
            Some(_) => {
                return Err(bad(
                    " Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}",
                ))
            }
        };
        if a.rdma_cm && conn == Conn::Uc {
            return Err(bad(format!(
                "{RESULT_LINE} UC is not supported in librdmacm"
            )));
        }
        if a.events && verb == Verb::Write {
            return Err(bad(" Events feature not available on WRITE verb"));
        }
        if a.bidirectional && !bw {
            return Err(bad(" Bidirectional is only available in BW test"));
        }
        if a.no_peak && !bw {
            return Err(bad(" NoPeak only valid for BW tests"));
        }
        if (a.histogram || a.unsorted) && bw {
            return Err(bad(" Available only on Latency tests"));
        }
        if a.qp.is_some() && !bw {
            return Err(bad(" Multiple QPs only available on bw tests"));
        }
        if a.inline_size.is_some() && matches!(verb, Verb::Read | Verb::Atomic) {
            return Err(bad(" Inline feature not available on READ/Atomic verbs"));
        }
        if a.outs.is_some() && !matches!(verb, Verb::Read | Verb::Atomic) {
            return Err(bad(
                " Setting Outstanding reads only available on READ verb",
            ));
        }

        let port = number(&a.port, "Port", 1, 65535)?.map_or(DEFAULT_PORT, |v| v as u16);
        let ib_port = number(&a.ib_port, "IB Port", 1, 255)?.map_or(1, |v| v as u8);
        let mtu = number(&a.mtu, "MTU", 0, i64::from(i32::MAX))?.map_or(0, |v| v as u32);
        let iters = number(&a.iters, "Iteration num", 5, 100_000_000)?;
        let tx_depth = number(&a.tx_depth, "Tx depth", 1, 15000)?;
        let qp_timeout = number(&a.qp_timeout, "QP Timeout", 0, 255)?.map_or(14, |v| v as u8);
        let sl = number(&a.sl, "Service Level", 0, 15)?.map_or(0, |v| v as u8);
        let gid_index = number(&a.gid_index, "Gid index", 0, 64)?.map(|v| v as u8);
        let num_qps = number(&a.qp, "num of Qps", 1, 16384)?.map_or(1, |v| v as u32);
        let inline_size = number(&a.inline_size, "Max inline", 0, 912)?.map(|v| v as u32);
        let out_reads = number(&a.outs, "Outstanding Reads", i64::MIN, i64::MAX)?;
        let rx_depth = number(&a.rx_depth, " Rx depth", 1, 16384)?;
        if verb != Verb::Send && rx_depth.is_some_and(|r| r > 1) {
            return Err(bad(" On RDMA verbs rx depth can be only 1"));
        }
        let cq_mod = number(&a.cq_mod, "CQ moderation", 1, 1024)?;
        let post_list = number(&a.post_list, "Send Post List size", 1, i64::from(i32::MAX))?
            .map_or(1, |v| v as u32);
        let duration =
            number(&a.duration, "Duration period", 1, i64::from(i32::MAX))?.map(|v| v as u32);
        let margin = number(&a.margin, "Margin", 0, i64::from(i32::MAX))?;
        let size_given = a.size.is_some();
        let mut size = match &a.size {
            Some(s) => parse_size(s)?,
            None if verb == Verb::Atomic => ATOMIC_SIZE,
            None if bw => 65536,
            None => 2,
        };

        let mut p = Params {
            test,
            server: a.hosts.first().cloned(),
            port,
            ib_dev: a.ib_dev.clone(),
            ib_port,
            mtu,
            size,
            size_given,
            iters: iters.map_or(
                if bw && verb == Verb::Write {
                    5000
                } else {
                    1000
                },
                |v| v as u64,
            ),
            tx_depth: tx_depth.map_or(if bw { 128 } else { 1 }, |v| v as u32),
            rx_depth: rx_depth.map_or(
                if verb == Verb::Send {
                    DEFAULT_RX_SEND
                } else {
                    1
                },
                |v| v as u32,
            ),
            qp_timeout,
            sl,
            gid_index,
            all_sizes: a.all,
            conn,
            num_qps,
            events: a.events,
            inline_size,
            out_reads,
            duplex: a.bidirectional,
            cq_mod: cq_mod.map_or(100, |v| v as u32),
            cq_mod_given: cq_mod.is_some(),
            no_peak: a.no_peak,
            histogram: a.histogram,
            unsorted: a.unsorted,
            atomic,
            post_list,
            duration,
            margin: 0,
            gbits: a.report_gbits,
            report_both: a.report_both,
            out_json: a.out_json.then(|| {
                a.out_json_file
                    .clone()
                    .unwrap_or_else(|| "perftest_out.json".to_owned())
            }),
            warm_up: a.perform_warm_up,
            ipv6: a.ipv6,
            relaxed_ordering: !a.disable_pcie_relaxed && test != Test::WriteLat,
            rdma_cm: a.rdma_cm,
            notes: String::new(),
        };

        // force_dependecies, in perftest's order.
        if p.duration.is_none() {
            p.tx_depth = p.tx_depth.min(p.iters as u32);
            if verb == Verb::Send {
                p.rx_depth = p.rx_depth.min(p.iters as u32);
            }
            if matches!(conn, Conn::Ud | Conn::Uc) && p.rx_depth == DEFAULT_RX_SEND {
                p.rx_depth = p.iters.min(UC_MAX_RX) as u32;
            }
        }
        if p.size > CQ_MOD_SIZE_LIMIT && conn != Conn::Ud && !p.all_sizes && !p.events {
            if !p.cq_mod_given {
                p.cq_mod = 1;
            } else if p.cq_mod > 1 {
                notes.push_str(RESULT_LINE);
                notes.push_str("Warning: Large message requested and CQ moderation enabled\n");
                notes.push_str("Warning: It can lead to inaccurate results\n");
            }
        }
        p.cq_mod = p.cq_mod.min(p.tx_depth);
        if p.all_sizes {
            size = MAX_SIZE;
            p.size = size;
        }
        if verb == Verb::Atomic && p.size != ATOMIC_SIZE {
            return Err(bad(format!(
                "{RESULT_LINE}Message size cannot be changed for Atomic tests "
            )));
        }
        if p.post_list > 1 {
            if !bw {
                return Err(bad("Post list is supported in BW tests only"));
            }
            if p.duration.is_none() && p.iters % u64::from(p.post_list) != 0 {
                return Err(bad(
                    "Number of iterations must be a multiple of post list size",
                ));
            }
            if !p.cq_mod_given {
                p.cq_mod = p.post_list;
                notes.push_str(RESULT_LINE);
                notes.push_str(
                    "Post List requested - CQ moderation will be the size of the post list\n",
                );
            } else if p.post_list % p.cq_mod != 0 {
                return Err(bad("Post list size must be a multiple of CQ moderation"));
            }
            // perftest waits for room for a whole list in the send queue, forever.
            if p.post_list > p.tx_depth {
                return Err(bad(format!(
                    "Post list size ({}) must not exceed the TX depth ({})",
                    p.post_list, p.tx_depth
                )));
            }
        }
        if let Some(d) = p.duration {
            p.iters = 0;
            p.no_peak = true;
            if p.events {
                return Err(bad("Duration mode doesn't work with events."));
            }
            if p.all_sizes {
                return Err(bad(
                    "Duration mode currently doesn't support running on all sizes.",
                ));
            }
            p.margin = margin.map_or(d / 4, |m| m as u32);
            if d <= 2 * p.margin {
                return Err(bad("please check that DURATION > 2*MARGIN"));
            }
        } else if let Some(m) = margin {
            // perftest checks the default 5 s duration against a margin given without -D.
            if 5 <= 2 * m {
                return Err(bad("please check that DURATION > 2*MARGIN"));
            }
        }
        if verb == Verb::Send && bw && p.server.is_none() && !p.duplex {
            p.no_peak = true;
        }
        if conn == Conn::Ud && p.inline_size.is_some_and(|i| i > MAX_INLINE_UD) {
            let _ = writeln!(
                notes,
                "{RESULT_LINE}Setting inline size to {MAX_INLINE_UD} (Max inline size in UD)"
            );
            p.inline_size = Some(MAX_INLINE_UD);
        }
        if verb == Verb::Send && p.rx_depth % 2 == 1 && !p.all_sizes {
            p.rx_depth += 1;
        }
        if p.duration.is_none() && p.iters > PEAK_ITERS_LIMIT && bw {
            p.no_peak = true;
        }
        p.notes = notes;
        Ok(p)
    }

    /// Whether this side is the client.
    pub fn is_client(&self) -> bool {
        self.server.is_some()
    }

    /// The message sizes of the run: all powers of two from 2 with `-a` (up to `max`), else
    /// the one size.
    pub fn sizes(&self, max: u64) -> Vec<u64> {
        if self.all_sizes {
            (1..24)
                .map(|i| 1u64 << i)
                .take_while(|&s| s <= max)
                .collect()
        } else {
            vec![self.size]
        }
    }
}

// ---------------------------------------------------------------------------------------
// What the other rooms need of the parameters

impl Params {
    /// How the bandwidth results of messages of `size` bytes are computed.
    pub fn bw_shape(&self, size: u64) -> BwShape {
        BwShape {
            size,
            num_qps: self.num_qps.into(),
            post_list: self.post_list.into(),
            cq_mod: self.cq_mod.into(),
            no_peak: self.no_peak,
            duration: self.duration.is_some(),
            gbits: self.gbits,
        }
    }
}

impl From<&Params> for Summary {
    /// The parameters our peer must share.
    fn from(p: &Params) -> Summary {
        let server_takes_part =
            matches!(p.test, Test::SendBw | Test::SendLat | Test::WriteLat) || p.duplex;
        let length = p.duration.map_or(p.iters, u64::from);
        Summary {
            test: p.test,
            conn: p.conn,
            duplex: p.duplex,
            all_sizes: p.all_sizes,
            duration_mode: p.duration.is_some(),
            size: u32::try_from(p.size).unwrap_or(u32::MAX),
            num_qps: u16::try_from(p.num_qps).unwrap_or(u16::MAX),
            length_hash: if server_takes_part {
                wire::length_hash(length)
            } else {
                0
            },
        }
    }
}

impl From<&Params> for RunInfo {
    /// The options the banner shows.
    fn from(p: &Params) -> RunInfo {
        RunInfo {
            test: p.test,
            atomic: p.atomic,
            duplex: p.duplex,
            post_list: p.post_list,
            events: p.events,
            num_qps: p.num_qps,
            conn: p.conn,
            relaxed_ordering: p.relaxed_ordering,
            rdma_cm: p.rdma_cm,
            client: p.is_client(),
            tx_depth: p.tx_depth,
            rx_depth: p.rx_depth,
            cq_mod: p.cq_mod,
        }
    }
}

#[cfg(test)]
mod tests;
