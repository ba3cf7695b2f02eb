//! The common MAD header (IBA 13.4.2): the first 24 bytes of every MAD.

use super::{need, MadError};

/// The common MAD header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MadHeader {
    /// BaseVersion (1).
    pub base_version: u8,
    /// MgmtClass: 0x01 LID-routed SMP, 0x81 directed-route SMP, 0x04 performance, ...
    pub mgmt_class: u8,
    /// ClassVersion.
    pub class_version: u8,
    /// Method, with the response bit (0x80): 0x01 Get, 0x02 Set, 0x81 GetResp, ...
    pub method: u8,
    /// Status (for a directed-route SMP: the D bit, then 15 bits of status).
    pub status: u16,
    /// ClassSpecific (for a directed-route SMP: HopPointer, then HopCount).
    pub class_specific: u16,
    /// TransactionID.
    pub tid: u64,
    /// AttributeID.
    pub attr_id: u16,
    /// AttributeModifier.
    pub attr_mod: u32,
}

impl MadHeader {
    /// Size of the header in bytes.
    pub const SIZE: usize = 24;

    /// Decodes the header from the first 24 bytes of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<MadHeader, MadError> {
        let b = need(bytes, Self::SIZE)?;
        Ok(MadHeader {
            base_version: b[0],
            mgmt_class: b[1],
            class_version: b[2],
            method: b[3],
            status: u16::from_be_bytes([b[4], b[5]]),
            class_specific: u16::from_be_bytes([b[6], b[7]]),
            tid: u64::from_be_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
            attr_id: u16::from_be_bytes([b[16], b[17]]),
            // bytes 18-19 reserved
            attr_mod: u32::from_be_bytes([b[20], b[21], b[22], b[23]]),
        })
    }

    /// Encodes the header (reserved bytes zero).
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        b[0] = self.base_version;
        b[1] = self.mgmt_class;
        b[2] = self.class_version;
        b[3] = self.method;
        b[4..6].copy_from_slice(&self.status.to_be_bytes());
        b[6..8].copy_from_slice(&self.class_specific.to_be_bytes());
        b[8..16].copy_from_slice(&self.tid.to_be_bytes());
        b[16..18].copy_from_slice(&self.attr_id.to_be_bytes());
        b[20..24].copy_from_slice(&self.attr_mod.to_be_bytes());
        b
    }

    /// Whether the method is a response (its 0x80 bit).
    pub fn is_response(&self) -> bool {
        self.method & 0x80 != 0
    }
}
