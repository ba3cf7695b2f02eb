//! The options by concern, each with perftest's defaults: the choices of transport and
//! atomic operation and the features the test allows, the numbers as given (checked
//! against their ranges), then each group of [`Options`](super::Options).

use super::number::{number, parse_size};
use super::{
    Args, Connection, DeviceOptions, MessageSize, Queues, Reporting, Timed, Traffic, ATOMIC_SIZE,
    DEFAULT_PORT,
};
use crate::perftest::report::RESULT_LINE;
use crate::perftest::types::{AtomicOp, Conn, Error, Result, Test, Verb};

/// Default receive depth of send tests (`DEF_RX_SEND`).
pub(super) const DEFAULT_RX_SEND: u32 = 512;

/// `-c`: the transport, which the verb must allow.
pub(super) fn conn(verb: Verb, a: &Args) -> Result<Conn> {
    match a.connection.as_deref() {
        None | Some("RC") => Ok(Conn::Rc),
        Some("UC") if matches!(verb, Verb::Read | Verb::Atomic) => Err(Error::new(
            " UC connection not possible in READ/ATOMIC verbs",
        )),
        Some("UC") => Ok(Conn::Uc),
        Some("UD") if verb != Verb::Send => {
            Err(Error::new(" UD connection only possible in SEND verb"))
        }
        Some("UD") => Ok(Conn::Ud),
        Some(other @ ("XRC" | "DC" | "SRD" | "RawEth")) => Err(Error::new(format!(
            " Connection type {other} is not supported by this implementation (RC, UC, UD)"
        ))),
        Some(_) => Err(Error::new(
            " Invalid Connection type. Please choose from {RC,UC,UD}",
        )),
    }
}

/// `-A`: the atomic operation, of the atomic tests only.
pub(super) fn atomic(verb: Verb, a: &Args) -> Result<AtomicOp> {
    match a.atomic_type.as_deref() {
        None => Ok(AtomicOp::FetchAndAdd),
        Some(_) if verb != Verb::Atomic => Err(Error::new(
            " You are not running the atomic_lat/bw test!\n To change the atomic action type, you must run one of the atomic tests",
        )),
        Some("CMP_AND_SWAP") => Ok(AtomicOp::CmpAndSwap),
        Some("FETCH_AND_ADD") => Ok(AtomicOp::FetchAndAdd),
        Some(_) => Err(Error::new(
            " Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}",
        )),
    }
}

/// The options that only some tests or transports take, refused elsewhere.
pub(super) fn check_features(test: Test, conn: Conn, a: &Args) -> Result<()> {
    let verb = test.verb();
    let bw = test.is_bw();
    let rdma_read = matches!(verb, Verb::Read | Verb::Atomic);
    let refusal = if a.rdma_cm && conn == Conn::Uc {
        format!("{RESULT_LINE} UC is not supported in librdmacm")
    } else if a.events && verb == Verb::Write {
        " Events feature not available on WRITE verb".to_owned()
    } else if a.bidirectional && !bw {
        " Bidirectional is only available in BW test".to_owned()
    } else if a.no_peak && !bw {
        " NoPeak only valid for BW tests".to_owned()
    } else if (a.histogram || a.unsorted) && bw {
        " Available only on Latency tests".to_owned()
    } else if a.qp.is_some() && !bw {
        " Multiple QPs only available on bw tests".to_owned()
    } else if a.inline_size.is_some() && rdma_read {
        " Inline feature not available on READ/Atomic verbs".to_owned()
    } else if a.outs.is_some() && !rdma_read {
        " Setting Outstanding reads only available on READ verb".to_owned()
    } else {
        return Ok(());
    };
    Err(Error::new(refusal))
}

/// The number options as given, each checked against its range in this order (which
/// decides the error of a command line with several bad values).
pub(super) struct Given {
    /// `-p`.
    port: Option<u16>,
    /// `-i`.
    ib_port: Option<u8>,
    /// `-m`.
    mtu: Option<u32>,
    /// `-n`.
    iters: Option<u64>,
    /// `-t`.
    tx_depth: Option<u32>,
    /// `-u`.
    qp_timeout: Option<u8>,
    /// `-S`.
    sl: Option<u8>,
    /// `-x`.
    gid_index: Option<u8>,
    /// `-q`.
    num_qps: Option<u32>,
    /// `-I`.
    inline_size: Option<u32>,
    /// `-o`.
    out_reads: Option<i64>,
    /// `-r`.
    rx_depth: Option<u32>,
    /// `-Q`, which the dependencies tell from the default.
    pub(super) cq_mod: Option<u32>,
    /// `-l`.
    post_list: Option<u32>,
    /// `-D`.
    duration: Option<u32>,
    /// `-f`, which perftest also checks without `-D`.
    pub(super) margin: Option<u32>,
    /// `-s`.
    size: Option<u64>,
}

