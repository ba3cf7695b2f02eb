//! Where a queue pair's packets go: the peer's [`Endpoint`] and the [`Route`] to it, the
//! address vector both connected QPs (`ibv_modify_qp` to RTR) and address handles
//! (`ibv_create_ah`) are made from.

use crate::ffi;
use crate::types::Gid;

/// What a peer needs to reach a queue pair, and all that rdma-core's pingpong programs
/// exchange: LID, QP number, PSN and GID. Exchange it out of band (it is `serde`
/// serialisable with the `serde` feature). Local choices (port, path MTU, GID index) are
/// not part of it: they go in [`ConnectOptions`](crate::ConnectOptions) and the QP builder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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

/// How packets travel to a peer: the path fields of `struct ibv_ah_attr`. The GID they leave
/// from is the sender's, given once where the sender is made:
/// [`QueuePairBuilder::gid_index`](crate::QueuePairBuilder::gid_index) for a queue pair,
/// the `gid_index` of [`ProtectionDomain::create_ah`](crate::ProtectionDomain::create_ah)
/// for an address handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Hop limit of the GRH (RoCE v2: IP TTL).
    pub hop_limit: u8,
    /// Traffic class of the GRH (RoCE v2: DSCP and ECN).
    pub traffic_class: u8,
    /// Flow label of the GRH (RoCE v2: the UDP source port derives from it).
    pub flow_label: u32,
    /// Service level.
    pub sl: u8,
    /// Whether to send a GRH even when the peer's GID is zero (always on RoCE).
    pub force_grh: bool,
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
        let ep = Endpoint {
            qpn: 0x11,
            psn: 0xabcdef,
            lid: 0,
            gid: "::ffff:127.0.0.1".parse().unwrap(),
        };
        let json = serde_json::to_string(&ep).unwrap();
        assert_eq!(serde_json::from_str::<Endpoint>(&json).unwrap(), ep);
        assert!(serde_json::from_str::<Endpoint>("{\"qpn\":1}").is_err());
    }
}
