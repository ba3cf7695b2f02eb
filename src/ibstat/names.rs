//! The names `ibstat` gives values, as infiniband-diags and the kernel's sysfs spell them.

use rdma_verbs::{LinkLayer, NodeType, PhysState, PortState, Speed, Width};

/// A node type as `ibstat` names it; `None` for the types it does not list (iWARP and
/// others: libibumad lists node types 1 to 3 only).
pub fn node_type(node_type: NodeType) -> Option<&'static str> {
    match node_type {
        NodeType::Ca => Some("CA"),
        NodeType::Switch => Some("Switch"),
        NodeType::Router => Some("Router"),
        _ => None,
    }
}

/// A port state as `ibstat` names it, such as `Active`.
pub fn port_state(state: PortState) -> &'static str {
    match state.raw() {
        1 => "Down",
        2 => "Initializing",
        3 => "Armed",
        4 => "Active",
        _ => "???",
    }
}

/// A physical port state as `ibstat` names it, such as `LinkUp`.
pub fn phys_state(state: PhysState) -> &'static str {
    match state.raw() {
        0 => "No state change",
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "PhyTest",
        _ => "???",
    }
}

/// A link layer as the kernel's sysfs `link_layer` names it.
pub fn link_layer(link_layer: LinkLayer) -> &'static str {
    match link_layer {
        LinkLayer::InfiniBand => "InfiniBand",
        LinkLayer::Ethernet => "Ethernet",
        _ => "Unknown",
    }
}

/// The `Rate` value `ibstat` prints for a port's active `width` and `speed`, such as `100`,
/// `2.5` or `40 (FDR10)`: the integer Gb/s of the kernel's sysfs `rate` (unknown speeds
/// count as SDR there). `None` for a width the kernel cannot express, where the sysfs file,
/// and so `ibstat`, fails.
pub fn rate(width: Width, speed: Speed) -> Option<String> {
    let lanes = width.lanes()?;
    // Tenths of Gb/s per lane, as in the kernel's rate_show(), where an unknown speed counts
    // as SDR.
    let lane = speed.lane_gbps().map_or(25, |gbps| (gbps * 10.0) as u32);
    let gbps = lane * lanes / 10;
    Some(if speed == Speed::Fdr10 {
        format!("{gbps} (FDR10)")
    } else if gbps == 2 {
        // 1X SDR is 2.5.
        "2.5".to_owned()
    } else {
        gbps.to_string()
    })
}

/// The `Width` value `ibdevices` prints: the lanes, such as `4X`; `unknown` where the source
/// does not tell.
pub fn width(width: Option<Width>) -> String {
    width.map_or_else(|| "unknown".to_owned(), |w| w.to_string())
}

/// The `Active speed` value `ibdevices` prints: the IBTA name and the data rate of one lane
/// that [`rate`] counts, such as `EDR (25 Gb/s per lane)` or `SDR (2.5 Gb/s per lane)`;
/// `unknown` where the source does not tell, `unknown speed (N)` for a value verbs does not
/// name.
pub fn speed(speed: Option<Speed>) -> String {
    match speed {
        None => "unknown".to_owned(),
        Some(speed) => match speed.lane_gbps() {
            Some(gbps) => format!("{speed} ({gbps} Gb/s per lane)"),
            None => speed.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate_of(width: u8, speed: u8) -> Option<String> {
        rate(Width::from_raw(width), Speed::from_raw(speed))
    }

    #[test]
    fn rates() {
        // Widths: 1 = 1X, 16 = 2X, 2 = 4X, 4 = 8X, 8 = 12X. Speeds: 1 = SDR ... 128 = NDR.
        assert_eq!(rate_of(1, 1).unwrap(), "2.5");
        assert_eq!(rate_of(2, 1).unwrap(), "10");
        assert_eq!(rate_of(16, 1).unwrap(), "5");
        assert_eq!(rate_of(1, 2).unwrap(), "5");
        assert_eq!(rate_of(8, 4).unwrap(), "120");
        assert_eq!(rate_of(2, 8).unwrap(), "40 (FDR10)");
        assert_eq!(rate_of(2, 16).unwrap(), "56");
        assert_eq!(rate_of(1, 16).unwrap(), "14");
        assert_eq!(rate_of(2, 32).unwrap(), "100");
        assert_eq!(rate_of(16, 64).unwrap(), "100");
        assert_eq!(rate_of(4, 128).unwrap(), "800");
        // The kernel counts an unknown speed as SDR, and fails on an unknown width.
        assert_eq!(rate_of(2, 0).unwrap(), "10");
        assert_eq!(rate_of(3, 1), None);
    }

    #[test]
    fn widths_and_speeds() {
        assert_eq!(width(Some(Width::X4)), "4X");
        assert_eq!(width(Some(Width::X12)), "12X");
        assert_eq!(width(None), "unknown");
        assert_eq!(speed(Some(Speed::Sdr)), "SDR (2.5 Gb/s per lane)");
        assert_eq!(speed(Some(Speed::Fdr10)), "FDR10 (10 Gb/s per lane)");
        assert_eq!(speed(Some(Speed::Fdr)), "FDR (14 Gb/s per lane)");
        assert_eq!(speed(Some(Speed::Edr)), "EDR (25 Gb/s per lane)");
        assert_eq!(speed(Some(Speed::Ndr)), "NDR (100 Gb/s per lane)");
        assert_eq!(speed(Some(Speed::from_raw(3))), "unknown speed (3)");
        assert_eq!(speed(None), "unknown");
    }

    /// Width times the lane rate `speed` prints is the rate `rate` prints, for every width
    /// and named speed.
    #[test]
    fn width_times_speed_is_the_rate() {
        for w in [1, 16, 2, 4, 8] {
            for s in [1, 2, 4, 8, 16, 32, 64, 128] {
                let (w, s) = (Width::from_raw(w), Speed::from_raw(s));
                let lanes = f64::from(w.lanes().unwrap());
                let total = lanes * s.lane_gbps().unwrap();
                let rate = rate(w, s).unwrap();
                let number = rate.split(' ').next().unwrap();
                assert_eq!(number.parse::<f64>().unwrap(), total, "{w} {s}");
                let text = speed(Some(s));
                let lane = text.split(['(', ' ']).nth(2).unwrap();
                assert_eq!(lane.parse::<f64>().unwrap() * lanes, total, "{text}");
            }
        }
    }

    #[test]
    fn names_of_values() {
        assert_eq!(port_state(PortState::Active), "Active");
        assert_eq!(port_state(PortState::Init), "Initializing");
        assert_eq!(port_state(PortState::Nop), "???");
        assert_eq!(port_state(PortState::ActiveDefer), "???");
        assert_eq!(phys_state(PhysState::NoStateChange), "No state change");
        assert_eq!(phys_state(PhysState::Disabled), "Disabled");
        assert_eq!(phys_state(PhysState::PhyTest), "PhyTest");
        assert_eq!(phys_state(PhysState::Unknown(8)), "???");
        assert_eq!(link_layer(LinkLayer::InfiniBand), "InfiniBand");
        assert_eq!(link_layer(LinkLayer::Unspecified), "Unknown");
        assert_eq!(node_type(NodeType::Switch), Some("Switch"));
        assert_eq!(node_type(NodeType::Rnic), None);
    }
}
