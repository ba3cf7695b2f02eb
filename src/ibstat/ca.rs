//! A device and its ports as `ibstat` and `ibdevices` show them: the values, and their text.

use std::fmt::{self, Write};

use rdma_verbs::{PortAttr, Speed, Width};

use super::names;

/// One port as `ibstat` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// The port number.
    pub port: u8,
    /// `State`.
    pub state: &'static str,
    /// `Physical state`.
    pub phys_state: &'static str,
    /// `Rate`.
    pub rate: String,
    /// The active width (`ibdevices`' `Width`); `None` where the source does not tell.
    pub width: Option<Width>,
    /// The active speed (`ibdevices`' `Active speed`); `None` where the source does not tell.
    pub speed: Option<Speed>,
    /// `Base lid`.
    pub lid: u16,
    /// `LMC`.
    pub lmc: u8,
    /// `SM lid`.
    pub sm_lid: u16,
    /// `Capability mask`.
    pub cap_mask: u32,
    /// `Port GUID`: the interface ID of GID 0.
    pub port_guid: u64,
    /// `Link layer`.
    pub link_layer: String,
}

impl PortInfo {
    /// The values of port `port` with attributes `attr` and GID 0 interface ID `port_guid`;
    /// `None` where `ibstat` fails (see [`names::rate`]).
    pub fn new(port: u8, attr: &PortAttr, port_guid: u64) -> Option<Self> {
        Some(PortInfo {
            port,
            state: names::port_state(attr.state),
            phys_state: names::phys_state(attr.phys_state),
            rate: names::rate(attr.active_width, attr.active_speed)?,
            width: Some(attr.active_width),
            speed: Some(attr.active_speed),
            lid: attr.lid,
            lmc: attr.lmc,
            sm_lid: attr.sm_lid,
            cap_mask: attr.port_cap_flags.bits(),
            port_guid,
            link_layer: names::link_layer(attr.link_layer).to_owned(),
        })
    }
}

/// One device as `ibstat` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaInfo {
    /// The device name.
    pub name: String,
    /// The node type name, such as `CA`.
    pub node_type: &'static str,
    /// `CA type` (sysfs `hca_type`).
    pub ca_type: String,
    /// `Number of ports`.
    pub num_ports: u8,
    /// `Firmware version` (sysfs `fw_ver`).
    pub fw_ver: String,
    /// `Hardware version` (sysfs `hw_rev`).
    pub hw_ver: String,
    /// `Node GUID`.
    pub node_guid: u64,
    /// `System image GUID`.
    pub sys_image_guid: u64,
    /// The ports, from 1.
    pub ports: Vec<PortInfo>,
}

/// Which tool prints a device: the two share its identity and each port's state and rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `ibstat`: also the hardware version, and each port's LIDs, capability mask, GUID and
    /// link layer.
    Ibstat,
    /// `ibdevices`: also each port's width and active speed.
    Ibdevices,
}

/// The device header (all that `ibstat -s` prints).
pub fn write_header(out: &mut impl Write, ca: &CaInfo, layout: Layout) -> fmt::Result {
    writeln!(out, "{} '{}'", ca.node_type, ca.name)?;
    writeln!(out, "\t{} type: {}", ca.node_type, ca.ca_type)?;
    writeln!(out, "\tNumber of ports: {}", ca.num_ports)?;
    writeln!(out, "\tFirmware version: {}", ca.fw_ver)?;
    if layout == Layout::Ibstat {
        writeln!(out, "\tHardware version: {}", ca.hw_ver)?;
    }
    writeln!(out, "\tNode GUID: 0x{:016x}", ca.node_guid)?;
    writeln!(out, "\tSystem image GUID: 0x{:016x}", ca.sys_image_guid)
}

