//! PortInfoExtended (SMP attribute 0x0033, IBA 14.2.5.19): the port's FEC modes per speed.

use super::bits::{get, layout, set};
use super::{need, MadError};

layout! {
    /// PortInfoExtended (IBA 14.2.5.19) up to NDRFECModeEnabled; bits not listed are
    /// reserved (encoded as zero).
    PortInfoExtended, 24;
    /// CapabilityMask (bit 0: IsFECModeSupported).
    capability_mask: u32 = (0, 32),
    /// FECModeActive.
    fec_mode_active: u16 = (32, 16),
    /// FDRFECModeSupported.
    fdr_fec_mode_supported: u16 = (48, 16),
    /// FDRFECModeEnabled.
    fdr_fec_mode_enabled: u16 = (64, 16),
    /// EDRFECModeSupported.
    edr_fec_mode_supported: u16 = (80, 16),
    /// EDRFECModeEnabled.
    edr_fec_mode_enabled: u16 = (96, 16),
    /// HDRFECModeSupported.
    hdr_fec_mode_supported: u16 = (112, 16),
    /// HDRFECModeEnabled.
    hdr_fec_mode_enabled: u16 = (128, 16),
    /// NDRFECModeSupported.
    ndr_fec_mode_supported: u16 = (144, 16),
    /// NDRFECModeEnabled.
    ndr_fec_mode_enabled: u16 = (160, 16),
}

impl PortInfoExtended {
    /// AttributeID of PortInfoExtended.
    pub const ATTR_ID: u16 = 0x0033;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_at_their_bits() {
        let mut data = [0u8; 64];
        data[..4].copy_from_slice(&[0, 0, 0, 1]);
        for (i, chunk) in data[4..22].chunks_mut(2).enumerate() {
            chunk.copy_from_slice(&[i as u8, 0x10 + i as u8]);
        }
        let pie = PortInfoExtended::decode(&data).unwrap();
        assert_eq!((pie.capability_mask, pie.fec_mode_active), (1, 0x0010));
        assert_eq!(pie.fdr_fec_mode_supported, 0x0111);
        assert_eq!(pie.edr_fec_mode_enabled, 0x0414);
        assert_eq!(pie.ndr_fec_mode_enabled, 0x0818);
        assert_eq!(pie.encode(), data[..PortInfoExtended::SIZE]);
        assert!(PortInfoExtended::decode(&data[..23]).is_err());
    }
}
