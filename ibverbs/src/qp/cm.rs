//! A [`QueuePair`] on a CM id (`rdma_create_qp_ex`): the builder's QP, which librdmacm
//! creates on the id's device and port and moves through its states; a child of `qp` so
//! that it fills the same private fields as [`QueuePairBuilder::build`]. The calls on the id
//! are in `qp/raw.rs` (`CmQpId`, and `create_on_id`, the unsafe way in).

use super::raw::CmQpId;
use super::{PreparedQueuePair, QueuePair, QueuePairBuilder};
use crate::cm::PortSpace;
use crate::context::port_cache::SourceGid;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::types::{Gid, QpType};

/// Refuses a QP of `qp_type` on an id of port space `ps` that does not carry it.
fn check_fits(qp_type: QpType, ps: PortSpace) -> Result<()> {
    let fits = match ps {
        PortSpace::Tcp => qp_type == QpType::Rc,
        PortSpace::Udp | PortSpace::Ipoib => qp_type == QpType::Ud,
        PortSpace::Ib => matches!(qp_type, QpType::Rc | QpType::Uc | QpType::Ud),
    };
    if fits {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        what: "queue pair type",
        reason: format!(
            "a {qp_type:?} QP does not fit port space {ps:?} (TCP: RC; UDP, IPoIB: UD; IB: RC, UC, UD)"
        ),
    })
}

impl QueuePairBuilder<'_> {
    /// Refuses the settings rdma_cm decides for a QP on an id (its port and GID, from the
    /// id's route; its access flags and Q_Key) and a transport the port space does not
    /// carry.
    pub(crate) fn check_for_cm(&self, ps: PortSpace) -> Result<()> {
        let decided = [
            (self.port.is_some(), "port"),
            (self.gid_index.is_some(), "gid_index"),
            (self.access.is_some(), "access"),
            (self.qkey.is_some(), "qkey"),
        ];
        if let Some((_, setting)) = decided.iter().find(|(set, _)| *set) {
            return Err(Error::InvalidArgument {
                what: "queue pair builder for a CM id",
                reason: format!(
                    "{setting} is rdma_cm's to set on a QP of a CM id (from the id's route, \
                     or RDMA_UDP_QKEY and the connection's rights); leave it unset"
                ),
            });
        }
        check_fits(self.qp_type, ps)
    }

    /// Creates the QP on `id` (see [`create_on_id`](Self::create_on_id)), whose context is
    /// `ctx`.
    pub(super) fn create_on(&self, id: CmQpId, ctx: &Context) -> Result<QueuePair> {
        let init = self.check_parts()?;
        let (port_num, sgid) = id.route();
        let (port, gid) = ctx.port_gid(port_num, SourceGid::Route(sgid))?;
        let raw = id
            .create_qp(&init)
            .map_err(|err| super::builder::creation_error(&init, err))?;
        let Some(mut raw) = raw else {
            return Err(Error::InvalidArgument {
                what: "rdma_create_qp_ex",
                reason: "returned no QP".into(),
            });
        };
        if let Err(err) = raw.enable_batches() {
            // librdmacm must not reach the QP once it drops.
            id.forget_qp();
            return Err(err);
        }
        Ok(self.wrap(raw, port_num, &gid, &port))
    }
}

impl PreparedQueuePair {
    /// Refuses the QP as the QP of an id of port space `ps` on the device of `ctx` (see
    /// [`set_on_id`](Self::set_on_id)) unless its type fits the port space, it is of that
    /// device and it was built on the port and GID of the id's route (`route`; iWARP's
    /// has no GID), which rdma_cm connects it from.
    pub(crate) fn check_for_id(
        &self,
        ps: PortSpace,
        ctx: &Context,
        route: (u8, Gid),
    ) -> Result<()> {
        let qp = self.qp();
        check_fits(qp.qp_type, ps)?;
        if qp.pd().context().name() != ctx.name() {
            return Err(Error::Mismatch {
                what: "queue pair",
                owner: "device (the CM id's)",
            });
        }
        let (port, sgid) = route;
        // An iWARP route has no GID (zero): only its port is compared.
        let gid_differs = !sgid.is_zero() && qp.gid != sgid;
        if qp.port != port || gid_differs {
            return Err(Error::InvalidArgument {
                what: "queue pair for a CM id",
                reason: format!(
                    "built on port {} GID {}, but the id's route is from port {port} GID {sgid}: \
                     build it with that port and GID's index",
                    qp.port, qp.gid
                ),
            });
        }
        Ok(())
    }
}
