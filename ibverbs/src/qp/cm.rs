//! A [`QueuePair`] on a CM id (`rdma_create_qp_ex`): the builder's QP, which librdmacm
//! creates on the id's device and port and moves through its states; a child of `qp` so
//! that it fills the same private fields as [`QueuePairBuilder::build`].

use std::ptr::NonNull;

use rdmacm_sys as cm;

use super::{QueuePair, QueuePairBuilder};
use crate::cm::PortSpace;
use crate::context::port_cache::SourceGid;
use crate::context::Context;
use crate::error::{check, Error, Result};
use crate::types::Gid;
use crate::types::QpType;

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
        let fits = match ps {
            PortSpace::Tcp => self.qp_type == QpType::Rc,
            PortSpace::Udp | PortSpace::Ipoib => self.qp_type == QpType::Ud,
            PortSpace::Ib => matches!(self.qp_type, QpType::Rc | QpType::Uc | QpType::Ud),
        };
        if !fits {
            return Err(Error::InvalidArgument {
                what: "queue pair type",
                reason: format!(
                    "a {:?} QP does not fit port space {ps:?} (TCP: RC; UDP, IPoIB: UD; IB: RC, UC, UD)",
                    self.qp_type
                ),
            });
        }
        Ok(())
    }

    /// Creates the QP on `id` (`rdma_create_qp_ex`); librdmacm moves it to INIT (a UD QP
    /// of the UDP port space at once to RTS), and on connect or accept to RTS. The QP sends
    /// from the GID of the id's route.
    ///
    /// # Safety
    /// `id` must be a live id bound to a device, without a QP, of the port space
    /// [`check_for_cm`](Self::check_for_cm) passed; the builder's PD must be of the id's
    /// device (`ctx`, its context). On success the id's `qp` is the returned QP, which
    /// the caller must clear before the QP drops (librdmacm must not reach it after).
    pub(crate) unsafe fn create_on_id(
        &self,
        id: NonNull<cm::rdma_cm_id>,
        ctx: &Context,
    ) -> Result<QueuePair> {
        self.check_parts()?;
        // SAFETY: the id is live (caller); librdmacm set its port and route when it bound
        // the id to its device.
        let (port_num, sgid) = unsafe {
            let id = id.as_ptr();
            let ibaddr = (*id).route.addr.addr.ibaddr.as_ref();
            ((*id).port_num, Gid::from_raw(ibaddr.sgid))
        };
        let (port, gid) = ctx.port_gid(port_num, SourceGid::Route(sgid))?;
        let mut init = self.init_attr();
        let asked = init;
        // SAFETY: the id is live and bound to the PD's device (caller); the CQs and SRQ are
        // of it (check_parts); they are kept alive by the QueuePair below.
        let rc = unsafe { cm::rdma_create_qp_ex(id.as_ptr(), &mut init) };
        check("rdma_create_qp_ex", rc)
            .map_err(|err| super::builder::creation_error(ctx.ptr(), &asked, err))?;
        // SAFETY: the id is live and now has a QP.
        let raw = unsafe { (*id.as_ptr()).qp };
        let Some(raw) = NonNull::new(raw) else {
            return Err(Error::InvalidArgument {
                what: "rdma_create_qp_ex",
                reason: "returned no QP".into(),
            });
        };
        // SAFETY: raw was just created from init on the builder's objects; librdmacm does
        // not destroy it (rdma_destroy_qp is never called on a QP that was wrapped).
        let qp = unsafe { self.wrap(raw, &init, port_num, &gid, &port) };
        if let Some(ex) = qp.qp_ex() {
            if let Err(err) = ex.check_provider() {
                // SAFETY: the id is live; librdmacm must not reach the QP once it drops.
                unsafe { (*id.as_ptr()).qp = std::ptr::null_mut() };
                return Err(err);
            }
        }
        Ok(qp)
    }
}
