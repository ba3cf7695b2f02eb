//! Subnet management packets (IBA 14.2.1): LID-routed (class 0x01) and directed-route
//! (class 0x81, the path given as the port to leave by at each hop).

use super::{need, MadError, MadHeader};
use crate::MAD_SIZE;

/// Management class of LID-routed SMPs.
const CLASS_LID: u8 = 0x01;
/// Management class of directed-route SMPs.
const CLASS_DR: u8 = 0x81;
/// Most hops a directed route can have: the 64-byte path, entry 0 unused.
const MAX_HOPS: usize = 63;

/// How an SMP is routed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// By the destination LID of the packet (class 0x01).
    Lid,
    /// Directed route (class 0x81).
    Directed {
        /// The D bit: set on the way back (in responses).
        inbound: bool,
        /// HopPointer.
        hop_pointer: u8,
        /// DrSLID (0xffff, permissive, while the route starts at the sender).
        dr_slid: u16,
        /// DrDLID (0xffff, permissive, while the route ends at the destination).
        dr_dlid: u16,
        /// InitialPath[1..=HopCount]: the port to leave by at each hop (HopCount is its
        /// length, at most 63).
        path: Vec<u8>,
        /// ReturnPath[1..=HopCount], filled in by the nodes on the way.
        return_path: Vec<u8>,
    },
}

impl Route {
    /// A directed route out along `path` (ports, one per hop), as a request has it.
    pub fn directed(path: &[u8]) -> Route {
        Route::Directed {
            inbound: false,
            hop_pointer: 0,
            dr_slid: 0xffff,
            dr_dlid: 0xffff,
            path: path.to_vec(),
            return_path: vec![0; path.len()],
        }
    }
}

/// A subnet management packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Smp {
    /// Method, with the response bit (0x80).
    pub method: u8,
    /// Status (15 bits on a directed route, whose top bit is the D bit of [`Route`]).
    pub status: u16,
    /// TransactionID.
    pub tid: u64,
    /// AttributeID (0x0011 NodeInfo, 0x0010 NodeDescription, 0x0015 PortInfo, ...).
    pub attr_id: u16,
    /// AttributeModifier (e.g. the port number for PortInfo).
    pub attr_mod: u32,
    /// M_Key.
    pub m_key: u64,
    /// LID-routed or directed route.
    pub route: Route,
    /// The attribute's 64 bytes.
    pub data: [u8; 64],
}

impl Smp {
    /// A Get (method 0x01) of `attr_id` with `attr_mod` along `route`, data zero.
    pub fn get(attr_id: u16, attr_mod: u32, route: Route) -> Smp {
        Smp {
            method: 0x01,
            status: 0,
            tid: 0,
            attr_id,
            attr_mod,
            m_key: 0,
            route,
            data: [0; 64],
        }
    }

    /// Decodes an SMP from a 256-byte MAD.
    pub fn decode(bytes: &[u8]) -> Result<Smp, MadError> {
        let b = need(bytes, MAD_SIZE)?;
        let h = MadHeader::decode(b)?;
        let word = |at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
        let (status, route) = match h.mgmt_class {
            CLASS_LID => (h.status, Route::Lid),
            CLASS_DR => {
                let [hop_pointer, hop_count] = h.class_specific.to_be_bytes();
                let hops = usize::from(hop_count);
                if hops > MAX_HOPS {
                    return Err(MadError::HopCount(hops));
                }
                let route = Route::Directed {
                    inbound: h.status & 0x8000 != 0,
                    hop_pointer,
                    dr_slid: word(32),
                    dr_dlid: word(34),
                    path: b[129..129 + hops].to_vec(),
                    return_path: b[193..193 + hops].to_vec(),
                };
                (h.status & 0x7fff, route)
            }
            class => return Err(MadError::Class(class)),
        };
        let mut data = [0; 64];
        data.copy_from_slice(&b[64..128]);
        Ok(Smp {
            method: h.method,
            status,
            tid: h.tid,
            attr_id: h.attr_id,
            attr_mod: h.attr_mod,
            m_key: u64::from_be_bytes(b[24..32].try_into().unwrap_or_default()),
            route,
            data,
        })
    }

    /// Encodes the SMP as a 256-byte MAD; fails on a directed route of over 63 hops or
    /// with a return path of another length.
    pub fn encode(&self) -> Result<[u8; MAD_SIZE], MadError> {
        let mut b = [0u8; MAD_SIZE];
        let mut h = MadHeader {
            base_version: 1,
            mgmt_class: CLASS_LID,
            class_version: 1,
            method: self.method,
            status: self.status,
            class_specific: 0,
            tid: self.tid,
            attr_id: self.attr_id,
            attr_mod: self.attr_mod,
        };
        if let Route::Directed {
            inbound,
            hop_pointer,
            dr_slid,
            dr_dlid,
            path,
            return_path,
        } = &self.route
        {
            if path.len() > MAX_HOPS || return_path.len() != path.len() {
                return Err(MadError::HopCount(path.len().max(return_path.len())));
            }
            h.mgmt_class = CLASS_DR;
            h.status = (self.status & 0x7fff) | if *inbound { 0x8000 } else { 0 };
            h.class_specific = u16::from_be_bytes([*hop_pointer, path.len() as u8]);
            b[32..34].copy_from_slice(&dr_slid.to_be_bytes());
            b[34..36].copy_from_slice(&dr_dlid.to_be_bytes());
            b[129..129 + path.len()].copy_from_slice(path);
            b[193..193 + return_path.len()].copy_from_slice(return_path);
        }
        b[..MadHeader::SIZE].copy_from_slice(&h.encode());
        b[24..32].copy_from_slice(&self.m_key.to_be_bytes());
        b[64..128].copy_from_slice(&self.data);
        Ok(b)
    }
}

/// Parses a directed-route path as the diagnostic tools write it, `0,1,4`: a leading 0
/// (the local port) then the port to leave by at each hop; `0` alone is the local node.
pub fn parse_dr_path(text: &str) -> Result<Vec<u8>, MadError> {
    let bad = || MadError::Path(text.to_owned());
    let mut parts = text.split(',').map(str::trim);
    if parts.next() != Some("0") {
        return Err(bad());
    }
    let path = parts
        .map(|p| p.parse::<u8>().map_err(|_| bad()))
        .collect::<Result<Vec<u8>, MadError>>()?;
    if path.len() > MAX_HOPS {
        return Err(MadError::HopCount(path.len()));
    }
    Ok(path)
}
