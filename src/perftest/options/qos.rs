//! perftest's traffic class and rate limiter options (`--tclass`, `--rate_limit`,
//! `--rate_units`, `--rate_limit_type`, `--burst_size`, `--typical_pkt_size`): read as
//! perftest's option loop reads them, then its `force_dependecies` checks of the limiter.

use std::fmt::Write as _;

use super::number::number;
use super::{Args, Options};
use crate::perftest::report::RESULT_LINE;
use crate::perftest::types::{Error, Result, Verb};

/// The units of `--rate_units`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RateUnits {
    /// `M`: MiB/s.
    MiBps,
    /// `g`: Gb/s (10^9 bit/s), the default.
    Gbps,
    /// `p`: messages per second.
    Pps,
}

/// Which limiter `--rate_limit_type` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limiter {
    /// `HW`: the path's static rate (`ah_attr.static_rate`); the default with
    /// `--rate_limit`. `explicit`: named by `--rate_limit_type`, so that a QP refusing it
    /// fails the run instead of falling back to [`Limiter::Sw`].
    Hw { explicit: bool },
    /// `SW`: the sender waits between bursts of posts.
    Sw,
    /// `PP`: packet pacing (`ibv_modify_qp_rate_limit`), Raw Ethernet QPs only.
    Pp,
}

/// The rate limiter of a run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RateLimit {
    /// Which limiter.
    pub(crate) limiter: Limiter,
    /// `--rate_limit` as given (0 without), in `units`.
    pub(crate) rate: f64,
    /// Its units.
    pub(crate) units: RateUnits,
    /// Messages per burst (`--burst_size`, default the TX depth).
    pub(crate) burst: u32,
}

impl RateLimit {
    /// Messages per second of `size` bytes that the rate allows (perftest's
    /// `rate_limit_pps`).
    pub(crate) fn per_second(&self, size: u64) -> f64 {
        let size = size.max(1) as f64;
        match self.units {
            RateUnits::MiBps => self.rate / size * 1_048_576.0,
            RateUnits::Gbps => self.rate / (size * 8.0) * 1e9,
            RateUnits::Pps => self.rate,
        }
    }
}

/// The traffic class and the rate limiter.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Qos {
    /// Traffic class of the GRH (`--tclass`).
    pub(crate) tclass: u8,
    /// The rate limiter, if any.
    pub(crate) rate_limit: Option<RateLimit>,
}

/// perftest's static rates (`enum ibv_rate`) by the text of `--rate_limit` in Gb/s.
const STATIC_RATES: [&str; 22] = [
    "2.5", "5", "10", "14", "20", "25", "28", "30", "40", "50", "56", "60", "80", "100", "112",
    "120", "168", "200", "300", "400", "600", "MAX",
];

/// What the option loop makes of the limiter's options, before the dependencies.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Given {
    tclass: u8,
    /// `--rate_limit` as typed and its value.
    rate: Option<(String, f64)>,
    units: RateUnits,
    /// The limiter named by `--rate_limit_type`.
    limiter: Option<Limiter>,
    burst: Option<u32>,
    typical_pkt_size: Option<u16>,
}

impl Given {
    /// Reads the options of `a`, with perftest's messages for bad values.
    pub(super) fn parse(a: &Args) -> Result<Given> {
        let tclass = number(&a.tclass, "traffic class", 0, 255)?.map_or(0, |v| v as u8);
        let rate = match &a.rate_limit {
            None => None,
            Some(text) => match text.trim().parse::<f64>() {
                Ok(v) if v > 0.0 && v.is_finite() => Some((text.clone(), v)),
                _ => {
                    return Err(Error::new(
                        " Rate limit must be non-negative floating point number",
                    ))
                }
            },
        };
        let units = match a.rate_units.as_deref() {
            None | Some("g") => RateUnits::Gbps,
            Some("M") => RateUnits::MiBps,
            Some("p") => RateUnits::Pps,
            Some(_) => return Err(Error::new(" Invalid rate limit units. Please use M,g or p")),
        };
        let limiter = match a.rate_limit_type.as_deref() {
            None => None,
            Some("HW") => Some(Limiter::Hw { explicit: true }),
            Some("SW") => Some(Limiter::Sw),
            Some("PP") => Some(Limiter::Pp),
            Some(_) => {
                return Err(Error::new(
                    " Invalid rate limit type flag. Please use HW, SW or PP.",
                ))
            }
        };
        let burst = number(&a.burst_size, "Burst size", 0, i64::from(i32::MAX))?;
        let typical = number(&a.typical_pkt_size, "Typical pkt size", 0, 0xFFFF)?;
        Ok(Given {
            tclass,
            rate,
            units,
            limiter,
            burst: burst.map(|v| v as u32),
            typical_pkt_size: typical.map(|v| v as u16),
        })
    }
}

