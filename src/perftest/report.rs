//! Everything perftest prints, column for column: the banner, the address lines, the result
//! tables and the `--out_json` file. The layouts are perftest's (fixed-width columns, tabs
//! and all) so that its parsers read ours.

use std::fmt::Write as _;

use super::stats::{c_g, BwReport, LatReport};
use super::types::{AtomicOp, Conn, Test, Verb};
use super::wire::Record;

/// The separator line perftest prints around its tables.
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------\n";

/// What the server prints before it waits for a client.
pub const WAITING: &str = "\n************************************\n* Waiting for client to connect... *\n************************************\n";

const BW_HEADER_MB: &str =
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n";
const BW_HEADER_GB: &str =
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n";
const LAT_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n";
const LAT_HEADER_DURATION: &str = " #bytes        #iterations       t_avg[usec]    tps average\n";

/// What the banner and the JSON file describe.
#[derive(Clone, Debug)]
pub struct Info {
    /// What the options decide.
    pub run: RunInfo,
    /// What the device and the peer decide.
    pub port: PortInfo,
}

/// The options the banner shows.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The test.
    pub test: Test,
    /// Atomic operation (atomic tests).
    pub atomic: AtomicOp,
    /// `-b`.
    pub duplex: bool,
    /// Post list size.
    pub post_list: u32,
    /// `-e`.
    pub events: bool,
    /// Number of QPs.
    pub num_qps: u32,
    /// Transport of the QPs.
    pub conn: Conn,
    /// PCIe relaxed ordering on the memory region.
    pub relaxed_ordering: bool,
    /// `-R`: rdma_cm connects the QPs and carries the exchange.
    pub rdma_cm: bool,
    /// This side is the client.
    pub client: bool,
    /// Send queue depth.
    pub tx_depth: u32,
    /// Receive queue depth.
    pub rx_depth: u32,
    /// Completion moderation.
    pub cq_mod: u32,
}

/// What the banner shows of the device, its port and the connection.
#[derive(Clone, Debug)]
pub struct PortInfo {
    /// Device name.
    pub device: String,
    /// `IB`, `IW` or `Unknown`.
    pub transport: &'static str,
    /// Path MTU in bytes.
    pub mtu: u32,
    /// `IB` or `Ethernet`.
    pub link: &'static str,
    /// GID index in use.
    pub gid_index: Option<u8>,
    /// Inline size.
    pub inline_size: u32,
    /// Outstanding reads (read and atomic tests).
    pub out_reads: u32,
}

impl Info {
    fn verb(&self) -> Verb {
        self.run.test.verb()
    }

    /// The test's title words, such as `RDMA_Write Bidirectional BW`.
    fn title_words(&self) -> Vec<&'static str> {
        let mut words = vec![self.verb().perftest_name()];
        if self.verb() == Verb::Atomic {
            words.push(self.run.atomic.name());
        }
        if self.run.test.is_bw() {
            if self.run.duplex {
                words.push("Bidirectional");
            }
            if self.run.post_list > 1 {
                words.push("Post List");
            }
            words.push("BW");
        } else {
            words.push("Latency");
        }
        words
    }
}

/// perftest's `%#0Nx`: `0x` and zero padding to N characters in all, except that 0 is N
/// zeros without the prefix.
pub fn c_hex(v: u64, width: usize) -> String {
    if v == 0 {
        format!("{:0width$}", 0)
    } else {
        let digits = format!("{v:x}");
        let pad = width.saturating_sub(2 + digits.len());
        format!("0x{}{digits}", "0".repeat(pad))
    }
}

/// One line of the test description, shown in the banner and in the JSON file's
/// `test_info`: perftest's banner label (padded as it pads it) and JSON key for one value.
struct Field {
    label: &'static str,
    key: &'static str,
    value: String,
    /// After the value in the banner only (`[B]`).
    unit: &'static str,
    /// The JSON value is quoted.
    quoted: bool,
    /// The banner puts the next field on this line, after two tabs.
    paired: bool,
}

impl Field {
    fn new(label: &'static str, key: &'static str, value: impl ToString) -> Field {
        Field {
            label,
            key,
            value: value.to_string(),
            unit: "",
            quoted: false,
            paired: false,
        }
    }

