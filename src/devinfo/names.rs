//! The names `ibv_devinfo` gives values: GUIDs, enumerations and their C numbers.

use rdma_verbs::ffi;
use rdma_verbs::{AtomicCap, LinkLayer, Mtu, PhysState, PortState, Speed, Transport, Width};

/// A GUID as four groups of 16 bits, such as `0200:00ff:fe00:0000`.
pub fn guid(guid: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        guid >> 48,
        (guid >> 32) & 0xffff,
        (guid >> 16) & 0xffff,
        guid & 0xffff
    )
}

/// The C value of a transport (`enum ibv_transport_type`).
pub fn transport_value(transport: Transport) -> i32 {
    use ffi::ibv_transport_type as T;
    match transport {
        Transport::InfiniBand => T::IBV_TRANSPORT_IB.0,
        Transport::Iwarp => T::IBV_TRANSPORT_IWARP.0,
        Transport::Usnic => T::IBV_TRANSPORT_USNIC.0,
        Transport::UsnicUdp => T::IBV_TRANSPORT_USNIC_UDP.0,
        Transport::Unspecified => T::IBV_TRANSPORT_UNSPECIFIED.0,
        Transport::Unknown(raw) => raw,
        _ => T::IBV_TRANSPORT_UNKNOWN.0,
    }
}

/// The transport as `ibv_devinfo` names it.
pub fn transport(transport: Transport) -> &'static str {
    match transport {
        Transport::InfiniBand => "InfiniBand",
        Transport::Iwarp => "iWARP",
        Transport::Usnic => "usNIC",
        Transport::UsnicUdp => "usNIC UDP",
        Transport::Unspecified => "unspecified",
        _ => "invalid transport",
    }
}

/// A port state as `ibv_devinfo` names it, such as `PORT_ACTIVE`.
pub fn port_state(state: PortState) -> &'static str {
    match state {
        PortState::Down => "PORT_DOWN",
        PortState::Init => "PORT_INIT",
        PortState::Armed => "PORT_ARMED",
        PortState::Active => "PORT_ACTIVE",
        _ => "invalid state",
    }
}

/// A physical port state as `ibv_devinfo` names it, such as `LINK_UP`.
pub fn phys_state(state: PhysState) -> &'static str {
    match state {
        PhysState::Sleep => "SLEEP",
        PhysState::Polling => "POLLING",
        PhysState::Disabled => "DISABLED",
        PhysState::PortConfigurationTraining => "PORT_CONFIGURATION TRAINNING",
        PhysState::LinkUp => "LINK_UP",
        PhysState::LinkErrorRecovery => "LINK_ERROR_RECOVERY",
        PhysState::PhyTest => "PHY TEST",
        _ => "invalid physical state",
    }
}

/// An atomic capability as `ibv_devinfo` names it, such as `ATOMIC_HCA`.
pub fn atomic_cap(cap: AtomicCap) -> &'static str {
    match cap {
        AtomicCap::None => "ATOMIC_NONE",
        AtomicCap::Hca => "ATOMIC_HCA",
        AtomicCap::Glob => "ATOMIC_GLOB",
        _ => "invalid atomic capability",
    }
}

/// An MTU as `ibv_devinfo` names it, such as `4096`.
pub fn mtu(mtu: Mtu) -> &'static str {
    match mtu {
        Mtu::Mtu256 => "256",
        Mtu::Mtu512 => "512",
        Mtu::Mtu1024 => "1024",
        Mtu::Mtu2048 => "2048",
        Mtu::Mtu4096 => "4096",
        _ => "invalid MTU",
    }
}

/// A link width as `ibv_devinfo` names it (it adds the `X`), such as `4`.
pub fn width(width: Width) -> &'static str {
    match width {
        Width::X1 => "1",
        Width::X4 => "4",
        Width::X8 => "8",
        Width::X12 => "12",
        Width::X2 => "2",
        _ => "invalid width",
    }
}

/// A lane speed as `ibv_devinfo` names it, such as `25.0 Gbps`.
pub fn speed(speed: Speed) -> &'static str {
    match speed {
        Speed::Sdr => "2.5 Gbps",
        Speed::Ddr => "5.0 Gbps",
        Speed::Qdr | Speed::Fdr10 => "10.0 Gbps",
        Speed::Fdr => "14.0 Gbps",
        Speed::Edr => "25.0 Gbps",
        Speed::Hdr => "50.0 Gbps",
        Speed::Ndr => "100.0 Gbps",
        _ => "invalid speed",
    }
}

/// The number of virtual lanes an encoded `max_vl_num` stands for, as `ibv_devinfo` prints it.
pub fn vl(max_vl_num: u8) -> &'static str {
    match max_vl_num {
        1 => "1",
        2 => "2",
        3 => "4",
        4 => "8",
        5 => "15",
        _ => "invalid value",
    }
}

/// A link layer as `ibv_devinfo` names it.
pub fn link_layer(link_layer: LinkLayer) -> &'static str {
    match link_layer {
        LinkLayer::Unspecified => "Unspecified",
        LinkLayer::InfiniBand => "InfiniBand",
        LinkLayer::Ethernet => "Ethernet",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_values() {
        assert_eq!(guid(0x0002_c903_0010_fa0e), "0002:c903:0010:fa0e");
        assert_eq!(guid(u64::MAX), "ffff:ffff:ffff:ffff");
        assert_eq!(transport(Transport::Iwarp), "iWARP");
        assert_eq!(transport_value(Transport::Iwarp), 1);
        assert_eq!(transport_value(Transport::Unknown(9)), 9);
        assert_eq!(port_state(PortState::Active), "PORT_ACTIVE");
        assert_eq!(port_state(PortState::Down), "PORT_DOWN");
        assert_eq!(port_state(PortState::ActiveDefer), "invalid state");
        assert_eq!(phys_state(PhysState::LinkUp), "LINK_UP");
        assert_eq!(phys_state(PhysState::Polling), "POLLING");
        assert_eq!(phys_state(PhysState::Unknown(9)), "invalid physical state");
        assert_eq!(mtu(Mtu::Mtu1024), "1024");
        assert_eq!(mtu(Mtu::Unknown(7)), "invalid MTU");
        assert_eq!(width(Width::from_raw(2)), "4");
        assert_eq!(width(Width::from_raw(8)), "12");
        assert_eq!(width(Width::from_raw(16)), "2");
        assert_eq!(width(Width::from_raw(3)), "invalid width");
        assert_eq!(speed(Speed::from_raw(8)), "10.0 Gbps");
        assert_eq!(speed(Speed::from_raw(16)), "14.0 Gbps");
        assert_eq!(speed(Speed::from_raw(32)), "25.0 Gbps");
        assert_eq!(speed(Speed::from_raw(128)), "100.0 Gbps");
        assert_eq!(speed(Speed::from_raw(3)), "invalid speed");
        assert_eq!(vl(4), "8");
        assert_eq!(vl(5), "15");
        assert_eq!(vl(0), "invalid value");
        assert_eq!(atomic_cap(AtomicCap::Glob), "ATOMIC_GLOB");
        assert_eq!(link_layer(LinkLayer::InfiniBand), "InfiniBand");
        assert_eq!(link_layer(LinkLayer::Unknown(5)), "Unknown");
    }
}
