//! PortCounters and PortCountersExtended as `perfquery` prints them (libibmad's
//! `mad_dump_perfcounters`, perfquery's `dump_perfcounters_ext`), and their sums over ports
//! (`aggregate_perfcounters*`: each counter saturating at its width).

use ibumad::mad::{PortCounters, PortCountersExtended};

use crate::fabric::dump::hex;
use crate::fabric::portinfo_text::field;

/// ClassPortInfo CapabilityMask bit: PortCountersExtended has the unicast and multicast
/// counters.
pub const EXT_WIDTH: u16 = 1 << 9;
/// ClassPortInfo CapabilityMask bit: extended counters without the IETF ones.
pub const EXT_WIDTH_NOIETF: u16 = 1 << 10;
/// ClassPortInfo CapabilityMask bit: PortXmitWait is counted.
pub const XMIT_WAIT: u16 = 1 << 12;
/// ClassPortInfo CapabilityMask bit: QP1Dropped is counted.
pub const QP1_DROP: u16 = 1 << 15;
/// ClassPortInfo CapabilityMask bit: PortSelect 255 reads all ports at once.
pub const ALL_PORT_SELECT: u16 = 1 << 8;
/// ClassPortInfo CapabilityMask2 bit: PortCountersExtended has the error counters.
pub const ADDL_EXT: u32 = 1 << 1;

/// A line per field: `(name, value)`.
fn lines(fields: &[(&str, String)]) -> String {
    fields
        .iter()
        .map(|(name, value)| field(name, value) + "\n")
        .collect()
}

/// `mad_dump_perfcounters`: the PortCounters lines.
pub fn port_counters(pc: &PortCounters) -> String {
    lines(&[
        ("PortSelect", pc.port_select.to_string()),
        ("CounterSelect", hex(pc.counter_select.into(), 2)),
        ("SymbolErrorCounter", pc.symbol_error_counter.to_string()),
        (
            "LinkErrorRecoveryCounter",
            pc.link_error_recovery_counter.to_string(),
        ),
        ("LinkDownedCounter", pc.link_downed_counter.to_string()),
        ("PortRcvErrors", pc.port_rcv_errors.to_string()),
        (
            "PortRcvRemotePhysicalErrors",
            pc.port_rcv_remote_physical_errors.to_string(),
        ),
        (
            "PortRcvSwitchRelayErrors",
            pc.port_rcv_switch_relay_errors.to_string(),
        ),
        ("PortXmitDiscards", pc.port_xmit_discards.to_string()),
        (
            "PortXmitConstraintErrors",
            pc.port_xmit_constraint_errors.to_string(),
        ),
        (
            "PortRcvConstraintErrors",
            pc.port_rcv_constraint_errors.to_string(),
        ),
        ("CounterSelect2", hex(pc.counter_select2.into(), 1)),
        (
            "LocalLinkIntegrityErrors",
            pc.local_link_integrity_errors.to_string(),
        ),
        (
            "ExcessiveBufferOverrunErrors",
            pc.excessive_buffer_overrun_errors.to_string(),
        ),
        ("QP1Dropped", pc.qp1_dropped.to_string()),
        ("VL15Dropped", pc.vl15_dropped.to_string()),
        ("PortXmitData", pc.port_xmit_data.to_string()),
        ("PortRcvData", pc.port_rcv_data.to_string()),
        ("PortXmitPkts", pc.port_xmit_pkts.to_string()),
        ("PortRcvPkts", pc.port_rcv_pkts.to_string()),
        ("PortXmitWait", pc.port_xmit_wait.to_string()),
    ])
}

