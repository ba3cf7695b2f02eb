//! The options resolved into the run: what perftest decides with the open device before
//! connecting ([`Setup`]: inline size, outstanding reads, this port's MTU), then with what
//! both sides agree ([`Agreed`]: the path MTU, the sizes UD carries, the GID index), once,
//! into the [`Run`] that the rest of the test reads.

use std::fmt::Write as _;

use crate::cli::Output;
use crate::perftest::options::{
    Connection, Limiter, MessageSize, Options, Qos, Queues, Reporting, Traffic,
};
use crate::perftest::report::{Info, PortInfo, RunInfo, RESULT_LINE};
use crate::perftest::stats::BwShape;
use crate::perftest::types::{Conn, Error, Result, Test, Verb};

use super::{Device, Layout};

/// rxe's and siw's vendor IDs: software devices, which perftest's device table does not
/// know (it then turns inline data off).
const SOFTWARE_VENDORS: [u32; 2] = [0x00ff_ffff, 0x0062_6d74];

/// What perftest prints while it decides: on stdout and on stderr.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Said {
    /// On stdout.
    pub(crate) stdout: String,
    /// On stderr.
    pub(crate) stderr: String,
}

/// What perftest decides from the device before connecting (`check_link`, `set_mtu`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Setup {
    /// Inline size of the QPs.
    pub(crate) inline_size: u32,
    /// Outstanding reads/atomics (1 for send and write).
    pub(crate) out_reads: u32,
    /// This port's MTU in bytes, which the exchange offers the peer.
    pub(crate) port_mtu: u32,
    /// What perftest prints meanwhile.
    pub(crate) said: Said,
}

impl Setup {
    /// The inline size, outstanding reads and MTU of the options `o` on `dev`; an error if
    /// the message is larger than the port takes.
    pub(crate) fn new(dev: &Device, o: &Options) -> Result<Setup> {
        let max_msg = u64::from(dev.port.max_msg_sz);
        let size = o.size.size;
        if max_msg > 0 && size > max_msg && o.conn != Conn::Ud {
            return Err(Error::new(format!(
                " Message size {size} is larger than the largest message of port {} of {} ({max_msg} bytes)",
                dev.port_num, dev.name
            )));
        }
        let d = &o.device;
        let software = SOFTWARE_VENDORS.contains(&dev.vendor_id);
        let mut said = Said::default();
        Ok(Setup {
            inline_size: inline_size(o.test, o.conn, d.inline_size, software, &mut said),
            out_reads: out_reads(o.test.verb(), d.out_reads, dev.max_qp_rd_atom, &mut said),
            port_mtu: port_mtu(d.mtu, dev.active_mtu(), &mut said),
            said,
        })
    }
}

/// The inline size: `asked`, else perftest's default for the test (220 write, 236 send,
/// 188 UD send, in latency tests); off on the `software` devices, saying so where it was
/// asked for. Read and atomic tests ask for 0 (perftest sets it before the check).
fn inline_size(test: Test, conn: Conn, asked: Option<u32>, software: bool, said: &mut Said) -> u32 {
    let asked = if matches!(test.verb(), Verb::Read | Verb::Atomic) {
        Some(0)
    } else {
        asked
    };
    if software {
        if asked.is_some() {
            said.stdout.push_str(RESULT_LINE);
            said.stderr
                .push_str("Device not recognized to implement inline feature. Disabling it\n");
        }
        return 0;
    }
    asked.unwrap_or(match (test, conn) {
        (Test::WriteLat, _) => 220,
        (Test::SendLat, Conn::Ud) => 188,
        (Test::SendLat, _) => 236,
        _ => 0,
    })
}

/// Outstanding reads of read and atomic tests: `asked` (`-o`) up to the device's `max`
/// (saying so above it), else the maximum; 1 for the others.
fn out_reads(verb: Verb, asked: Option<i64>, max: u32, said: &mut Said) -> u32 {
    if !matches!(verb, Verb::Read | Verb::Atomic) {
        return 1;
    }
    match asked {
        Some(n) if n > i64::from(max) => {
            said.stdout.push_str(RESULT_LINE);
            let _ = writeln!(
                said.stderr,
                " Number of outstanding reads is above max = {max}"
            );
            said.stderr.push_str(" Changing to that max value\n");
            max
        }
        Some(n) if n > 0 => n as u32,
        _ => max,
    }
}