impl Given {
    /// Reads the numbers of `a`, for a test of `verb`.
    pub(super) fn parse(verb: Verb, a: &Args) -> Result<Given> {
        let int_max = i64::from(i32::MAX);
        let port = number(&a.port, "Port", 1, 65535)?.map(|v| v as u16);
        let ib_port = number(&a.ib_port, "IB Port", 1, 255)?.map(|v| v as u8);
        let mtu = number(&a.mtu, "MTU", 0, int_max)?.map(|v| v as u32);
        let iters = number(&a.iters, "Iteration num", 5, 100_000_000)?.map(|v| v as u64);
        let tx_depth = number(&a.tx_depth, "Tx depth", 1, 15000)?.map(|v| v as u32);
        let qp_timeout = number(&a.qp_timeout, "QP Timeout", 0, 255)?.map(|v| v as u8);
        let sl = number(&a.sl, "Service Level", 0, 15)?.map(|v| v as u8);
        let gid_index = number(&a.gid_index, "Gid index", 0, 64)?.map(|v| v as u8);
        let num_qps = number(&a.qp, "num of Qps", 1, 16384)?.map(|v| v as u32);
        let inline_size = number(&a.inline_size, "Max inline", 0, 912)?.map(|v| v as u32);
        let out_reads = number(&a.outs, "Outstanding Reads", i64::MIN, i64::MAX)?;
        let rx_depth = number(&a.rx_depth, " Rx depth", 1, 16384)?.map(|v| v as u32);
        if verb != Verb::Send && rx_depth.is_some_and(|r| r > 1) {
            return Err(Error::new(" On RDMA verbs rx depth can be only 1"));
        }
        Ok(Given {
            port,
            ib_port,
            mtu,
            iters,
            tx_depth,
            qp_timeout,
            sl,
            gid_index,
            num_qps,
            inline_size,
            out_reads,
            rx_depth,
            cq_mod: number(&a.cq_mod, "CQ moderation", 1, 1024)?.map(|v| v as u32),
            post_list: number(&a.post_list, "Send Post List size", 1, int_max)?.map(|v| v as u32),
            duration: number(&a.duration, "Duration period", 1, int_max)?.map(|v| v as u32),
            margin: number(&a.margin, "Margin", 0, int_max)?.map(|v| v as u32),
            size: a.size.as_deref().map(parse_size).transpose()?,
        })
    }
}

impl Connection {
    /// The server, port, rdma_cm and the QPs' service level and ACK timeout.
    pub(super) fn new(a: &Args, n: &Given) -> Connection {
        Connection {
            server: a.hosts.first().cloned(),
            port: n.port.unwrap_or(DEFAULT_PORT),
            rdma_cm: a.rdma_cm,
            sl: n.sl.unwrap_or(0),
            qp_timeout: n.qp_timeout.unwrap_or(14),
        }
    }
}

impl DeviceOptions {
    /// The device, port and what perftest decides with them; relaxed ordering is off for
    /// `ib_write_lat`.
    pub(super) fn new(test: Test, a: &Args, n: &Given) -> DeviceOptions {
        DeviceOptions {
            ib_dev: a.ib_dev.clone(),
            ib_port: n.ib_port.unwrap_or(1),
            gid_index: n.gid_index,
            ipv6: a.ipv6,
            // 0 asks for the port's active MTU, as no `-m` does.
            mtu: n.mtu.filter(|&m| m != 0),
            inline_size: n.inline_size,
            out_reads: n.out_reads,
            relaxed_ordering: !a.disable_pcie_relaxed && test != Test::WriteLat,
        }
    }
}

impl MessageSize {
    /// `-s`, else 8 bytes for atomics, 64 KiB for bandwidth and 2 bytes for latency; `-a`.
    pub(super) fn new(test: Test, a: &Args, n: &Given) -> MessageSize {
        let default = match test.verb() {
            Verb::Atomic => ATOMIC_SIZE,
            _ if test.is_bw() => 65536,
            _ => 2,
        };
        MessageSize {
            size: n.size.unwrap_or(default),
            given: n.size.is_some(),
            all: a.all,
        }
    }
}

impl Traffic {
    /// Iterations (default 5000 for write bandwidth, else 1000) or a duration (margin: a
    /// quarter of it unless given), direction, atomic operation, warm-up.
    pub(super) fn new(test: Test, a: &Args, n: &Given, atomic: AtomicOp) -> Traffic {
        let iters = if test == Test::WriteBw { 5000 } else { 1000 };
        Traffic {
            iters: n.iters.unwrap_or(iters),
            duration: n.duration.map(|seconds| Timed {
                seconds,
                margin: n.margin.unwrap_or(seconds / 4),
            }),
            duplex: a.bidirectional,
            atomic,
            warm_up: a.perform_warm_up,
        }
    }
}

impl Queues {
    /// QPs (default 1), TX depth (128 for bandwidth, else 1), RX depth (512 for send tests,
    /// else 1), moderation (100), post list (1), events.
    pub(super) fn new(test: Test, a: &Args, n: &Given) -> Queues {
        let send = test.verb() == Verb::Send;
        Queues {
            num_qps: n.num_qps.unwrap_or(1),
            tx_depth: n.tx_depth.unwrap_or(if test.is_bw() { 128 } else { 1 }),
            rx_depth: n.rx_depth.unwrap_or(if send { DEFAULT_RX_SEND } else { 1 }),
            cq_mod: n.cq_mod.unwrap_or(100),
            post_list: n.post_list.unwrap_or(1),
            events: a.events,
        }
    }
}

impl Reporting {
    /// The peak (unless `-N`), samples, units, `--report-both` and the JSON file.
    pub(super) fn new(a: &Args) -> Reporting {
        Reporting {
            no_peak: a.no_peak,
            histogram: a.histogram,
            unsorted: a.unsorted,
            gbits: a.report_gbits,
            report_both: a.report_both,
            out_json: a.out_json.then(|| {
                a.out_json_file
                    .clone()
                    .unwrap_or_else(|| "perftest_out.json".to_owned())
            }),
        }
    }
}
