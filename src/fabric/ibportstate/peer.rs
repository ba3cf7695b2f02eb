//! Where `ibportstate`'s SMPs go ([`PeerRoute`]): the destination operand, or the route to the
//! port at the other end of a switch port: one more hop on a directed
//! route, or, from a LID, a LID-routed then directed SMP (DrSLID the local LID, one hop),
//! which the shared [`Rpc`] does not send, so it goes through a port of its own here.

use std::time::Duration;

use ibumad::mad::{PortInfo, Route, Smp};
use ibumad::{Address, Port};

use crate::cli::Output;
use crate::fabric::dest::Dest;
use crate::fabric::options::Common;
use crate::fabric::rpc::Rpc;
use crate::ibdiag;

/// Most hops of a directed route.
const MAX_HOPS: usize = 63;
/// libibmad's timeout (ms) and tries.
const TIMEOUT_MS: u32 = 1000;
const TRIES: u32 = 3;

/// Where the peer's SMPs go.
pub enum PeerRoute {
    /// A LID or a directed route (the port's own destination, or the switch's directed
    /// route one hop longer).
    Plain(Dest),
    /// LID-routed to the switch, then one directed hop out of `port`.
    LidDr {
        /// The switch's LID.
        lid: u16,
        /// The local port's LID (DrSLID).
        slid: u16,
        /// The switch port to leave by.
        port: u8,
    },
}

impl PeerRoute {
    /// The route to the peer of port `port` of `dest`; `Err` is the `IBEXIT` message.
    pub fn new(rpc: &Rpc, dest: &Dest, port: i32, out: &mut Output) -> Result<PeerRoute, String> {
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
                let self_info = rpc
                    .smp_get(&Dest::Dr(vec![0]), PortInfo::ATTR_ID, 0, out)
                    .and_then(|data| PortInfo::decode(&data).ok());
                let Some(info) = self_info else {
                    return Err("could not resolve self".to_owned());
                };
                Ok(PeerRoute::LidDr {
                    lid: *lid,
                    slid: info.lid,
                    port: port as u8,
                })
            }
        }
    }

    /// `portid2str` of the route.
    pub fn text(&self) -> String {
        match self {
            PeerRoute::Plain(dest) => dest.to_string(),
            PeerRoute::LidDr { lid, slid, port } => {
                format!("Lid {lid} DR path slid {slid}; dlid 65535; 0,{port}")
            }
        }
    }

    /// `smp_query_via` along the route: the attribute's 64 bytes, or `None` after the
    /// warnings.
    pub fn get(
        &self,
        rpc: &Rpc,
        common: &Common,
        attr: u16,
        modifier: u32,
        out: &mut Output,
    ) -> Option<[u8; 64]> {
        let (lid, slid, port) = match self {
            PeerRoute::Plain(dest) => return rpc.smp_get(dest, attr, modifier, out),
            PeerRoute::LidDr { lid, slid, port } => (*lid, *slid, *port),
        };
        let mut smp = Smp::get(attr, modifier, Route::directed(&[port]));
        if let Route::Directed { dr_slid, .. } = &mut smp.route {
            *dr_slid = slid;
        }
        smp.m_key = common.m_key;
        let timeout = if common.timeout_ms > 0 {
            common.timeout_ms
        } else {
            TIMEOUT_MS
        };
        let answer = Port::open(common.ca.as_deref(), common.port.max(0) as u32)
            .ok()
            .and_then(|p| {
                let agent = p.register(0x81, 1).ok()?;
                let request = smp.encode().ok()?;
                let timeout = Duration::from_millis(u64::from(timeout));
                agent
                    .request(&request, &Address::smi(lid), timeout, TRIES - 1)
                    .ok()
            })
            .and_then(|answer| Smp::decode(&answer).ok());
        match answer {
            Some(smp) if smp.status == 0 => Some(smp.data),
            _ => {
                let msg = format!("_do_madrpc failed; dport ({})", self.text());
                ibdiag::warn(out, "mad_rpc", &msg);
                None
            }
        }
    }
}
