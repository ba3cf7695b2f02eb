//! GIDs: `union ibv_gid` and `enum ibv_gid_type`.
//!
//! Its one unsafe block reads the union's bytes ([`Gid::from_raw`]): `types` is a leaf of
//! plain values that imports no object's module, so it stays here.

use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

use crate::ffi;

/// A 128-bit global identifier (`union ibv_gid`): an IPv6 address on RoCE, subnet prefix and
/// port GUID on InfiniBand.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gid([u8; 16]);

impl Gid {
    /// The zero GID (`::`): an empty table entry, or no GID.
    pub const ZERO: Gid = Gid([0; 16]);

    /// The GID with these bytes, in network order.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Gid(bytes)
    }

    /// The bytes, in network order.
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0
    }

    /// The GID of a C `union ibv_gid`.
    pub fn from_raw(raw: ffi::ibv_gid) -> Self {
        // SAFETY: every bit pattern of the union is a valid byte array.
        Gid(unsafe { raw.raw })
    }

    /// The C `union ibv_gid`.
    pub fn to_raw(self) -> ffi::ibv_gid {
        ffi::ibv_gid { raw: self.0 }
    }

    /// The high 64 bits in host byte order: the subnet prefix (`fe80::/64` is the default).
    pub fn subnet_prefix(&self) -> u64 {
        (u128::from_be_bytes(self.0) >> 64) as u64
    }

    /// The low 64 bits in host byte order: the interface ID (the port GUID on InfiniBand).
    pub fn interface_id(&self) -> u64 {
        // Truncation keeps the low 64 bits.
        u128::from_be_bytes(self.0) as u64
    }

    /// Whether all bits are 0 (an empty table entry).
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl From<[u8; 16]> for Gid {
    fn from(bytes: [u8; 16]) -> Self {
        Gid(bytes)
    }
}

impl From<Gid> for [u8; 16] {
    fn from(gid: Gid) -> Self {
        gid.0
    }
}

impl From<Ipv6Addr> for Gid {
    fn from(addr: Ipv6Addr) -> Self {
        Gid(addr.octets())
    }
}

impl From<Gid> for Ipv6Addr {
    fn from(gid: Gid) -> Self {
        Ipv6Addr::from(gid.0)
    }
}

/// Parses IPv6 text, such as `fe80::1` or `::ffff:127.0.0.1`.
impl FromStr for Gid {
    type Err = std::net::AddrParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ipv6Addr::from_str(s).map(Gid::from)
    }
}

/// As the IPv6 address: text in human-readable formats (JSON), bytes otherwise.
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl serde::Serialize for Gid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Ipv6Addr::from(*self).serialize(s)
    }
}

/// As the IPv6 address: text in human-readable formats (JSON), bytes otherwise.
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> serde::Deserialize<'de> for Gid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ipv6Addr::deserialize(d).map(Gid::from)
    }
}

/// IPv6 text, as [`Ipv6Addr`] writes it (`fe80::200:ff:fe00:0`, `::ffff:127.0.0.1`).
impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Ipv6Addr::from(self.0), f)
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({self})")
    }
}

/// The kind of a GID table entry (`enum ibv_gid_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GidType {
    /// `IBV_GID_TYPE_IB`: InfiniBand.
    Ib,
    /// `IBV_GID_TYPE_ROCE_V1`: RoCE v1 (Ethernet, no IP header).
    RoceV1,
    /// `IBV_GID_TYPE_ROCE_V2`: RoCE v2 (UDP/IP).
    RoceV2,
    /// A value libibverbs does not name.
    Unknown(u32),
}

impl GidType {
    /// Converts the C value.
    pub fn from_raw(raw: u32) -> Self {
        use ffi::ibv_gid_type as T;
        match ffi::ibv_gid_type(raw) {
            T::IBV_GID_TYPE_IB => GidType::Ib,
            T::IBV_GID_TYPE_ROCE_V1 => GidType::RoceV1,
            T::IBV_GID_TYPE_ROCE_V2 => GidType::RoceV2,
            _ => GidType::Unknown(raw),
        }
    }

    /// The C value.
    pub fn raw(self) -> u32 {
        use ffi::ibv_gid_type as T;
        match self {
            GidType::Ib => T::IBV_GID_TYPE_IB.0,
            GidType::RoceV1 => T::IBV_GID_TYPE_ROCE_V1.0,
            GidType::RoceV2 => T::IBV_GID_TYPE_ROCE_V2.0,
            GidType::Unknown(raw) => raw,
        }
    }
}

/// `IB`, `RoCE v1` or `RoCE v2`.
impl fmt::Display for GidType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GidType::Ib => f.write_str("IB"),
            GidType::RoceV1 => f.write_str("RoCE v1"),
            GidType::RoceV2 => f.write_str("RoCE v2"),
            GidType::Unknown(raw) => write!(f, "unknown GID type ({raw})"),
        }
    }
}
