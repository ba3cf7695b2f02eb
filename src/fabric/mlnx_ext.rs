//! Mellanox's ExtendedPortInfo (vendor SMP attribute 0xff90), which `ibportstate` reads on
//! Mellanox devices (and sets for `fdr10`; it prints its four one-byte fields in hex) and
//! `ibnetdiscover` reads on their QDR links, to tell FDR10 from QDR.

use std::fmt::Write as _;

use crate::cli::Output;
use crate::fabric::portinfo_text::field;

/// AttributeID of ExtendedPortInfo.
pub const ATTR_ID: u16 = 0xff90;

/// The FDR10 bit of its speed fields and of StateChangeEnable.
pub const FDR10: u8 = 0x01;

/// The fields: name and byte offset (StateChangeEnable bits 24-31, then the supported,
/// enabled and active speeds at bits 56, 88 and 120).
const FIELDS: [(&str, usize); 4] = [
    ("StateChangeEnable", 3),
    ("LinkSpeedSupported", 7),
    ("LinkSpeedEnabled", 11),
    ("LinkSpeedActive", 15),
];

/// Offset of StateChangeEnable.
pub const STATE_CHANGE_ENABLE: usize = 3;
/// Offset of LinkSpeedEnabled.
pub const LINK_SPEED_ENABLED: usize = 11;
/// Offset of LinkSpeedActive.
pub const LINK_SPEED_ACTIVE: usize = 15;

/// `is_mlnx_ext_port_info_supported`: the Mellanox (and Bull) devices that have it.
pub fn supported(vendor_id: u32, device_id: u16) -> bool {
    let d = device_id;
    let bull = vendor_id == 0x119f;
    let switch = (0xc738..=0xc73b).contains(&d)
        || [0xc839, 0xcb20, 0xcf08, 0xcf09, 0xd2f0].contains(&d)
        || (bull
            && ([0x1b02, 0x1b50, 0x1ba0, 0x1bf0].contains(&d) || (0x1bd0..=0x1bd5).contains(&d)));
    let hca = (0x1003..=0x101b).contains(&d)
        || d == 0xa2d2
        || (bull
            && ([
                0x1b33, 0x1b73, 0x1b40, 0x1b41, 0x1b60, 0x1b61, 0x1b83, 0x1b93, 0x1b94, 0x1bb4,
                0x1bb5,
            ]
            .contains(&d)
                || (0x1bc4..=0x1bc6).contains(&d)));
    switch || hca
}

/// `show_mlnx_ext_port_info`.
pub fn show(dest: &str, port: i32, data: &[u8; 64], out: &mut Output) {
    let _ = writeln!(out, "# MLNX ext Port info: {dest} port {port}");
    for (name, offset) in FIELDS {
        let _ = writeln!(out, "{}", field(name, &format!("0x{:02x}", data[offset])));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices() {
        assert!(supported(0x2c9, 0x1003));
        assert!(supported(0x2c9, 0xcb20));
        assert!(supported(0x119f, 0x1bd3));
        assert!(!supported(0x2c9, 0x1bd3));
        assert!(!supported(0, 0));
    }
}