/// This port's MTU: `asked` (`-m`) if valid and at most the `active` one, else the active
/// one, saying why.
fn port_mtu(asked: Option<u32>, active: u32, said: &mut Said) -> u32 {
    match asked {
        None => active,
        Some(m @ (256 | 512 | 1024 | 2048 | 4096)) if m > active => {
            said.stdout
                .push_str("Requested mtu is higher than active mtu \n");
            let _ = writeln!(said.stdout, "Changing to active mtu - {}", mtu_code(active));
            active
        }
        Some(m @ (256 | 512 | 1024 | 2048 | 4096)) => m,
        Some(m) => {
            let e = &mut said.stderr;
            let _ = writeln!(e, " Invalid MTU - {m} ");
            e.push_str(" Please choose mtu from {256,512,1024,2048,4096}\n");
            let _ = writeln!(
                e,
                " Will run with the port active mtu - {}",
                mtu_code(active)
            );
            active
        }
    }
}

/// perftest's HW rate limiter, which sets the path's static rate and reads it back: a RoCE
/// or iWARP port keeps none, so the limiter falls back to SW (saying so on `out`'s stderr)
/// unless `--rate_limit_type HW` named it, which stays HW for the connect to refuse.
/// Static rates on InfiniBand are not implemented: refused by name.
fn hw_rate_limit(mut qos: Qos, device: &Device, out: &mut Output) -> Result<Qos> {
    let Some(limit) = qos.rate_limit.as_mut() else {
        return Ok(qos);
    };
    let Limiter::Hw { explicit } = limit.limiter else {
        return Ok(qos);
    };
    if !device.ethernet {
        return Err(Error::new(
            " HW rate limit (the path's static rate) is not supported by this implementation on InfiniBand; use --rate_limit_type=SW",
        ));
    }
    if explicit {
        // Refused when the QPs connect (`Prepared::connect`), after the exchange, as
        // perftest's connect refuses it.
        return Ok(qos);
    }
    out.error("\x1b[31mThe QP failed to accept HW rate limit, providing SW rate limit \x1b[0m");
    limit.limiter = Limiter::Sw;
    Ok(qos)
}

/// `enum ibv_mtu` of a size in bytes, as perftest prints it in some messages.
fn mtu_code(bytes: u32) -> u32 {
    bytes.trailing_zeros().saturating_sub(7)
}

/// What both sides settle in the setup exchanges, each side keeping the larger page and
/// cache line and the smaller MTU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Agreed {
    /// Page size: small messages cycle through this much.
    pub(crate) cycle_buffer: usize,
    /// Cache line size.
    pub(crate) cache_line: usize,
    /// Path MTU in bytes.
    pub(crate) mtu: u32,
}

/// The test as it runs: the options resolved against the device and the peer. The groups of
/// options that need neither are the options' own.
pub(crate) struct Run {
    /// Which test.
    pub(crate) test: Test,
    /// Transport of the QPs.
    pub(crate) conn: Conn,
    /// The peer, and how the QPs reach its QPs.
    pub(crate) connection: Connection,
    /// The open device and its port.
    pub(crate) device: Device,
    /// What perftest decides with the device and the peer.
    pub(crate) port: Port,
    /// The message sizes.
    pub(crate) sizes: Sizes,
    /// What is sent: how many or for how long, which way, which atomic operation.
    pub(crate) traffic: Traffic,
    /// QPs, queue depths, completion moderation and post lists.
    pub(crate) queues: Queues,
    /// What is computed and printed beyond the table.
    pub(crate) report: Reporting,
    /// Where things are in the memory region.
    pub(crate) layout: Layout,
    /// The traffic class and the rate limiter (HW resolved: see [`hw_rate_limit`]).
    pub(crate) qos: Qos,
}

/// What perftest decides with the device and the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Port {
    /// GID index: `-x`, else on RoCE perftest's pick; none on InfiniBand without `-x`,
    /// where the records carry no GID.
    pub(crate) gid_index: Option<u8>,
    /// Path MTU in bytes: the smaller of both sides' ports'.
    pub(crate) mtu: u32,
    /// Inline size of the QPs.
    pub(crate) inline_size: u32,
    /// Outstanding reads/atomics (1 for send and write).
    pub(crate) out_reads: u32,
    /// PCIe relaxed ordering on the memory region.
    pub(crate) relaxed_ordering: bool,
}

/// The message sizes of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sizes {
    /// `-a`.
    pub(crate) all: bool,
    /// In the order run: with `-a`, every power of two from 2 up to the largest the
    /// transport carries (UD's path MTU); else the one size.
    pub(crate) list: Vec<u64>,
}