    fn unit(self, unit: &'static str) -> Field {
        Field { unit, ..self }
    }

    fn quoted(self) -> Field {
        Field {
            quoted: true,
            ..self
        }
    }

    fn paired(self) -> Field {
        Field {
            paired: true,
            ..self
        }
    }
}

impl Info {
    /// The fields of the description, in perftest's order, those the test shows.
    fn fields(&self) -> Vec<Field> {
        let (run, port) = (&self.run, &self.port);
        let mut f = vec![
            Field::new("Dual-port       ", "Dual_port", "OFF").paired(),
            Field::new("Device         ", "Device", &port.device).quoted(),
            Field::new("Number of qps   ", "Number_of_qps", run.num_qps).paired(),
            Field::new("Transport type ", "Transport_type", port.transport),
            Field::new("Connection type ", "Connection_type", run.conn.name()).paired(),
            Field::new("Using SRQ      ", "Using_SRQ", "OFF"),
            Field::new(
                "PCIe relax order",
                "PCIe_relax_order",
                on_off(run.relaxed_ordering),
            ),
            Field::new("ibv_wr* API     ", "ibv_wr_API", "OFF"),
        ];
        if run.client || run.duplex {
            f.push(Field::new("TX depth        ", "TX_depth ", run.tx_depth));
        }
        if run.post_list > 1 {
            f.push(Field::new("Post List       ", "Post_List", run.post_list));
        }
        if self.verb() == Verb::Send && (!run.client || run.duplex) {
            f.push(Field::new("RX depth        ", "RX_depth", run.rx_depth));
        }
        if run.test.is_bw() {
            f.push(Field::new("CQ Moderation   ", "CQ_Moderation", run.cq_mod));
        }
        f.push(Field::new("Mtu             ", "Mtu", port.mtu).unit("[B]"));
        f.push(Field::new("Link type       ", "Link_type", port.link));
        if let Some(g) = port.gid_index {
            f.push(Field::new("GID index       ", "GID_index", g));
        }
        if matches!(self.verb(), Verb::Read | Verb::Atomic) {
            f.push(Field::new(
                "Outstand reads  ",
                "Outstand_reads",
                port.out_reads,
            ));
        } else {
            f.push(Field::new("Max inline data ", "Max_inline_data", port.inline_size).unit("[B]"));
        }
        let (cm, method) = if run.rdma_cm {
            ("ON", "rdma_cm")
        } else {
            ("OFF", "Ethernet")
        };
        f.push(Field::new("rdma_cm QPs\t ", "rdma_cm_QPs", cm));
        f.push(Field::new("Data ex. method ", "Data_ex_method", method));
        f
    }
}

/// The test description between two separator lines (`ctx_print_test_info`).
pub fn banner(i: &Info) -> String {
    let mut s = String::new();
    s.push_str(RESULT_LINE);
    let _ = writeln!(s, "                    {} Test", i.title_words().join(" "));
    if i.run.events {
        let _ = writeln!(s, " Test with events. Using {}_comp0", i.port.device);
    }
    let mut line_open = false;
    for f in i.fields() {
        if !line_open {
            s.push(' ');
        }
        let _ = write!(s, "{}: {}{}", f.label, f.value, f.unit);
        line_open = f.paired;
        s.push_str(if f.paired { "\t\t" } else { "\n" });
    }
    if i.run.rdma_cm && !i.run.client {
        s.push_str(RESULT_LINE);
        s.push_str(" Waiting for client rdma_cm QP to connect\n");
        s.push_str(" Please run the same command with the IB/RoCE interface IP\n");
    }
    s.push_str(RESULT_LINE);
    s
}

fn on_off(b: bool) -> &'static str {
    if b {
        "ON"
    } else {
        "OFF"
    }
}

