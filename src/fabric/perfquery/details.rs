//! The other counter attributes `perfquery` reads with one option each (its
//! `common_func`): per SL (`-X`, `-S`), discard and error details (`-D`, `-E`), per VL and
//! congestion control (the long options `--oprcvcounters` to `--vlxmittimecc`). Each is
//! PortSelect, CounterSelect, then a run of counters of one width from bit 32, printed as
//! libibmad's `mad_dump_perfcounters_*` print them.

use ibumad::mad::{counter_run, PortCountersExtended};

use crate::fabric::dump::hex;
use crate::fabric::options::Opt;
use crate::fabric::portinfo_text::field;

/// Counter names: a list, or a prefix numbered from 0.
#[derive(Clone, Copy, Debug)]
pub enum Names {
    /// One name per counter.
    List(&'static [&'static str]),
    /// `prefix0`, `prefix1`, ... for this many counters.
    Numbered(&'static str, usize),
}

/// One attribute: the option that asks for it, its name in the heading, its AttributeID,
/// and its counters.
#[derive(Clone, Copy, Debug)]
pub struct Detail {
    /// The option.
    pub opt: Opt,
    /// The name the heading and the messages give.
    pub name: &'static str,
    /// AttributeID.
    pub attr_id: u16,
    /// Width of each counter in bits.
    pub width: usize,
    /// The counters' names.
    pub names: Names,
}

/// Shorthand for a [`Detail`] table entry.
const fn detail(
    (long, letter): (&'static str, char),
    name: &'static str,
    attr_id: u16,
    width: usize,
    names: Names,
) -> Detail {
    Detail {
        opt: Opt {
            name: long,
            letter,
            value: None,
            help: name,
        },
        name,
        attr_id,
        width,
        names,
    }
}

/// The attributes, in the order the C tool tries its options.
pub const DETAILS: [Detail; 16] = [
    detail(
        ("xmtsl", 'X'),
        "PortXmitDataSL",
        0x36,
        32,
        Names::Numbered("XmtDataSL", 16),
    ),
    detail(
        ("rcvsl", 'S'),
        "PortRcvDataSL",
        0x37,
        32,
        Names::Numbered("RcvDataSL", 16),
    ),
    detail(
        ("xmtdisc", 'D'),
        "PortXmitDiscardDetails",
        0x16,
        16,
        Names::List(&[
            "PortInactiveDiscards",
            "PortNeighborMTUDiscards",
            "PortSwLifetimeLimitDiscards",
            "PortSwHOQLifetimeLimitDiscards",
        ]),
    ),
    detail(
        ("rcverr", 'E'),
        "PortRcvErrorDetails",
        0x15,
        16,
        Names::List(&[
            "PortLocalPhysicalErrors",
            "PortMalformedPktErrors",
            "PortBufferOverrunErrors",
            "PortDLIDMappingErrors",
            "PortVLMappingErrors",
            "PortLoopingErrors",
        ]),
    ),
    detail(
        ("oprcvcounters", '\u{1}'),
        "PortOpRcvCounters",
        0x17,
        32,
        Names::List(&["PortOpRcvPkts", "PortOpRcvData"]),
    ),
    detail(
        ("flowctlcounters", '\u{2}'),
        "PortFlowCtlCounters",
        0x18,
        32,
        Names::List(&["PortXmitFlowPkts", "PortRcvFlowPkts"]),
    ),
    detail(
        ("vloppackets", '\u{3}'),
        "PortVLOpPackets",
        0x19,
        16,
        Names::Numbered("PortVLOpPackets", 16),
    ),
    detail(
        ("vlopdata", '\u{4}'),
        "PortVLOpData",
        0x1a,
        32,
        Names::Numbered("PortVLOpData", 16),
    ),
    detail(
        ("vlxmitflowctlerrors", '\u{5}'),
        "PortVLXmitFlowCtlUpdateErrors",
        0x1b,
        2,
        Names::Numbered("PortVLXmitFlowCtlUpdateErrors", 16),
    ),
    detail(
        ("vlxmitcounters", '\u{6}'),
        "PortVLXmitWaitCounters",
        0x1c,
        16,
        Names::Numbered("PortVLXmitWait", 16),
    ),
    detail(
        ("swportvlcong", '\u{7}'),
        "SwPortVLCongestion",
        0x30,
        16,
        Names::Numbered("SWPortVLCongestion", 16),
    ),
    detail(
        ("rcvcc", '\u{8}'),
        "PortRcvConCtrl",
        0x31,
        32,
        Names::List(&["PortPktRcvFECN", "PortPktRcvBECN"]),
    ),
    detail(
        ("slrcvfecn", '\u{9}'),
        "PortSLRcvFECN",
        0x32,
        32,
        Names::Numbered("PortSLRcvFECN", 16),
    ),
    detail(
        ("slrcvbecn", '\u{a}'),
        "PortSLRcvBECN",
        0x33,
        32,
        Names::Numbered("PortSLRcvBECN", 16),
    ),
    detail(
        ("xmitcc", '\u{b}'),
        "PortXmitConCtrl",
        0x34,
        32,
        Names::List(&["PortXmitTimeCong"]),
    ),
    detail(
        ("vlxmittimecc", '\u{c}'),
        "PortVLXmitTimeCong",
        0x35,
        32,
        Names::Numbered("PortVLXmitTimeCong", 15),
    ),
];

impl Detail {
    /// The lines of the attribute's data `data`; `None` if it is too short.
    pub fn lines(&self, data: &[u8]) -> Option<String> {
        let head = PortCountersExtended::decode(data).ok()?;
        let names: Vec<String> = match self.names {
            Names::List(names) => names.iter().map(|n| n.to_string()).collect(),
            Names::Numbered(prefix, count) => (0..count).map(|i| format!("{prefix}{i}")).collect(),
        };
        let values = counter_run(data, self.width, names.len()).ok()?;
        let mut text = field("PortSelect", &head.port_select.to_string()) + "\n";
        text += &(field("CounterSelect", &hex(head.counter_select.into(), 2)) + "\n");
        for (name, value) in names.iter().zip(values) {
            text += &(field(name, &value.to_string()) + "\n");
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_libibmad_prints_them() {
        let mut data = [0u8; 192];
        data[1] = 1;
        data[4..6].copy_from_slice(&[0, 9]);
        let discards = DETAILS[2].lines(&data).unwrap();
        assert_eq!(
            discards,
            "PortSelect:......................1\n\
             CounterSelect:...................0x0000\n\
             PortInactiveDiscards:............9\n\
             PortNeighborMTUDiscards:.........0\n\
             PortSwLifetimeLimitDiscards:.....0\n\
             PortSwHOQLifetimeLimitDiscards:..0\n"
        );
        let flow = DETAILS[8].lines(&data).unwrap();
        assert_eq!(flow.lines().count(), 18);
        assert!(flow.contains("PortVLXmitFlowCtlUpdateErrors15:.0\n"));
        assert!(DETAILS[0].lines(&data[..40]).is_none());
    }
}
