//! PortInfo fields as libibmad prints them (`mad_dump_field` and the `mad_dump_*` value
//! functions of its `dump.c`): `Name:` padded with dots to 32 characters, then the value.

/// CapabilityMask bit IsExtendedSpeedsSupported: the port has the LinkSpeedExt fields.
pub const CAP_HAS_EXT_SPEEDS: u32 = 1 << 14;

/// `mad_dump_field`'s line (without newline): the name, a colon, dots up to column 33,
/// then the value.
pub fn field(name: &str, value: &str) -> String {
    let dots = 32usize.saturating_sub(name.len());
    format!("{name}:{}{value}", ".".repeat(dots))
}

/// `mad_dump_portstate`: LinkState.
pub fn port_state(state: u8) -> String {
    match state {
        0 => "NoChange".to_owned(),
        1 => "Down".to_owned(),
        2 => "Initialize".to_owned(),
        3 => "Armed".to_owned(),
        4 => "Active".to_owned(),
        s => format!("?({s})"),
    }
}

/// `mad_dump_physportstate`: PhysLinkState.
pub fn phys_state(state: u8) -> String {
    let name = match state {
        0 => "NoChange",
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "PhyTest",
        s => return format!("?({s})"),
    };
    name.to_owned()
}

/// `mad_dump_linkwidth`: LinkWidthActive; `Err` holds the text for a value that is not one
/// width (the C function then also warns `bad width`).
pub fn link_width(width: u8) -> Result<String, String> {
    match width {
        1 => Ok("1X".to_owned()),
        2 => Ok("4X".to_owned()),
        4 => Ok("8X".to_owned()),
        8 => Ok("12X".to_owned()),
        16 => Ok("2X".to_owned()),
        w => Err(format!("undefined ({w})")),
    }
}

/// `dump_linkwidth`: a set of widths, `1X or 4X ...`.
fn width_set(width: u8) -> String {
    let names = [(1, "1X"), (2, "4X"), (4, "8X"), (8, "12X"), (16, "2X")];
    let parts: Vec<&str> = names
        .iter()
        .filter(|(bit, _)| width & bit != 0)
        .map(|&(_, name)| name)
        .collect();
    let mut text = parts.join(" or ");
    if width == 0 || width >> 5 != 0 {
        if !text.is_empty() {
            text.push_str(" or ");
        }
        text.push_str(&format!("undefined ({width})"));
    }
    text
}

/// `mad_dump_linkwidthen`: LinkWidthEnabled.
pub fn link_width_enabled(width: u8) -> String {
    width_set(width)
}

/// `mad_dump_linkwidthsup`: LinkWidthSupported, marked when not an IBA 1.2 set.
pub fn link_width_supported(width: u8) -> String {
    let mut text = width_set(width);
    if ![1, 3, 7, 11, 15, 17, 19, 23, 27, 31].contains(&width) && width >> 5 == 0 {
        text.push_str(" (IBA extension)");
    }
    text
}

/// `mad_dump_linkspeed`: LinkSpeedActive.
pub fn link_speed(speed: u8) -> String {
    match speed {
        0 => "Extended speed".to_owned(),
        1 => "2.5 Gbps".to_owned(),
        2 => "5.0 Gbps".to_owned(),
        4 => "10.0 Gbps".to_owned(),
        s => format!("undefined ({s})"),
    }
}

/// `dump_linkspeed`: LinkSpeedSupported and LinkSpeedEnabled.
pub fn link_speed_set(speed: u8) -> String {
    let names = [(1, "2.5 Gbps"), (2, "5.0 Gbps"), (4, "10.0 Gbps")];
    let parts: Vec<&str> = names
        .iter()
        .filter(|(bit, _)| speed & bit != 0)
        .map(|&(_, name)| name)
        .collect();
    let mut text = parts.join(" or ");
    if speed == 0 || speed >> 3 != 0 {
        if !text.is_empty() {
            text.push_str(" or ");
        }
        text.push_str(&format!("undefined ({speed})"));
    }
    if ![1, 3, 5, 7].contains(&speed) && speed >> 3 == 0 {
        text.push_str(" (IBA extension)");
    }
    text
}

/// `mad_dump_linkspeedext`: LinkSpeedExtActive.
pub fn link_speed_ext(speed: u8) -> String {
    match speed {
        0 => "No Extended Speed".to_owned(),
        1 => "14.0625 Gbps".to_owned(),
        2 => "25.78125 Gbps".to_owned(),
        4 => "53.125 Gbps".to_owned(),
        8 => "106.25 Gbps".to_owned(),
        s => format!("undefined ({s})"),
    }
}

/// `dump_linkspeedext`: LinkSpeedExtSupported.
pub fn link_speed_ext_set(speed: u8) -> String {
    if speed == 0 {
        return "0".to_owned();
    }
    let names = [
        (1, "14.0625 Gbps"),
        (2, "25.78125 Gbps"),
        (4, "53.125 Gbps"),
        (8, "106.25 Gbps"),
    ];
    let parts: Vec<&str> = names
        .iter()
        .filter(|(bit, _)| speed & bit != 0)
        .map(|&(_, name)| name)
        .collect();
    let mut text = parts.join(" or ");
    if speed >> 4 != 0 {
        if !text.is_empty() {
            text.push_str(" or ");
        }
        text.push_str(&format!("undefined ({speed})"));
    }
    text
}

/// `mad_dump_linkspeedexten`: LinkSpeedExtEnabled (30 disables extended speeds).
pub fn link_speed_ext_enabled(speed: u8) -> String {
    if speed == 30 {
        return "Extended link speeds disabled".to_owned();
    }
    link_speed_ext_set(speed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_libibmad_prints_them() {
        assert_eq!(
            field("LinkState", &port_state(4)),
            "LinkState:.......................Active"
        );
        assert_eq!(field("Lid", "1"), "Lid:.............................1");
        assert_eq!(field(&"X".repeat(40), "v"), format!("{}:v", "X".repeat(40)));
    }

    #[test]
    fn widths() {
        assert_eq!(link_width_supported(31), "1X or 4X or 8X or 12X or 2X");
        assert_eq!(link_width_supported(2), "4X (IBA extension)");
        assert_eq!(link_width_enabled(2), "4X");
        assert_eq!(link_width_enabled(0), "undefined (0)");
        assert_eq!(
            link_width_enabled(255),
            "1X or 4X or 8X or 12X or 2X or undefined (255)"
        );
        assert_eq!(link_width(2), Ok("4X".to_owned()));
        assert_eq!(link_width(0), Err("undefined (0)".to_owned()));
    }

    #[test]
    fn speeds() {
        assert_eq!(link_speed_set(7), "2.5 Gbps or 5.0 Gbps or 10.0 Gbps");
        assert_eq!(link_speed_set(1), "2.5 Gbps");
        assert_eq!(link_speed_set(4), "10.0 Gbps (IBA extension)");
        assert_eq!(link_speed_set(0), "undefined (0) (IBA extension)");
        assert_eq!(
            link_speed_set(15),
            "2.5 Gbps or 5.0 Gbps or 10.0 Gbps or undefined (15)"
        );
        assert_eq!(link_speed(1), "2.5 Gbps");
        assert_eq!(link_speed_ext(0), "No Extended Speed");
        assert_eq!(link_speed_ext_set(0), "0");
        assert_eq!(link_speed_ext_set(3), "14.0625 Gbps or 25.78125 Gbps");
        assert_eq!(link_speed_ext_enabled(30), "Extended link speeds disabled");
    }
}