impl Options {
    /// perftest's checks of the rate limiter (in `force_dependecies`' order), with the
    /// burst size defaulting to the TX depth: the QoS settings of the run.
    pub(super) fn rate_limiter(&mut self, g: &Given) -> Result<()> {
        self.qos.tclass = g.tclass;
        // --rate_limit alone asks for the HW limiter.
        let limiter = g
            .limiter
            .or(g.rate.as_ref().map(|_| Limiter::Hw { explicit: false }));
        let burst = g.burst.filter(|&b| b > 0);
        let Some(limiter) = limiter else {
            if burst.is_some() {
                return Err(Error::new(format!(
                    "{RESULT_LINE} Can't enable burst mode when rate limiter is off"
                )));
            }
            if g.typical_pkt_size.is_some_and(|t| t > 0) {
                return Err(typical_not_pp());
            }
            return Ok(());
        };
        let tx_depth = self.queues.tx_depth;
        if burst.is_none() && limiter == Limiter::Sw {
            let _ = writeln!(
                self.stderr_notes,
                " Setting burst size to tx depth = {tx_depth}"
            );
        }
        if g.typical_pkt_size.is_some_and(|t| t > 0) && limiter != Limiter::Pp {
            return Err(typical_not_pp());
        }
        let rate = g.rate.as_ref().map_or(0.0, |r| r.1);
        match limiter {
            Limiter::Sw => {
                let verb = self.test.verb();
                if !self.test.is_bw()
                    || verb == Verb::Atomic
                    || (verb == Verb::Send && self.traffic.duplex)
                {
                    return Err(Error::new(format!(
                        "{RESULT_LINE}SW Rate limiter cann't be executed on non-BW, ATOMIC or bidirectional SEND / SEND_IMM tests"
                    )));
                }
                // perftest would post one burst and then wait forever.
                if rate == 0.0 {
                    return Err(Error::new(
                        " Must specify a rate limit when using the SW rate limiter.\n Please add --rate_limit=<limit>.",
                    ));
                }
            }
            Limiter::Hw { .. } => {
                if self.connection.rdma_cm {
                    return Err(Error::new(
                        " HW rate limit isn't supported yet with rdma_cm scenarios",
                    ));
                }
                if g.units == RateUnits::Pps {
                    return Err(Error::new(format!(
                        "{RESULT_LINE} Failed: pps rate limit units is not supported when setting HW rate limit"
                    )));
                }
                // perftest looks the text up as typed, whatever the units.
                if let Some((text, _)) = &g.rate {
                    if !STATIC_RATES.contains(&text.as_str()) {
                        let mut table = String::new();
                        for r in STATIC_RATES {
                            let _ = writeln!(table, "\t\t\t {r} Gbps \t\t");
                        }
                        return Err(Error::new(format!(
                            "\x1b[31mThe input value for hw rate limit is not supported\x1b[0m\n{table}{RESULT_LINE} Failed: Unknown rate limit value"
                        )));
                    }
                }
            }
            Limiter::Pp => {
                // Our tools have no Raw Ethernet QPs.
                return Err(Error::new(
                    "Packet Pacing is only supported for Raw Ethernet.",
                ));
            }
        }
        self.qos.rate_limit = Some(RateLimit {
            limiter,
            rate,
            units: g.units,
            burst: burst.unwrap_or(tx_depth),
        });
        Ok(())
    }
}

/// perftest's refusal of `--typical_pkt_size` without the PP limiter.
fn typical_not_pp() -> Error {
    Error::new(format!(
        "{RESULT_LINE} Typical packet size only supports PP rate limiter"
    ))
}