impl Run {
    /// Resolves the options `o` on `device`, with the `setup` made before connecting and
    /// what the peer `agreed` (perftest's `check_mtu` and GID index): UD messages are cut
    /// to the path MTU where their size was not given, saying so on `out`'s stderr.
    pub(crate) fn resolve(
        o: Options,
        device: Device,
        setup: Setup,
        agreed: Agreed,
        out: &mut Output,
    ) -> Result<Run> {
        let (size, cut) = fit_ud_size(o.size, o.conn, agreed.mtu)?;
        if let Some(note) = cut {
            out.error(&note);
        }
        let gid_index = device.gid_index(o.device.gid_index, o.device.ipv6)?;
        let qos = hw_rate_limit(o.qos, &device, out)?;
        // With -a, the size is now the largest the transport carries: MAX_SIZE, or UD's
        // path MTU.
        let ud = o.conn == Conn::Ud;
        let layout = Layout::new(
            size,
            o.queues.num_qps,
            agreed.cache_line,
            agreed.cycle_buffer,
            ud,
        );
        Ok(Run {
            test: o.test,
            conn: o.conn,
            connection: o.connection,
            device,
            port: Port {
                gid_index,
                mtu: agreed.mtu,
                inline_size: setup.inline_size,
                out_reads: setup.out_reads,
                relaxed_ordering: o.device.relaxed_ordering,
            },
            sizes: Sizes {
                all: o.size.all,
                list: size_list(o.size.all, size),
            },
            traffic: o.traffic,
            queues: o.queues,
            report: o.report,
            layout,
            qos,
        })
    }

    /// Whether GIDs are used (RoCE, or `-x`): the records then carry them.
    pub(crate) fn uses_gid(&self) -> bool {
        self.port.gid_index.is_some()
    }

    /// Whether this side sends and so needs address handles on UD.
    pub(crate) fn sends(&self) -> bool {
        self.connection.is_client() || self.traffic.duplex || !self.test.is_bw()
    }

    /// How the bandwidth results of messages of `size` bytes are computed.
    pub(crate) fn bw_shape(&self, size: u64) -> BwShape {
        let q = &self.queues;
        BwShape {
            size,
            num_qps: q.num_qps.into(),
            post_list: q.post_list.into(),
            cq_mod: q.cq_mod.into(),
            no_peak: self.report.no_peak,
            duration: self.traffic.duration.is_some(),
            gbits: self.report.gbits,
        }
    }
}

/// perftest's UD size check: a message larger than the path `mtu` is cut to it where the
/// size was not asked for (or with `-a`), else an error. The size, and the note of a cut.
fn fit_ud_size(asked: MessageSize, conn: Conn, mtu: u32) -> Result<(u64, Option<String>)> {
    if conn != Conn::Ud || asked.size <= u64::from(mtu) {
        return Ok((asked.size, None));
    }
    if asked.all || !asked.given {
        let note = format!(" Max msg size in UD is MTU {mtu}\n Changing to this MTU");
        Ok((mtu.into(), Some(note)))
    } else {
        Err(Error::new(
            " Max message size in UD cannot be greater than MTU ",
        ))
    }
}

/// The sizes of a run up to `largest`: every power of two from 2 with `-a` (`all`), else
/// `largest` alone.
fn size_list(all: bool, largest: u64) -> Vec<u64> {
    if all {
        (1..u64::BITS)
            .map(|i| 1u64 << i)
            .take_while(|&s| s <= largest)
            .collect()
    } else {
        vec![largest]
    }
}

