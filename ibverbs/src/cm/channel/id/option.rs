//! `rdma_set_option`: the settings of a CM id, each with the value type the kernel reads.

use rdmacm_sys as cm;

use super::CmId;
use crate::cm::PortSpace;
use crate::error::{Error, Result};

/// A setting of a CM id, for [`CmId::set_option`] (`rdma_set_option`, level
/// `RDMA_OPTION_ID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CmOption {
    /// `RDMA_OPTION_ID_TOS`: the traffic class of the connection's packets, the name
    /// [`Route::traffic_class`](crate::Route::traffic_class) and
    /// [`StreamConfig::traffic_class`](crate::stream::StreamConfig::traffic_class) give the
    /// same byte: the IP header's type of service (DSCP and ECN, RFC 2474) on RoCE v2 and
    /// iWARP, the GRH's traffic class on InfiniBand. Any state; it applies to routes
    /// resolved after it. rdma_cm has no service level option: on RoCE the kernel derives
    /// the route's service level from this byte (the netdev's priority for it), on
    /// InfiniBand the path record the subnet administrator answers with carries it.
    #[doc(alias = "Tos")]
    #[doc(alias = "RDMA_OPTION_ID_TOS")]
    TrafficClass(u8),
    /// `RDMA_OPTION_ID_REUSEADDR`: like `SO_REUSEADDR`, the id may bind to an address that
    /// another id's connection still uses. Turned on in any state but listening; turned
    /// off only before the id is bound.
    ReuseAddr(bool),
    /// `RDMA_OPTION_ID_AFONLY`: like `IPV6_V6ONLY`, an id bound to an IPv6 wildcard takes
    /// no IPv4 peers. Only while the id is new or bound (before it listens, resolves or
    /// connects).
    AfOnly(bool),
    /// `RDMA_OPTION_ID_ACK_TIMEOUT`: the local ACK timeout of the id's RC QP, as the
    /// verbs' 5-bit exponent (4.096 µs × 2^value; 0 waits forever), 0 to 31. Connected
    /// port spaces only (TCP, IB): a UD QP has no ACK timeout.
    AckTimeout(u8),
}

impl CmOption {
    /// C's option name, for errors.
    fn name(self) -> &'static str {
        match self {
            CmOption::TrafficClass(_) => "RDMA_OPTION_ID_TOS",
            CmOption::ReuseAddr(_) => "RDMA_OPTION_ID_REUSEADDR",
            CmOption::AfOnly(_) => "RDMA_OPTION_ID_AFONLY",
            CmOption::AckTimeout(_) => "RDMA_OPTION_ID_ACK_TIMEOUT",
        }
    }

    /// When the kernel takes the option: what its `EINVAL` means.
    fn state_rule(self) -> &'static str {
        match self {
            CmOption::ReuseAddr(true) => "turned on only while the id is not listening",
            CmOption::ReuseAddr(false) => "turned off only before the id is bound",
            CmOption::AfOnly(_) => {
                "set only while the id is new or bound (not listening, resolved or connected)"
            }
            CmOption::TrafficClass(_) | CmOption::AckTimeout(_) => "refused by the kernel",
        }
    }
}

impl CmId {
    /// `rdma_set_option` at level `RDMA_OPTION_ID`: sets `option` on the id.
    ///
    /// Errors: [`Error::OutOfRange`] for an ACK timeout above 31 and
    /// [`Error::InvalidArgument`] for one on a UD port space (UDP, IPoIB), both before
    /// librdmacm; [`Error::InvalidArgument`] naming the rule when the kernel refuses the
    /// option in the id's state (`EINVAL`), such as address reuse after `bind`.
    pub fn set_option(&self, option: CmOption) -> Result<()> {
        if let CmOption::AckTimeout(t) = option {
            Error::at_most(
                "ACK timeout exponent (RDMA_OPTION_ID_ACK_TIMEOUT)",
                t.into(),
                31,
            )?;
            if matches!(self.port_space(), PortSpace::Udp | PortSpace::Ipoib) {
                return Err(Error::InvalidArgument {
                    what: "RDMA_OPTION_ID_ACK_TIMEOUT",
                    reason: format!(
                        "an ACK timeout is for connected QPs; this id's port space is {:?} (UD)",
                        self.port_space()
                    ),
                });
            }
        }
        // The kernel reads a u8 for TOS and the ACK timeout, an int for the flags.
        let result = match option {
            CmOption::TrafficClass(v) => self.raw.set_option(cm::RDMA_OPTION_ID_TOS, &v),
            CmOption::AckTimeout(v) => self.raw.set_option(cm::RDMA_OPTION_ID_ACK_TIMEOUT, &v),
            CmOption::ReuseAddr(v) => self
                .raw
                .set_option(cm::RDMA_OPTION_ID_REUSEADDR, &i32::from(v)),
            CmOption::AfOnly(v) => self
                .raw
                .set_option(cm::RDMA_OPTION_ID_AFONLY, &i32::from(v)),
        };
        result.map_err(|err| {
            if err.raw_os_error() == Some(libc::EINVAL) {
                Error::InvalidArgument {
                    what: option.name(),
                    reason: format!("{} (EINVAL)", option.state_rule()),
                }
            } else {
                err
            }
        })
    }
}