/// `dump_perfcounters_ext`: the PortCountersExtended lines the capability masks say the
/// port fills in.
pub fn port_counters_ext(pce: &PortCountersExtended, cap_mask: u16, cap_mask2: u32) -> String {
    let mut fields = vec![
        ("PortSelect", pce.port_select.to_string()),
        ("CounterSelect", hex(pce.counter_select.into(), 2)),
        ("PortXmitData", pce.port_xmit_data.to_string()),
        ("PortRcvData", pce.port_rcv_data.to_string()),
        ("PortXmitPkts", pce.port_xmit_pkts.to_string()),
        ("PortRcvPkts", pce.port_rcv_pkts.to_string()),
    ];
    if cap_mask & EXT_WIDTH != 0 {
        fields.extend([
            (
                "PortUnicastXmitPkts",
                pce.port_unicast_xmit_pkts.to_string(),
            ),
            ("PortUnicastRcvPkts", pce.port_unicast_rcv_pkts.to_string()),
            (
                "PortMulticastXmitPkts",
                pce.port_multicast_xmit_pkts.to_string(),
            ),
            (
                "PortMulticastRcvPkts",
                pce.port_multicast_rcv_pkts.to_string(),
            ),
        ]);
    }
    if cap_mask2 & ADDL_EXT != 0 {
        fields.extend([
            ("CounterSelect2", hex(pce.counter_select2.into(), 4)),
            ("SymbolErrorCounter", pce.symbol_error_counter.to_string()),
            (
                "LinkErrorRecoveryCounter",
                pce.link_error_recovery_counter.to_string(),
            ),
            ("LinkDownedCounter", pce.link_downed_counter.to_string()),
            ("PortRcvErrors", pce.port_rcv_errors.to_string()),
            (
                "PortRcvRemotePhysicalErrors",
                pce.port_rcv_remote_physical_errors.to_string(),
            ),
            (
                "PortRcvSwitchRelayErrors",
                pce.port_rcv_switch_relay_errors.to_string(),
            ),
            ("PortXmitDiscards", pce.port_xmit_discards.to_string()),
            (
                "PortXmitConstraintErrors",
                pce.port_xmit_constraint_errors.to_string(),
            ),
            (
                "PortRcvConstraintErrors",
                pce.port_rcv_constraint_errors.to_string(),
            ),
            (
                "LocalLinkIntegrityErrors",
                pce.local_link_integrity_errors.to_string(),
            ),
            (
                "ExcessiveBufferOverrunErrors",
                pce.excessive_buffer_overrun_errors.to_string(),
            ),
            ("VL15Dropped", pce.vl15_dropped.to_string()),
            ("PortXmitWait", pce.port_xmit_wait.to_string()),
            ("QP1Dropped", pce.qp1_dropped.to_string()),
        ]);
    }
    lines(&fields)
}

/// `a + b`, or `max` if that is more (the C `aggregate_*bit`).
fn sat<T: Into<u64> + TryFrom<u64>>(a: T, b: T, max: u64) -> T {
    let sum = a.into().saturating_add(b.into()).min(max);
    T::try_from(sum).unwrap_or_else(|_| unreachable!("{sum} fits: at most {max}"))
}

/// `aggregate_perfcounters`: adds `pc` to `sum`, which takes its selects (and, as the C
/// buffer keeps it, its CounterSelect2).
pub fn add(sum: &mut PortCounters, pc: &PortCounters) {
    sum.port_select = pc.port_select;
    sum.counter_select = pc.counter_select;
    sum.counter_select2 = pc.counter_select2;
    sum.symbol_error_counter = sat(sum.symbol_error_counter, pc.symbol_error_counter, 0xffff);
    sum.link_error_recovery_counter = sat(
        sum.link_error_recovery_counter,
        pc.link_error_recovery_counter,
        0xff,
    );
    sum.link_downed_counter = sat(sum.link_downed_counter, pc.link_downed_counter, 0xff);
    sum.port_rcv_errors = sat(sum.port_rcv_errors, pc.port_rcv_errors, 0xffff);
    sum.port_rcv_remote_physical_errors = sat(
        sum.port_rcv_remote_physical_errors,
        pc.port_rcv_remote_physical_errors,
        0xffff,
    );
    sum.port_rcv_switch_relay_errors = sat(
        sum.port_rcv_switch_relay_errors,
        pc.port_rcv_switch_relay_errors,
        0xffff,
    );
    sum.port_xmit_discards = sat(sum.port_xmit_discards, pc.port_xmit_discards, 0xffff);
    sum.port_xmit_constraint_errors = sat(
        sum.port_xmit_constraint_errors,
        pc.port_xmit_constraint_errors,
        0xff,
    );
    sum.port_rcv_constraint_errors = sat(
        sum.port_rcv_constraint_errors,
        pc.port_rcv_constraint_errors,
        0xff,
    );
    sum.local_link_integrity_errors = sat(
        sum.local_link_integrity_errors,
        pc.local_link_integrity_errors,
        0xf,
    );
    sum.excessive_buffer_overrun_errors = sat(
        sum.excessive_buffer_overrun_errors,
        pc.excessive_buffer_overrun_errors,
        0xf,
    );
    sum.qp1_dropped = sat(sum.qp1_dropped, pc.qp1_dropped, 0xffff);
    sum.vl15_dropped = sat(sum.vl15_dropped, pc.vl15_dropped, 0xffff);
    let max = u64::from(u32::MAX);
    sum.port_xmit_data = sat(sum.port_xmit_data, pc.port_xmit_data, max);
    sum.port_rcv_data = sat(sum.port_rcv_data, pc.port_rcv_data, max);
    sum.port_xmit_pkts = sat(sum.port_xmit_pkts, pc.port_xmit_pkts, max);
    sum.port_rcv_pkts = sat(sum.port_rcv_pkts, pc.port_rcv_pkts, max);
    sum.port_xmit_wait = sat(sum.port_xmit_wait, pc.port_xmit_wait, max);
}