/// One side's address lines (`ctx_print_pingpong_data`): `side` is `local` or `remote`.
pub fn address(side: &str, r: &Record, verb: Verb) -> String {
    let mut s = format!(
        " {side} address: LID {} QPN {} PSN {}",
        c_hex(r.lid.into(), 4),
        c_hex(r.qpn.into(), 6),
        c_hex(r.psn.into(), 6)
    );
    if verb == Verb::Read {
        let _ = write!(s, " OUT {}", c_hex(r.out_reads.into(), 4));
    }
    if matches!(verb, Verb::Read | Verb::Write) {
        let _ = write!(
            s,
            " RKey {} VAddr {}",
            c_hex(r.rkey.into(), 8),
            c_hex(r.vaddr, 16)
        );
    }
    s.push('\n');
    if let Some(gid) = r.gid {
        let bytes: Vec<String> = gid.octets().iter().map(|b| format!("{b:02}")).collect();
        let _ = writeln!(s, " GID: {}", bytes.join(":"));
    }
    s
}

/// The header of the bandwidth table, after a separator.
pub fn bw_header(gbits: bool) -> String {
    format!(
        "{RESULT_LINE}{}",
        if gbits { BW_HEADER_GB } else { BW_HEADER_MB }
    )
}

/// The header of the latency table, after a separator.
pub fn lat_header(duration: bool) -> String {
    format!(
        "{RESULT_LINE}{}",
        if duration {
            LAT_HEADER_DURATION
        } else {
            LAT_HEADER
        }
    )
}

/// Whether perftest switches to six decimals: Gb/s below 0.1.
fn fine(r: &BwReport, gbits: bool) -> bool {
    gbits && r.bw_avg < 0.1
}

/// A bandwidth result line (`REPORT_FMT`, or `REPORT_FMT_EXT` for small Gb/s values).
pub fn bw_line(r: &BwReport, gbits: bool) -> String {
    if fine(r, gbits) {
        format!(
            " {:<7}    {}           {:<7.6}            {:<7.6}            {:<7.6}\n",
            r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate
        )
    } else {
        format!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t   {:<7.6}\n",
            r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate
        )
    }
}

/// A latency result line (`REPORT_FMT_LAT`).
pub fn lat_line(size: u64, iters: u64, r: &LatReport) -> String {
    format!(
        " {:<7} {}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}\n",
        size, iters, r.t_min, r.t_max, r.t_typical, r.t_avg, r.t_stdev, r.p99, r.p999
    )
}

/// A latency result line of duration mode (`REPORT_FMT_LAT_DUR`).
pub fn lat_duration_line(size: u64, iters: u64, latency: f64, tps: f64) -> String {
    format!(" {size:<7}       {iters}            {latency:<7.2}        {tps:<7.2}\n")
}

/// Samples for `-H` / `-U`: a title, then `index, value` with C's `%g`.
pub fn samples(values: &[f64]) -> String {
    let mut s = String::from("#, usec\n");
    for (i, v) in values.iter().enumerate() {
        let _ = writeln!(s, "{}, {}", i + 1, c_g(*v));
    }
    s
}

/// The `test_info` block of the `--out_json` file.
fn json_info(i: &Info) -> String {
    let mut s = String::from("test_info: {\n");
    let _ = writeln!(
        s,
        "test: {}_Test,",
        i.title_words().join("_").replace(' ', "_")
    );
    if i.run.events {
        let _ = writeln!(s, "Test with events: Using_{}_comp0,", i.port.device);
    }
    for f in i.fields() {
        if f.quoted {
            let _ = writeln!(s, "{}: \"{}\",", f.key, f.value);
        } else {
            let _ = writeln!(s, "{}: {},", f.key, f.value);
        }
    }
    s.push_str("},\n");
    s
}

/// An `--out_json` file: the test's description, then `results` (key, value).
fn json_file(i: &Info, results: &[(&str, String)]) -> String {
    let mut s = format!("{{\n{}results: {{\n", json_info(i));
    for (key, value) in results {
        let _ = writeln!(s, "{key}: {value},");
    }
    s.push_str("},\n}\n");
    s
}

/// The `--out_json` file of a bandwidth result.
pub fn json_bw(i: &Info, r: &BwReport, gbits: bool) -> String {
    let bw = |v: f64| {
        if fine(r, gbits) {
            format!("{v:.6}")
        } else {
            format!("{v:.2}")
        }
    };
    json_file(
        i,
        &[
            ("MsgSize", r.size.to_string()),
            ("n_iterations", r.iters.to_string()),
            ("BW_peak", bw(r.bw_peak)),
            ("BW_average", bw(r.bw_avg)),
            ("MsgRate", format!("{:.6}", r.msg_rate)),
        ],
    )
}

