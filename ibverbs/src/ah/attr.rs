//! Address vectors as values: `struct ibv_ah_attr` ([`AhAttr`]) and `ibv_create_ah` from one.

use crate::ah::AddressHandle;
use crate::context::port::LinkLayer;
use crate::context::port_cache::SourceGid;
use crate::error::{Error, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::types::Gid;

/// An address vector (`struct ibv_ah_attr`): where an address handle sends, and from where.
///
/// [`Context::init_ah_from_wc`](crate::Context::init_ah_from_wc) makes one that answers the
/// sender of a received datagram; [`ProtectionDomain::create_ah_from_attr`] makes the
/// handle. Its fields are those of the C structure. Read them, change them on a vector you
/// have, or make one with [`AhAttr::new`] and the `with_*` setters:
/// `AhAttr::new(1).with_dlid(lid).with_sl(2)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AhAttr {
    /// The local port the datagrams leave from (`port_num`), from 1.
    pub port: u8,
    /// The destination LID (InfiniBand; unused on RoCE).
    pub dlid: u16,
    /// The service level.
    pub sl: u8,
    /// The source path bits (InfiniBand, on a port with an LMC).
    pub src_path_bits: u8,
    /// The static rate (`enum ibv_rate`; 0: the port's own).
    pub static_rate: u8,
    /// The global route (`grh`, with `is_global` set): always there on RoCE; on InfiniBand
    /// only to leave the subnet.
    pub grh: Option<GlobalRoute>,
}

/// The global route of an address vector (`struct ibv_global_route`): the GRH the datagrams
/// carry (on RoCE v2: the IP header's fields). Make one with [`GlobalRoute::new`] and the
/// `with_*` setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GlobalRoute {
    /// The destination GID (RoCE: the peer's IP address, IPv4-mapped for IPv4).
    pub dgid: Gid,
    /// The entry of the port's GID table the datagrams leave from.
    pub sgid_index: u8,
    /// The hop limit (RoCE v2: the IP TTL / hop limit).
    pub hop_limit: u8,
    /// The traffic class (RoCE v2: DSCP and ECN).
    pub traffic_class: u8,
    /// The flow label, 20 bits (RoCE v2: the UDP source port derives from it).
    pub flow_label: u32,
}

impl AhAttr {
    /// A vector from local port `port` with every other field 0: no destination LID, service
    /// level 0, the port's static rate, no global route.
    pub fn new(port: u8) -> Self {
        AhAttr {
            port,
            dlid: 0,
            sl: 0,
            src_path_bits: 0,
            static_rate: 0,
            grh: None,
        }
    }

    /// With destination LID `dlid`.
    pub fn with_dlid(mut self, dlid: u16) -> Self {
        self.dlid = dlid;
        self
    }

    /// With service level `sl`.
    pub fn with_sl(mut self, sl: u8) -> Self {
        self.sl = sl;
        self
    }

    /// With source path bits `bits`.
    pub fn with_src_path_bits(mut self, bits: u8) -> Self {
        self.src_path_bits = bits;
        self
    }

    /// With static rate `rate` (`enum ibv_rate`).
    pub fn with_static_rate(mut self, rate: u8) -> Self {
        self.static_rate = rate;
        self
    }

    /// With global route `grh`.
    pub fn with_grh(mut self, grh: GlobalRoute) -> Self {
        self.grh = Some(grh);
        self
    }

    /// The C structure's values.
    pub(crate) fn from_raw(raw: &ffi::ibv_ah_attr) -> Self {
        let grh = &raw.grh;
        AhAttr {
            port: raw.port_num,
            dlid: raw.dlid,
            sl: raw.sl,
            src_path_bits: raw.src_path_bits,
            static_rate: raw.static_rate,
            grh: (raw.is_global != 0).then(|| GlobalRoute {
                dgid: Gid::from_raw(grh.dgid),
                sgid_index: grh.sgid_index,
                hop_limit: grh.hop_limit,
                traffic_class: grh.traffic_class,
                flow_label: grh.flow_label,
            }),
        }
    }