/// `aggregate_perfcounters_ext`: adds the counters of `pce` the capability masks say are
/// there to `sum`, which takes its selects.
pub fn add_ext(sum: &mut PortCountersExtended, pce: &PortCountersExtended, cap: u16, cap2: u32) {
    let add = |a: u64, b: u64| a.saturating_add(b);
    sum.port_select = pce.port_select;
    sum.counter_select = pce.counter_select;
    sum.port_xmit_data = add(sum.port_xmit_data, pce.port_xmit_data);
    sum.port_rcv_data = add(sum.port_rcv_data, pce.port_rcv_data);
    sum.port_xmit_pkts = add(sum.port_xmit_pkts, pce.port_xmit_pkts);
    sum.port_rcv_pkts = add(sum.port_rcv_pkts, pce.port_rcv_pkts);
    if cap & EXT_WIDTH != 0 {
        sum.port_unicast_xmit_pkts = add(sum.port_unicast_xmit_pkts, pce.port_unicast_xmit_pkts);
        sum.port_unicast_rcv_pkts = add(sum.port_unicast_rcv_pkts, pce.port_unicast_rcv_pkts);
        sum.port_multicast_xmit_pkts =
            add(sum.port_multicast_xmit_pkts, pce.port_multicast_xmit_pkts);
        sum.port_multicast_rcv_pkts = add(sum.port_multicast_rcv_pkts, pce.port_multicast_rcv_pkts);
    }
    if cap2 & ADDL_EXT != 0 {
        sum.counter_select2 = pce.counter_select2;
        for (s, p) in [
            (&mut sum.symbol_error_counter, pce.symbol_error_counter),
            (
                &mut sum.link_error_recovery_counter,
                pce.link_error_recovery_counter,
            ),
            (&mut sum.link_downed_counter, pce.link_downed_counter),
            (&mut sum.port_rcv_errors, pce.port_rcv_errors),
            (
                &mut sum.port_rcv_remote_physical_errors,
                pce.port_rcv_remote_physical_errors,
            ),
            (
                &mut sum.port_rcv_switch_relay_errors,
                pce.port_rcv_switch_relay_errors,
            ),
            (&mut sum.port_xmit_discards, pce.port_xmit_discards),
            (
                &mut sum.port_xmit_constraint_errors,
                pce.port_xmit_constraint_errors,
            ),
            (
                &mut sum.port_rcv_constraint_errors,
                pce.port_rcv_constraint_errors,
            ),
            (
                &mut sum.local_link_integrity_errors,
                pce.local_link_integrity_errors,
            ),
            (
                &mut sum.excessive_buffer_overrun_errors,
                pce.excessive_buffer_overrun_errors,
            ),
            (&mut sum.vl15_dropped, pce.vl15_dropped),
            (&mut sum.port_xmit_wait, pce.port_xmit_wait),
            (&mut sum.qp1_dropped, pce.qp1_dropped),
        ] {
            *s = add(*s, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_saturate_at_each_width() {
        let mut sum = PortCounters::default();
        let pc = PortCounters {
            port_select: 3,
            local_link_integrity_errors: 9,
            link_downed_counter: 200,
            port_xmit_data: u32::MAX - 1,
            ..PortCounters::default()
        };
        add(&mut sum, &pc);
        add(&mut sum, &pc);
        assert_eq!(sum.port_select, 3);
        assert_eq!(sum.local_link_integrity_errors, 0xf);
        assert_eq!(sum.link_downed_counter, 0xff);
        assert_eq!(sum.port_xmit_data, u32::MAX);
    }

    #[test]
    fn extended_sums_follow_the_capabilities() {
        let pce = PortCountersExtended {
            port_xmit_pkts: u64::MAX,
            port_unicast_xmit_pkts: 5,
            symbol_error_counter: 7,
            ..PortCountersExtended::default()
        };
        let mut sum = PortCountersExtended::default();
        add_ext(&mut sum, &pce, 0, 0);
        add_ext(&mut sum, &pce, 0, 0);
        assert_eq!(sum.port_xmit_pkts, u64::MAX);
        assert_eq!(
            (sum.port_unicast_xmit_pkts, sum.symbol_error_counter),
            (0, 0)
        );
        add_ext(&mut sum, &pce, EXT_WIDTH, ADDL_EXT);
        assert_eq!(
            (sum.port_unicast_xmit_pkts, sum.symbol_error_counter),
            (5, 7)
        );
    }

    #[test]
    fn extended_lines_follow_the_capabilities() {
        let pce = PortCountersExtended::default();
        assert_eq!(port_counters_ext(&pce, 0, 0).lines().count(), 6);
        assert_eq!(port_counters_ext(&pce, EXT_WIDTH, 0).lines().count(), 10);
        let all = port_counters_ext(&pce, EXT_WIDTH, ADDL_EXT);
        assert_eq!(all.lines().count(), 25);
        assert!(all.contains("CounterSelect2:..................0x00000000\n"));
    }
}