/// A port block: indented under its device, or `alone` as `ibstat CA PORT` prints it.
pub fn write_port(
    out: &mut impl Write,
    port: &PortInfo,
    alone: bool,
    layout: Layout,
) -> fmt::Result {
    let (head, pre) = if alone { ("", "") } else { ("\t", "\t\t") };
    writeln!(out, "{head}Port {}:", port.port)?;
    writeln!(out, "{pre}State: {}", port.state)?;
    writeln!(out, "{pre}Physical state: {}", port.phys_state)?;
    writeln!(out, "{pre}Rate: {}", port.rate)?;
    if layout == Layout::Ibdevices {
        writeln!(out, "{pre}Width: {}", names::width(port.width))?;
        return writeln!(out, "{pre}Active speed: {}", names::speed(port.speed));
    }
    writeln!(out, "{pre}Base lid: {}", port.lid)?;
    writeln!(out, "{pre}LMC: {}", port.lmc)?;
    writeln!(out, "{pre}SM lid: {}", port.sm_lid)?;
    writeln!(out, "{pre}Capability mask: 0x{:08x}", port.cap_mask)?;
    writeln!(out, "{pre}Port GUID: 0x{:016x}", port.port_guid)?;
    writeln!(out, "{pre}Link layer: {}", port.link_layer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma_verbs::ffi;

    fn port(width: u8, speed: u8) -> PortAttr {
        PortAttr::from_raw(ffi::ibv_port_attr {
            state: ffi::ibv_port_state::IBV_PORT_ACTIVE,
            port_cap_flags: 0x0001_0000,
            active_width: width,
            active_speed: speed,
            phys_state: 5,
            link_layer: ffi::IBV_LINK_LAYER_ETHERNET as u8,
            ..Default::default()
        })
    }

    /// rxe0 as ibstat shows it (rdma-core 44, Linux 6.1).
    fn rxe() -> CaInfo {
        CaInfo {
            name: "rxe0".to_owned(),
            node_type: "CA",
            ca_type: String::new(),
            num_ports: 1,
            fw_ver: String::new(),
            hw_ver: String::new(),
            node_guid: 0x0200_00ff_fe00_0000,
            sys_image_guid: 0x0200_00ff_fe00_0000,
            ports: vec![PortInfo::new(1, &port(1, 1), 0x0200_00ff_fe00_0000).unwrap()],
        }
    }

    #[test]
    fn ibstat_of_rxe() {
        let ca = rxe();
        let mut out = String::new();
        write_header(&mut out, &ca, Layout::Ibstat).unwrap();
        assert_eq!(out, IBSTAT_S);
        write_port(&mut out, &ca.ports[0], false, Layout::Ibstat).unwrap();
        assert_eq!(out, IBSTAT);
        let mut alone = String::from("CA: 'rxe0'\n");
        write_port(&mut alone, &ca.ports[0], true, Layout::Ibstat).unwrap();
        assert_eq!(alone, IBSTAT_PORT);
    }

    #[test]
    fn ibdevices_of_rxe() {
        let ca = rxe();
        let mut out = String::new();
        write_header(&mut out, &ca, Layout::Ibdevices).unwrap();
        write_port(&mut out, &ca.ports[0], false, Layout::Ibdevices).unwrap();
        assert_eq!(out, IBDEVICES);
    }

    /// A 4X EDR port, and one whose source tells neither width nor speed.
    #[test]
    fn ibdevices_ports() {
        let edr = PortInfo::new(1, &port(2, 32), 1).unwrap();
        let mut out = String::new();
        write_port(&mut out, &edr, false, Layout::Ibdevices).unwrap();
        let unknown = PortInfo {
            port: 2,
            width: None,
            speed: None,
            ..edr
        };
        write_port(&mut out, &unknown, false, Layout::Ibdevices).unwrap();
        assert_eq!(
            out,
            "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 100\n\
             \t\tWidth: 4X\n\t\tActive speed: EDR (25 Gb/s per lane)\n\
             \tPort 2:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 100\n\
             \t\tWidth: unknown\n\t\tActive speed: unknown\n"
        );
    }

    const IBSTAT: &str = "\
        CA 'rxe0'\n\
        \tCA type: \n\
        \tNumber of ports: 1\n\
        \tFirmware version: \n\
        \tHardware version: \n\
        \tNode GUID: 0x020000fffe000000\n\
        \tSystem image GUID: 0x020000fffe000000\n\
        \tPort 1:\n\
        \t\tState: Active\n\
        \t\tPhysical state: LinkUp\n\
        \t\tRate: 2.5\n\
        \t\tBase lid: 0\n\
        \t\tLMC: 0\n\
        \t\tSM lid: 0\n\
        \t\tCapability mask: 0x00010000\n\
        \t\tPort GUID: 0x020000fffe000000\n\
        \t\tLink layer: Ethernet\n\
    ";

    const IBSTAT_S: &str = "\
        CA 'rxe0'\n\
        \tCA type: \n\
        \tNumber of ports: 1\n\
        \tFirmware version: \n\
        \tHardware version: \n\
        \tNode GUID: 0x020000fffe000000\n\
        \tSystem image GUID: 0x020000fffe000000\n\
    ";

    const IBDEVICES: &str = "\
        CA 'rxe0'\n\
        \tCA type: \n\
        \tNumber of ports: 1\n\
        \tFirmware version: \n\
        \tNode GUID: 0x020000fffe000000\n\
        \tSystem image GUID: 0x020000fffe000000\n\
        \tPort 1:\n\
        \t\tState: Active\n\
        \t\tPhysical state: LinkUp\n\
        \t\tRate: 2.5\n\
        \t\tWidth: 1X\n\
        \t\tActive speed: SDR (2.5 Gb/s per lane)\n\
    ";

    const IBSTAT_PORT: &str = "\
        CA: 'rxe0'\n\
        Port 1:\n\
        State: Active\n\
        Physical state: LinkUp\n\
        Rate: 2.5\n\
        Base lid: 0\n\
        LMC: 0\n\
        SM lid: 0\n\
        Capability mask: 0x00010000\n\
        Port GUID: 0x020000fffe000000\n\
        Link layer: Ethernet\n\
    ";
}
