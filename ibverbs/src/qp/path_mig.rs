//! Automatic path migration (APM): the alternate path of an RC or UC queue pair
//! ([`AltPath`]), loaded as it connects ([`ConnectOptions::alt_path`]) or later
//! ([`QueuePair::load_alt_path`]), and a migration request ([`QueuePair::migrate_path`]).
//!
//! [`ConnectOptions::alt_path`]: super::ConnectOptions::alt_path

use super::QueuePair;
use crate::ah::attr::AhAttr;
use crate::context::port::LinkLayer;
use crate::context::port_cache::SourceGid;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::ffi;
use crate::types::QpType;

/// The alternate path of an RC or UC queue pair: the `alt_*` fields of `struct
/// ibv_qp_attr` (`alt_ah_attr`, `alt_port_num`, `alt_timeout`, `alt_pkey_index`), for
/// [`ConnectOptions::alt_path`](crate::ConnectOptions::alt_path) and
/// [`QueuePair::load_alt_path`].
///
/// Start from [`AltPath::new`] with the path's address vector and set what differs:
/// `AltPath::new(AhAttr::new(2).with_dlid(lid)).timeout(16).pkey_index(1)`.
///
/// Checked where it is used, before the call: the device reports automatic path migration
/// (`IBV_DEVICE_AUTO_PATH_MIG`, else [`Error::Unsupported`]); the ACK timeout is at most
/// 31, the service level at most 15, a flow label 20 bits, the port one of the device's,
/// the P_Key index inside that port's table and a route's GID index inside its GID table
/// ([`Error::OutOfRange`], naming the limit; an empty GID entry is
/// [`Error::InvalidArgument`]); and the QP's port and the path's are InfiniBand
/// ([`Error::Unsupported`]): Linux's RDMA core takes an alternate path on InfiniBand ports
/// only, and `ibv_modify_qp` fails with `EINVAL` on RoCE (so on rxe, though rxe reports
/// `IBV_DEVICE_AUTO_PATH_MIG`) and iWARP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AltPath {
    ah_attr: AhAttr,
    timeout: u8,
    pkey_index: u16,
}

impl AltPath {
    /// The path along the address vector `ah_attr` (`alt_ah_attr`), from its port
    /// (`alt_port_num`), with ACK timeout 14 (67 ms, as [`ConnectOptions::new`]'s) and
    /// P_Key index 0.
    ///
    /// [`ConnectOptions::new`]: crate::ConnectOptions::new
    pub fn new(ah_attr: AhAttr) -> Self {
        AltPath {
            ah_attr,
            timeout: 14,
            pkey_index: 0,
        }
    }

    /// The local port of the path (`alt_port_num`, and the vector's `port_num`: the kernel
    /// refuses the two apart, so one setting sets both).
    pub fn port(mut self, port: u8) -> Self {
        self.ah_attr.port = port;
        self
    }

    /// The local ACK timeout exponent on the path (`alt_timeout`, 0 to 31): 4.096 µs ×
    /// 2^timeout, 0 waiting forever.
    pub fn timeout(mut self, timeout: u8) -> Self {
        self.timeout = timeout;
        self
    }

    /// The index of the path's P_Key in its port's P_Key table (`alt_pkey_index`).
    pub fn pkey_index(mut self, index: u16) -> Self {
        self.pkey_index = index;
        self
    }

    /// Fails unless the path suits a QP of `qp_type` on port `qp_port` of `ctx`, with the
    /// errors of the type's docs, in that order.
    pub(super) fn check(&self, ctx: &Context, qp_type: QpType, qp_port: u8) -> Result<()> {
        check_apm(ctx, qp_type)?;
        let av = &self.ah_attr;
        let flow_label = av.grh.map_or(0, |grh| grh.flow_label);
        for (what, value, max) in [
            ("alternate path ACK timeout", self.timeout.into(), 31),
            ("service level", av.sl.into(), 15),
            ("flow label", flow_label.into(), 0xf_ffff),
        ] {
            Error::at_most(what, value, max)?;
        }
        let port = ctx.query_port(av.port)?;
        if self.pkey_index >= port.pkey_tbl_len {
            return Err(Error::OutOfRange {
                what: "P_Key index",
                value: self.pkey_index.into(),
                min: 0,
                max: port.pkey_tbl_len.saturating_sub(1).into(),
            });
        }
        if let Some(grh) = av.grh {
            ctx.port_gid(av.port, SourceGid::Index(grh.sgid_index))?;
        }
        let infiniband = |link| link == LinkLayer::InfiniBand;
        if !infiniband(port.link_layer) || !infiniband(ctx.query_port(qp_port)?.link_layer) {
            return Err(Error::Unsupported {
                what: "an alternate path (automatic path migration) on a RoCE or iWARP port",
                missing: "an InfiniBand link layer on the QP's port and the path's: Linux's \
                          RDMA core takes alternate paths on InfiniBand ports only \
                          (ibv_modify_qp fails with EINVAL)",
            });
        }
        Ok(())
    }

