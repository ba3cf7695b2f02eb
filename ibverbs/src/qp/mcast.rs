//! UD multicast: `ibv_attach_mcast` and `ibv_detach_mcast`.
//!
//! A UD queue pair joins a multicast group with [`QueuePair::attach_mcast`] and leaves it
//! with [`QueuePair::detach_mcast`]. The QP remembers its groups: attaching twice or
//! detaching a group it is not in is an error before the C call, and dropping the QP
//! detaches it from every group it is still in before `ibv_destroy_qp`, so a QP is never
//! destroyed while attached.
//!
//! A send to a group goes to an address handle whose GID is the group's
//! ([`ProtectionDomain::create_ah`](crate::ProtectionDomain::create_ah) with an
//! [`Endpoint`](crate::Endpoint) of the group's GID) and to QP number [`MULTICAST_QPN`];
//! every QP attached to the group on the destination receives it.
//!
//! On RoCE v2 the group is also an IP multicast group, and `ibv_attach_mcast` (rxe's, at
//! least) only adds it to the netdev's link-layer filter: the host's IP stack drops the
//! group's datagrams unless the host is a member at the IP level, as rdma_cm's
//! `rdma_join_multicast` makes it. Without rdma_cm, join it yourself: a UDP socket's
//! `join_multicast_v4` on the netdev's address (held while the QP is attached), or
//! `ip addr add GROUP/32 dev NETDEV autojoin`. The netdev needs no `MULTICAST` flag (rxe on
//! `lo` works).

use crate::drop_error;
use crate::error::{check, Error, Result};
use crate::qp::QueuePair;
use crate::types::Gid;

/// The destination QP number of a multicast send (`0xFFFFFF`).
pub const MULTICAST_QPN: u32 = 0xff_ffff;

/// The first multicast LID on InfiniBand (`0xC000`); RoCE ignores the LID.
const MULTICAST_LID_BASE: u16 = 0xc000;

impl Gid {
    /// Whether this is a multicast GID: `ff00::/8`, or an IPv4-mapped IPv4 multicast
    /// address (`::ffff:224.0.0.0/100`), as the kernel checks it.
    pub fn is_multicast(&self) -> bool {
        let b = self.to_bytes();
        let v4_mapped = b[..10].iter().all(|&x| x == 0) && b[10] == 0xff && b[11] == 0xff;
        b[0] == 0xff || (v4_mapped && b[12] & 0xf0 == 0xe0)
    }
}

impl QueuePair {
    /// Attaches this UD QP to the multicast group `gid` (`ibv_attach_mcast`); `lid` is the
    /// group's multicast LID on InfiniBand (`0xC000..=0xFFFE`) and ignored on RoCE (pass 0).
    ///
    /// Checked before the call: the QP is UD ([`Error::InvalidArgument`]), the device has
    /// multicast (`max_mcast_grp` not 0, else [`Error::Unsupported`]), `gid` is a multicast
    /// GID ([`Gid::is_multicast`], else [`Error::InvalidArgument`]), on InfiniBand the LID
    /// is a multicast LID ([`Error::OutOfRange`]), the QP is not in the group yet
    /// ([`Error::InvalidArgument`]) and stays within `max_mcast_qp_attach` groups
    /// ([`Error::DeviceLimit`]).
    pub fn attach_mcast(&self, gid: Gid, lid: u16) -> Result<()> {
        // Only UD QPs have a list of groups.
        let Some(mut groups) = self.mcast_groups() else {
            return Err(Error::InvalidArgument {
                what: "queue pair type",
                reason: format!(
                    "only UD queue pairs join multicast groups, not {}",
                    self.qp_type()
                ),
            });
        };
        let dev = self.pd().context().device_limits()?;
        if dev.max_mcast_grp <= 0 {
            return Err(Error::Unsupported {
                what: "multicast (ibv_attach_mcast)",
                missing: "max_mcast_grp above 0",
            });
        }
        check_group(gid)?;
        if !self.is_roce() && !(MULTICAST_LID_BASE..0xffff).contains(&lid) {
            return Err(Error::OutOfRange {
                what: "multicast LID",
                value: lid.into(),
                min: MULTICAST_LID_BASE.into(),
                max: 0xfffe,
            });
        }
        if groups.contains(&(gid, lid)) {
            return Err(Error::InvalidArgument {
                what: "multicast group",
                reason: format!("the queue pair is already attached to {gid}"),
            });
        }
        let max = u32::try_from(dev.max_mcast_qp_attach).unwrap_or(0);
        if groups.len() as u64 >= max.into() {
            return Err(Error::DeviceLimit {
                what: "multicast groups of a queue pair",
                value: groups.len() as u64 + 1,
                limit: "max_mcast_qp_attach",
                max: max.into(),
            });
        }
        check("ibv_attach_mcast", self.raw.attach_mcast(gid, lid))?;
        groups.push((gid, lid));
        Ok(())
    }

    /// Detaches this QP from the multicast group `gid` it was attached to with `lid`
    /// (`ibv_detach_mcast`). A group the QP is not in is [`Error::InvalidArgument`], before
    /// the call.
    pub fn detach_mcast(&self, gid: Gid, lid: u16) -> Result<()> {
        check_group(gid)?;
        let mut groups = self.mcast_groups();
        let at = groups
            .as_ref()
            .and_then(|groups| groups.iter().position(|&g| g == (gid, lid)));
        let (Some(groups), Some(at)) = (groups.as_mut(), at) else {
            return Err(Error::InvalidArgument {
                what: "multicast group",
                reason: format!("the queue pair is not attached to {gid} (LID {lid:#x})"),
            });
        };
        check("ibv_detach_mcast", self.raw.detach_mcast(gid, lid))?;
        groups.swap_remove(at);
        Ok(())
    }

    /// The multicast groups the QP is attached to, as `(GID, LID)`.
    pub fn mcast(&self) -> Vec<(Gid, u16)> {
        self.mcast_groups()
            .map(|groups| groups.clone())
            .unwrap_or_default()
    }

    /// Detaches the QP from every group it is still in (before `ibv_destroy_qp`).
    pub(crate) fn detach_all_mcast(&mut self) {
        for (gid, lid) in self.take_mcast_groups() {
            drop_error::report("ibv_detach_mcast", self.raw.detach_mcast(gid, lid));
        }
    }
}

/// Fails with [`Error::InvalidArgument`] unless `gid` is a multicast GID.
fn check_group(gid: Gid) -> Result<()> {
    if gid.is_multicast() {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            what: "multicast GID",
            reason: format!("{gid} is not a multicast address (ff00::/8 or ::ffff:224.0.0.0/100)"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multicast_gids() {
        for (gid, multicast) in [
            ("ff0e::1", true),
            ("ff02::1:2", true),
            ("::ffff:239.1.2.3", true),
            ("::ffff:224.0.0.1", true),
            ("::ffff:127.0.0.1", false),
            ("::ffff:240.0.0.1", false),
            ("fe80::1", false),
            ("::", false),
        ] {
            let g: Gid = gid.parse().unwrap();
            assert_eq!(g.is_multicast(), multicast, "{gid}");
        }
    }
}
