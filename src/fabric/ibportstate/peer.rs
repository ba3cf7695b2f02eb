//! Where `ibportstate`'s SMPs go ([`PeerRoute`]): the destination operand, or the route to the
//! port at the other end of a switch port: one more hop on a directed route, or, from a
//! LID, a combined route (LID-routed to the switch, then one directed hop, DrSLID the local
//! port's LID).

use crate::cli::Output;
use crate::fabric::dest::{local_port, Combined, Dest};
use crate::fabric::rpc::Rpc;

/// Most hops of a directed route.
const MAX_HOPS: usize = 63;

/// Where the SMPs go.
pub enum PeerRoute {
    /// A LID or a directed route (the port's own destination, or the switch's directed
    /// route one hop longer).
    Plain(Dest),
    /// LID-routed to the switch, then one directed hop out of the port.
    Combined(Combined),
}

impl PeerRoute {
    /// The route to the peer of port `port` of `dest`; `Err` is the `IBEXIT` message.
    pub fn new(rpc: &Rpc, dest: &Dest, port: i32) -> Result<PeerRoute, String> {
        match dest {
            Dest::Dr(path) => {
                let mut path = path.clone();
                path.push(port as u8);
                if path.len() > MAX_HOPS + 1 {
                    return Err("Too many hops".to_owned());
                }
                Ok(PeerRoute::Plain(Dest::Dr(path)))
            }
            Dest::Lid(lid) => {
                // `resolve_self`: the local port's LID, as libibumad has it.
                let Some(local) = local_port(rpc) else {
                    return Err("could not resolve self".to_owned());
                };
                Ok(PeerRoute::Combined(Combined {
                    lid: *lid,
                    slid: local.base_lid as u16,
                    path: vec![0, port as u8],
                }))
            }
        }
    }

    /// `portid2str` of the route.
    pub fn text(&self) -> String {
        match self {
            PeerRoute::Plain(dest) => dest.to_string(),
            PeerRoute::Combined(route) => route.to_string(),
        }
    }

    /// `smp_query_via` along the route: the attribute's 64 bytes, or `None` after the
    /// warnings.
    pub fn get(&self, rpc: &Rpc, attr: u16, modifier: u32, out: &mut Output) -> Option<[u8; 64]> {
        match self {
            PeerRoute::Plain(dest) => rpc.smp_get(dest, attr, modifier, out),
            PeerRoute::Combined(route) => rpc.smp_get_combined(route, attr, modifier, out),
        }
    }
}
