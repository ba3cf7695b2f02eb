//! Where a queue pair's packets go: the peer's [`Endpoint`] and the [`Route`] to it, the
//! address vector both connected QPs (`ibv_modify_qp` to RTR) and address handles
//! (`ibv_create_ah`) are made from.

use crate::error::{Error, Result};
use crate::ffi;
use crate::types::Gid;

/// What a peer needs to reach a queue pair, and all that rdma-core's pingpong programs
/// exchange: LID, QP number, PSN and GID. Exchange it out of band (it is `serde`
/// serialisable with the `serde` feature). Local choices (port, path MTU, GID index) are
/// not part of it: they go in [`ConnectOptions`](crate::ConnectOptions) and the QP builder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Endpoint {
    /// The QP number.
    pub qpn: u32,
    /// The first packet sequence number the QP sends (24 bits).
    pub psn: u32,
    /// The port's LID (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// The GID the QP sends from (zero where none is used: InfiniBand without a GRH).
    pub gid: Gid,
}

impl Endpoint {
    /// The endpoint of QP `qpn` at LID `lid` (0 on RoCE) and GID `gid`, whose first packet
    /// sequence number is `psn`: the four numbers a peer sends.
    pub fn new(qpn: u32, psn: u32, lid: u16, gid: Gid) -> Self {
        Endpoint { qpn, psn, lid, gid }
    }
}

/// How packets travel to a peer: the path fields of `struct ibv_ah_attr`, for
/// [`ConnectOptions::route`](crate::ConnectOptions::route) and
/// [`AddressHandleBuilder::route`](crate::AddressHandleBuilder::route). The GID they leave
/// from is the sender's, given once where the sender is made:
/// [`QueuePairBuilder::gid_index`](crate::QueuePairBuilder::gid_index) for a queue pair,
/// [`AddressHandleBuilder::gid_index`](crate::AddressHandleBuilder::gid_index) for an
/// address handle.
///
/// Start from [`Route::new`] (hop limit 64, everything else 0) and set what differs:
/// `Route::new().sl(3).traffic_class(0x68)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
    pub(crate) flow_label: u32,
    pub(crate) sl: u8,
    pub(crate) force_grh: bool,
}

impl Default for Route {
    fn default() -> Self {
        Route {
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
            sl: 0,
            force_grh: false,
        }
    }
}

impl Route {
    /// The default route: hop limit 64, traffic class, flow label and service level 0, a
    /// GRH only where the link needs one.
    pub fn new() -> Self {
        Self::default()
    }

    /// The hop limit of the GRH (`hop_limit`; RoCE v2: the IP TTL).
    pub fn hop_limit(mut self, hops: u8) -> Self {
        self.hop_limit = hops;
        self
    }

    /// The traffic class of the GRH (`traffic_class`; RoCE v2: the IP header's DSCP and
    /// ECN byte).
    pub fn traffic_class(mut self, class: u8) -> Self {
        self.traffic_class = class;
        self
    }

    /// The flow label of the GRH (`flow_label`, 20 bits; RoCE v2: the UDP source port
    /// derives from it).
    pub fn flow_label(mut self, label: u32) -> Self {
        self.flow_label = label;
        self
    }

    /// The service level (`sl`, 0 to 15): on InfiniBand the virtual lane the packets take;
    /// on RoCE the Ethernet priority where the device maps one.
    pub fn sl(mut self, sl: u8) -> Self {
        self.sl = sl;
        self
    }

    /// Whether to send a GRH even when the peer's GID is zero (always on RoCE).
    pub fn force_grh(mut self, on: bool) -> Self {
        self.force_grh = on;
        self
    }

    /// Fails with [`Error::OutOfRange`] for a service level over 15 or a flow label over 20
    /// bits, before the provider sees them.
    pub(crate) fn check(&self) -> Result<()> {
        Error::at_most("service level", self.sl.into(), 15)?;
        Error::at_most("flow label", self.flow_label.into(), 0xf_ffff)
    }

    /// The address vector to `remote` from local `port`, sending from GID `sgid_index`.
    pub(crate) fn ah_attr(&self, port: u8, sgid_index: u8, remote: &Endpoint) -> ffi::ibv_ah_attr {
        let global = self.force_grh || !remote.gid.is_zero();
        ffi::ibv_ah_attr {
            grh: ffi::ibv_global_route {
                dgid: remote.gid.to_raw(),
                flow_label: self.flow_label,
                sgid_index,
                hop_limit: self.hop_limit,
                traffic_class: self.traffic_class,
            },
            dlid: remote.lid,
            sl: self.sl,
            src_path_bits: 0,
            static_rate: 0,
            is_global: u8::from(global),
            port_num: port,
        }
    }
}

#[cfg(all(test, feature = "serde"))]
mod serde_tests {
    use super::*;

    #[test]
    fn endpoint_round_trips_through_json() {
        let ep = Endpoint::new(0x11, 0xabcdef, 0, "::ffff:127.0.0.1".parse().unwrap());
        let json = serde_json::to_string(&ep).unwrap();
        assert_eq!(serde_json::from_str::<Endpoint>(&json).unwrap(), ep);
        assert!(serde_json::from_str::<Endpoint>("{\"qpn\":1}").is_err());
    }
}