/// The `--out_json` file of a latency result.
pub fn json_lat(i: &Info, size: u64, iters: u64, r: &LatReport) -> String {
    let usec = |v: f64| format!("{v:.2}");
    json_file(
        i,
        &[
            ("MsgSize", size.to_string()),
            ("n_iterations", iters.to_string()),
            ("t_min", usec(r.t_min)),
            ("t_max", usec(r.t_max)),
            ("t_typical", usec(r.t_typical)),
            ("t_avg", usec(r.t_avg)),
            ("t_stdev", usec(r.t_stdev)),
            ("percentile_99", usec(r.p99)),
            ("percentile_99.9", usec(r.p999)),
        ],
    )
}

/// The `--out_json` file of a duration-mode latency result.
pub fn json_lat_duration(i: &Info, size: u64, iters: u64, latency: f64, tps: f64) -> String {
    json_file(
        i,
        &[
            ("MsgSize", size.to_string()),
            ("n_iterations", iters.to_string()),
            ("t_avg", format!("{latency:.2}")),
            ("tps_average", format!("{tps:.2}")),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(test: Test, client: bool) -> Info {
        Info {
            run: RunInfo {
                test,
                atomic: AtomicOp::FetchAndAdd,
                duplex: false,
                post_list: 1,
                events: false,
                num_qps: 1,
                conn: Conn::Rc,
                relaxed_ordering: true,
                rdma_cm: false,
                client,
                tx_depth: 100,
                rx_depth: 100,
                cq_mod: 100,
            },
            port: PortInfo {
                device: "rxe0".into(),
                transport: "IB",
                mtu: 4096,
                link: "Ethernet",
                gid_index: Some(1),
                inline_size: 0,
                out_reads: 128,
            },
        }
    }

    // Output of Debian's ib_write_bw -n 100 -s 4096 (server) on rxe0.
    const C_WRITE_BW_SERVER: &str =
        "---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : rxe0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 PCIe relax order: ON
 ibv_wr* API     : OFF
 CQ Moderation   : 100
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 1
 Max inline data : 0[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
";

    #[test]
    fn banners_match_perftest() {
        assert_eq!(banner(&info(Test::WriteBw, false)), C_WRITE_BW_SERVER);
        let mut client = info(Test::WriteBw, true);
        client.run.post_list = 10;
        client.run.cq_mod = 10;
        let b = banner(&client);
        assert!(b.contains("RDMA_Write Post List BW Test\n"));
        assert!(
            b.contains(" TX depth        : 100\n Post List       : 10\n CQ Moderation   : 10\n")
        );
        let b = banner(&info(Test::AtomicLat, true));
        assert!(b.contains("                    Atomic FETCH_AND_ADD Latency Test\n"));
        assert!(b.contains(" TX depth        : 100\n Mtu "));
        assert!(b.contains(" Outstand reads  : 128\n"));
        let b = banner(&info(Test::SendLat, false));
        assert!(b.contains(" RX depth        : 100\n Mtu "));
        assert!(!b.contains("CQ Moderation"));
        let mut cm = info(Test::WriteBw, false);
        cm.run.rdma_cm = true;
        assert!(banner(&cm).ends_with(&format!(
            " rdma_cm QPs\t : ON\n Data ex. method : rdma_cm\n{RESULT_LINE} Waiting for client rdma_cm QP to connect\n Please run the same command with the IB/RoCE interface IP\n{RESULT_LINE}"
        )));
        cm.run.client = true;
        assert!(banner(&cm).ends_with(&format!(
            " rdma_cm QPs\t : ON\n Data ex. method : rdma_cm\n{RESULT_LINE}"
        )));
    }

    #[test]
    fn address_lines_match_perftest() {
        let r = Record {
            lid: 0,
            out_reads: 0x80,
            qpn: 0x1d,
            psn: 0xd625e1,
            rkey: 0xba6,
            vaddr: 0x55d3ae5ae000,
            gid: Some("::ffff:127.0.0.1".parse().unwrap()),
            srqn: 0,
        };
        assert_eq!(
            address("local", &r, Verb::Read),
            " local address: LID 0000 QPN 0x001d PSN 0xd625e1 OUT 0x80 RKey 0x000ba6 VAddr 0x0055d3ae5ae000\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:01\n"
        );
        let r = Record { psn: 0x36395, ..r };
        assert_eq!(
            address("remote", &r, Verb::Send),
            " remote address: LID 0000 QPN 0x001d PSN 0x36395\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:127:00:00:01\n"
        );
        assert_eq!(c_hex(0, 6), "000000");
        assert_eq!(c_hex(0x1b32, 8), "0x001b32");
    }

    #[test]
    fn result_lines_match_perftest() {
        let r = BwReport {
            size: 4096,
            iters: 100,
            bw_peak: 53.3,
            bw_avg: 23.27,
            msg_rate: 0.005956,
        };
        assert_eq!(
            bw_line(&r, false),
            " 4096       100              53.30              23.27  \t\t   0.005956\n"
        );
        assert_eq!(
            format!("{}{}", bw_header(true), bw_line(&BwReport { size: 65536, iters: 2400, bw_peak: 0.0, bw_avg: 0.63, msg_rate: 0.001199 }, true)),
            format!("{RESULT_LINE} #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      2400             0.00               0.63   \t\t   0.001199\n")
        );
        let small = BwReport { bw_avg: 0.05, ..r };
        assert_eq!(
            bw_line(&small, true),
            " 4096       100           53.300000            0.050000            0.005956\n"
        );
        let l = LatReport {
            t_min: 10.72,
            t_max: 121.34,
            t_typical: 10.94,
            t_avg: 11.05,
            t_stdev: 0.38,
            p99: 121.34,
            p999: 121.34,
            ..LatReport::default()
        };
        assert_eq!(
            lat_line(2, 100, &l),
            " 2       100          10.72          121.34       10.94    \t       11.05       \t0.38   \t\t121.34  \t\t121.34 \n"
        );
        assert_eq!(
            lat_duration_line(2, 1056, 951.34, 525.57),
            " 2             1056            951.34         525.57 \n"
        );
        assert_eq!(
            samples(&[10.7162, 11.272]),
            "#, usec\n1, 10.7162\n2, 11.272\n"
        );
    }

    // Debian's ib_write_bw -n 100 --out_json (server side).
    const C_JSON_BW: &str = "{\ntest_info: {\ntest: RDMA_Write_BW_Test,\nDual_port: OFF,\nDevice: \"rxe0\",\nNumber_of_qps: 1,\nTransport_type: IB,\nConnection_type: RC,\nUsing_SRQ: OFF,\nPCIe_relax_order: ON,\nibv_wr_API: OFF,\nCQ_Moderation: 1,\nMtu: 4096,\nLink_type: Ethernet,\nGID_index: 1,\nMax_inline_data: 0,\nrdma_cm_QPs: OFF,\nData_ex_method: Ethernet,\n},\nresults: {\nMsgSize: 65536,\nn_iterations: 100,\nBW_peak: 60.04,\nBW_average: 38.84,\nMsgRate: 0.000621,\n},\n}\n";

    #[test]
    fn json_matches_perftest() {
        let mut i = info(Test::WriteBw, false);
        i.run.cq_mod = 1;
        let r = BwReport {
            size: 65536,
            iters: 100,
            bw_peak: 60.04,
            bw_avg: 38.84,
            msg_rate: 0.000621,
        };
        assert_eq!(json_bw(&i, &r, false), C_JSON_BW);
        let l = json_lat(&info(Test::SendLat, false), 2, 100, &LatReport::default());
        assert!(l.starts_with("{\ntest_info: {\ntest: Send_Latency_Test,\n"));
        assert!(l.contains("RX_depth: 100,\nMtu: 4096,\n"));
        assert!(l.ends_with("percentile_99: 0.00,\npercentile_99.9: 0.00,\n},\n}\n"));
    }
}