    /// The C structure (an absent route is all zeros, `is_global` 0).
    pub(crate) fn to_raw(self) -> ffi::ibv_ah_attr {
        let grh = self
            .grh
            .unwrap_or(GlobalRoute::new(Gid::ZERO, 0).with_hop_limit(0));
        ffi::ibv_ah_attr {
            grh: ffi::ibv_global_route {
                dgid: grh.dgid.to_raw(),
                flow_label: grh.flow_label,
                sgid_index: grh.sgid_index,
                hop_limit: grh.hop_limit,
                traffic_class: grh.traffic_class,
            },
            dlid: self.dlid,
            sl: self.sl,
            src_path_bits: self.src_path_bits,
            static_rate: self.static_rate,
            is_global: u8::from(self.grh.is_some()),
            port_num: self.port,
        }
    }
}

impl GlobalRoute {
    /// A route to `dgid` from the port's GID table entry `sgid_index`, with hop limit 64,
    /// traffic class and flow label 0.
    pub fn new(dgid: Gid, sgid_index: u8) -> Self {
        GlobalRoute {
            dgid,
            sgid_index,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        }
    }

    /// With hop limit `hops`.
    pub fn with_hop_limit(mut self, hops: u8) -> Self {
        self.hop_limit = hops;
        self
    }

    /// With traffic class `class`.
    pub fn with_traffic_class(mut self, class: u8) -> Self {
        self.traffic_class = class;
        self
    }

    /// With flow label `label`.
    pub fn with_flow_label(mut self, label: u32) -> Self {
        self.flow_label = label;
        self
    }
}

impl ProtectionDomain {
    /// Creates an address handle from an address vector (`ibv_create_ah`), such as one of
    /// [`Context::init_ah_from_wc`](crate::Context::init_ah_from_wc), changed or not.
    ///
    /// Checked before the call, as for [`create_ah`](Self::create_ah): the port against
    /// the device's port count and a route's `sgid_index` against the port's GID table
    /// ([`Error::OutOfRange`], naming the limit; an empty entry is
    /// [`Error::InvalidArgument`]); on RoCE, a vector without a route is
    /// [`Error::InvalidArgument`] (every RoCE datagram carries a GRH). The rest is the
    /// provider's to check.
    pub fn create_ah_from_attr(&self, attr: &AhAttr) -> Result<AddressHandle> {
        let ctx = self.context();
        match attr.grh {
            Some(grh) => {
                ctx.port_gid(attr.port, SourceGid::Index(grh.sgid_index))?;
            }
            None if ctx.query_port(attr.port)?.link_layer == LinkLayer::Ethernet => {
                return Err(Error::InvalidArgument {
                    what: "address vector",
                    reason: format!(
                        "port {} is RoCE (Ethernet), where an address needs a global route \
                         (AhAttr::grh)",
                        attr.port
                    ),
                });
            }
            None => {}
        }
        AddressHandle::from_attr(self, &mut attr.to_raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_round_trip_keeps_every_field() {
        let grh = GlobalRoute::new("fe80::1".parse().unwrap(), 4)
            .with_hop_limit(63)
            .with_traffic_class(0x28)
            .with_flow_label(0xabcde);
        let attr = AhAttr::new(2)
            .with_dlid(0x1234)
            .with_sl(5)
            .with_src_path_bits(3)
            .with_static_rate(7)
            .with_grh(grh);
        let raw = attr.to_raw();
        assert_eq!(raw.is_global, 1);
        assert_eq!(AhAttr::from_raw(&raw), attr);
        let local = AhAttr { grh: None, ..attr };
        let raw = local.to_raw();
        assert_eq!((raw.is_global, raw.grh.sgid_index), (0, 0));
        assert_eq!(AhAttr::from_raw(&raw), local);
    }
}