    /// Writes the path into `attr`, with the migration state `IBV_MIG_REARM` (the HCA is
    /// to arm it), and returns the mask bits of both.
    pub(super) fn apply(&self, attr: &mut ffi::ibv_qp_attr) -> ffi::ibv_qp_attr_mask {
        attr.alt_ah_attr = self.ah_attr.to_raw();
        attr.alt_port_num = self.ah_attr.port;
        attr.alt_timeout = self.timeout;
        attr.alt_pkey_index = self.pkey_index;
        attr.path_mig_state = ffi::ibv_mig_state::IBV_MIG_REARM;
        ffi::ibv_qp_attr_mask::IBV_QP_ALT_PATH | ffi::ibv_qp_attr_mask::IBV_QP_PATH_MIG_STATE
    }
}

/// Fails unless a QP of `qp_type` has paths to migrate between (RC, UC:
/// [`Error::InvalidArgument`]) and the device of `ctx` reports automatic path migration
/// (`IBV_DEVICE_AUTO_PATH_MIG` of `ibv_query_device`: [`Error::Unsupported`]).
fn check_apm(ctx: &Context, qp_type: QpType) -> Result<()> {
    if !matches!(qp_type, QpType::Rc | QpType::Uc) {
        return Err(Error::InvalidArgument {
            what: "queue pair type",
            reason: format!(
                "a {qp_type} queue pair has no path to migrate: alternate paths are RC's \
                 and UC's"
            ),
        });
    }
    let flag = ffi::ibv_device_cap_flags::IBV_DEVICE_AUTO_PATH_MIG.0;
    if ctx.device_limits()?.device_cap_flags & flag == 0 {
        return Err(Error::Unsupported {
            what: "automatic path migration (an alternate path, a migration request)",
            missing: "IBV_DEVICE_AUTO_PATH_MIG in device_cap_flags",
        });
    }
    Ok(())
}

impl QueuePair {
    /// Loads an alternate path into the RC or UC QP and asks the HCA to arm it
    /// (`ibv_modify_qp` with `IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE`, `path_mig_state`
    /// `IBV_MIG_REARM`; the QP stays in its state, RTS). [`query`](Self::query) reads the
    /// path back (`alt_ah_attr`, `alt_port`, `alt_timeout`, `alt_pkey_index`) and tells when
    /// the HCA armed it ([`PathMigState::Armed`](crate::PathMigState::Armed)).
    ///
    /// Checked before the call as [`AltPath`] says; a QP of another type is
    /// [`Error::InvalidArgument`]. The provider's refusal (a QP in ERROR, say) is
    /// [`Error::Verb`] naming `ibv_modify_qp`.
    ///
    /// Once armed, the HCA migrates to the path when the primary one fails, or when asked
    /// ([`migrate_path`](Self::migrate_path)), and reports it on the context
    /// ([`Context::get_async_event`](crate::Context::get_async_event)) as
    /// [`AsyncEventKind::PathMig`](crate::AsyncEventKind::PathMig) from
    /// [`EventSource::Qp`](crate::EventSource::Qp) of this QP (its
    /// [`ObjectId`](crate::ObjectId) is the address of
    /// [`as_raw`](crate::AsRaw::as_raw)); a migration that failed is
    /// [`AsyncEventKind::PathMigErr`](crate::AsyncEventKind::PathMigErr) from this QP.
    pub fn load_alt_path(&self, path: &AltPath) -> Result<()> {
        path.check(self.pd().context(), self.qp_type, self.port)?;
        let mut attr = ffi::ibv_qp_attr::default();
        let mask = path.apply(&mut attr);
        self.transition(&mut attr, mask)
    }

    /// Asks the RC or UC QP to migrate to its alternate path now (`ibv_modify_qp` with
    /// `IBV_QP_PATH_MIG_STATE`, `path_mig_state` `IBV_MIG_MIGRATED`; the QP stays in its
    /// state, RTS).
    ///
    /// Checked before the call: the QP's type ([`Error::InvalidArgument`] but for RC and UC)
    /// and the device's `IBV_DEVICE_AUTO_PATH_MIG` ([`Error::Unsupported`]). The verbs
    /// specification lets a client ask only of a QP whose alternate path is armed
    /// ([`PathMigState::Armed`](crate::PathMigState::Armed) in [`query`](Self::query)); what
    /// a provider does with another is its own: rxe (Linux 6.1 and 7.3, whose ports are
    /// RoCE, so that no alternate path can be loaded) records `Migrated` whatever the
    /// state was, moves no traffic and reports no event. Where the HCA migrates, it reports
    /// [`AsyncEventKind::PathMig`](crate::AsyncEventKind::PathMig) from this QP, as
    /// [`load_alt_path`](Self::load_alt_path) says.
    pub fn migrate_path(&self) -> Result<()> {
        check_apm(self.pd().context(), self.qp_type)?;
        let mut attr = ffi::ibv_qp_attr {
            path_mig_state: ffi::ibv_mig_state::IBV_MIG_MIGRATED,
            ..Default::default()
        };
        self.transition(&mut attr, ffi::ibv_qp_attr_mask::IBV_QP_PATH_MIG_STATE)
    }
}