impl From<&Run> for Info {
    /// What the banner and the JSON file describe.
    fn from(r: &Run) -> Info {
        let q = &r.queues;
        Info {
            run: RunInfo {
                test: r.test,
                atomic: r.traffic.atomic,
                duplex: r.traffic.duplex,
                post_list: q.post_list,
                events: q.events,
                num_qps: q.num_qps,
                conn: r.conn,
                relaxed_ordering: r.port.relaxed_ordering,
                rdma_cm: r.connection.rdma_cm,
                client: r.connection.is_client(),
                tx_depth: q.tx_depth,
                rx_depth: q.rx_depth,
                cq_mod: q.cq_mod,
            },
            port: PortInfo {
                device: r.device.name.clone(),
                transport: r.device.transport,
                mtu: r.port.mtu,
                link: r.device.link(),
                gid_index: r.port.gid_index,
                inline_size: r.port.inline_size,
                out_reads: r.port.out_reads,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perftest::options::MAX_SIZE;

    #[test]
    fn inline_like_perftest() {
        let inline = |test, conn, asked, software| {
            let mut said = Said::default();
            let size = inline_size(test, conn, asked, software, &mut said);
            (size, said.stdout.is_empty() && said.stderr.is_empty())
        };
        assert_eq!(inline(Test::WriteLat, Conn::Rc, None, false), (220, true));
        assert_eq!(inline(Test::SendLat, Conn::Ud, None, false), (188, true));
        assert_eq!(inline(Test::SendLat, Conn::Uc, None, false), (236, true));
        assert_eq!(inline(Test::SendBw, Conn::Rc, None, false), (0, true));
        assert_eq!(inline(Test::SendBw, Conn::Rc, Some(64), false), (64, true));
        assert_eq!(inline(Test::WriteLat, Conn::Rc, None, true), (0, true));
        // Asked for on a software device (read tests always ask, for 0): off, and said.
        let mut said = Said::default();
        assert_eq!(
            inline_size(Test::ReadLat, Conn::Rc, None, true, &mut said),
            0
        );
        assert_eq!(said.stdout, RESULT_LINE);
        assert_eq!(
            said.stderr,
            "Device not recognized to implement inline feature. Disabling it\n"
        );
    }

    #[test]
    fn out_reads_like_perftest() {
        let mut said = Said::default();
        assert_eq!(out_reads(Verb::Write, Some(4), 16, &mut said), 1);
        assert_eq!(out_reads(Verb::Read, None, 16, &mut said), 16);
        assert_eq!(out_reads(Verb::Atomic, Some(4), 16, &mut said), 4);
        assert_eq!(out_reads(Verb::Read, Some(0), 16, &mut said), 16);
        assert_eq!(out_reads(Verb::Read, Some(-3), 16, &mut said), 16);
        assert_eq!(said, Said::default());
        assert_eq!(out_reads(Verb::Read, Some(17), 16, &mut said), 16);
        assert_eq!(said.stdout, RESULT_LINE);
        assert_eq!(
            said.stderr,
            " Number of outstanding reads is above max = 16\n Changing to that max value\n"
        );
    }

    #[test]
    fn port_mtu_like_perftest() {
        let mut said = Said::default();
        assert_eq!(port_mtu(None, 1024, &mut said), 1024);
        assert_eq!(port_mtu(Some(512), 1024, &mut said), 512);
        assert_eq!(said, Said::default());
        assert_eq!(port_mtu(Some(4096), 1024, &mut said), 1024);
        assert_eq!(
            said.stdout,
            "Requested mtu is higher than active mtu \nChanging to active mtu - 3\n"
        );
        let mut said = Said::default();
        assert_eq!(port_mtu(Some(1000), 2048, &mut said), 2048);
        assert_eq!(said.stdout, "");
        assert_eq!(
            said.stderr,
            " Invalid MTU - 1000 \n Please choose mtu from {256,512,1024,2048,4096}\n Will run with the port active mtu - 4\n"
        );
    }

    #[test]
    fn ud_sizes_fit_the_path_mtu() {
        let size = |size, given, all| MessageSize { size, given, all };
        // Other transports, and UD messages that fit, keep their size.
        assert_eq!(
            fit_ud_size(size(65536, false, false), Conn::Rc, 1024).unwrap(),
            (65536, None)
        );
        assert_eq!(
            fit_ud_size(size(1024, true, false), Conn::Ud, 1024).unwrap(),
            (1024, None)
        );
        // A default size or -a is cut, with a note; a size given is an error.
        let note = Some(" Max msg size in UD is MTU 1024\n Changing to this MTU".to_owned());
        assert_eq!(
            fit_ud_size(size(65536, false, false), Conn::Ud, 1024).unwrap(),
            (1024, note.clone())
        );
        assert_eq!(
            fit_ud_size(size(MAX_SIZE, true, true), Conn::Ud, 1024).unwrap(),
            (1024, note)
        );
        let err = fit_ud_size(size(1025, true, false), Conn::Ud, 1024).unwrap_err();
        assert_eq!(
            err.to_string(),
            " Max message size in UD cannot be greater than MTU "
        );
    }

    #[test]
    fn size_lists() {
        assert_eq!(size_list(false, 65536), [65536]);
        assert_eq!(size_list(true, 4096).len(), 12);
        assert_eq!(size_list(true, 4096)[..3], [2, 4, 8]);
        assert_eq!(size_list(true, MAX_SIZE).len(), 23);
        assert_eq!(size_list(true, MAX_SIZE).last(), Some(&MAX_SIZE));
    }
}
