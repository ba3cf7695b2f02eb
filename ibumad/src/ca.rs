//! The local channel adapters and their ports, as libibumad sees them (`umad_get_cas_names`,
//! `umad_get_ca`).

use std::ffi::{c_char, CStr, CString};
use std::mem::MaybeUninit;

use ibumad_sys as sys;

use crate::{init, Error, Result};

/// The names of the local CAs (`umad_get_cas_names`), in libibumad's order.
pub fn ca_names() -> Result<Vec<String>> {
    init()?;
    let mut names = [[0 as c_char; sys::UMAD_CA_NAME_LEN as usize]; sys::UMAD_MAX_DEVICES as usize];
    // SAFETY: `names` has UMAD_MAX_DEVICES entries of UMAD_CA_NAME_LEN bytes, as `max` says.
    let n = unsafe { sys::umad_get_cas_names(names.as_mut_ptr(), names.len() as i32) };
    if n < 0 {
        return Err(Error::call("umad_get_cas_names", n));
    }
    Ok(names
        .iter()
        .take(n as usize)
        .map(|name| c_chars(name))
        .collect())
}

/// A CA's attributes (`umad_get_ca`), copied out of libibumad's `umad_ca_t`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ca {
    /// Device name, e.g. `mlx5_0` (`ibsim0` on the simulator).
    pub name: String,
    /// Node type: 1 channel adapter, 2 switch, 3 router.
    pub node_type: u32,
    /// Number of physical ports.
    pub num_ports: u32,
    /// Firmware version.
    pub fw_ver: String,
    /// CA type (board id), e.g. `MT4123`.
    pub ca_type: String,
    /// Hardware version.
    pub hw_ver: String,
    /// Node GUID (host order).
    pub node_guid: u64,
    /// System image GUID (host order).
    pub system_guid: u64,
    /// The ports libibumad found, by increasing number (port 0 alone on a switch).
    pub ports: Vec<CaPort>,
}

/// One port of a [`Ca`] (`umad_port_t`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaPort {
    /// Port number (0 is a switch's management port).
    pub port_num: u32,
    /// Base LID (0 until the subnet manager assigns one).
    pub base_lid: u32,
    /// LID mask count.
    pub lmc: u32,
    /// LID of the subnet manager.
    pub sm_lid: u32,
    /// Service level to reach the subnet manager.
    pub sm_sl: u32,
    /// Logical state: 1 Down, 2 Initialize, 3 Armed, 4 Active.
    pub state: u32,
    /// Physical state: 1 Sleep, 2 Polling, 3 Disabled, 5 LinkUp, ...
    pub phys_state: u32,
    /// Rate in Gb/s, as sysfs gives it (0 when unknown).
    pub rate: u32,
    /// Capability mask (host order).
    pub capmask: u32,
    /// GID prefix (host order).
    pub gid_prefix: u64,
    /// Port GUID (host order).
    pub port_guid: u64,
    /// The P_Key table.
    pub pkeys: Vec<u16>,
    /// `InfiniBand` or `Ethernet`.
    pub link_layer: String,
}

impl Ca {
    /// The attributes of CA `name`, or of libibumad's default CA when `None`
    /// (`umad_get_ca`, then `umad_release_ca`).
    pub fn get(name: Option<&str>) -> Result<Ca> {
        init()?;
        let name = name.map(ca_name).transpose()?;
        let mut ca = MaybeUninit::<sys::umad_ca_t>::zeroed();
        let name_ptr = name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr());
        // SAFETY: name_ptr is null or a NUL-terminated string; ca is writable for a
        // umad_ca_t.
        let rc = unsafe { sys::umad_get_ca(name_ptr, ca.as_mut_ptr()) };
        if rc < 0 {
            return Err(Error::call("umad_get_ca", rc));
        }
        // SAFETY: umad_get_ca succeeded and filled it in.
        let mut ca = unsafe { ca.assume_init() };
        let copy = Ca::from_raw(&ca);
        // SAFETY: ca was filled in by umad_get_ca, is released once, and nothing points
        // into it any more (from_raw copied everything).
        unsafe { sys::umad_release_ca(&mut ca) };
        Ok(copy)
    }

    fn from_raw(ca: &sys::umad_ca_t) -> Ca {
        let ports = ca
            .ports
            .iter()
            .filter(|p| !p.is_null())
            // SAFETY: non-null entries point to ports umad_get_ca allocated, valid until
            // umad_release_ca.
            .map(|&p| CaPort::from_raw(unsafe { &*p }))
            .collect();
        Ca {
            name: c_chars(&ca.ca_name),
            node_type: ca.node_type,
            num_ports: u32::try_from(ca.numports).unwrap_or(0),
            fw_ver: c_chars(&ca.fw_ver),
            ca_type: c_chars(&ca.ca_type),
            hw_ver: c_chars(&ca.hw_ver),
            node_guid: u64::from_be(ca.node_guid),
            system_guid: u64::from_be(ca.system_guid),
            ports,
        }
    }
}

impl CaPort {
    fn from_raw(port: &sys::umad_port_t) -> CaPort {
        let pkeys = if port.pkeys.is_null() {
            Vec::new()
        } else {
            // SAFETY: libibumad allocates `pkeys_size` entries at `pkeys`, valid until
            // umad_release_ca.
            unsafe { std::slice::from_raw_parts(port.pkeys, port.pkeys_size as usize) }.to_vec()
        };
        CaPort {
            port_num: u32::try_from(port.portnum).unwrap_or(0),
            base_lid: port.base_lid,
            lmc: port.lmc,
            sm_lid: port.sm_lid,
            sm_sl: port.sm_sl,
            state: port.state,
            phys_state: port.phys_state,
            rate: port.rate,
            capmask: u32::from_be(port.capmask),
            gid_prefix: u64::from_be(port.gid_prefix),
            port_guid: u64::from_be(port.port_guid),
            pkeys,
            link_layer: c_chars(&port.link_layer),
        }
    }
}

/// `name` as a C string libibumad accepts (no NUL, shorter than `UMAD_CA_NAME_LEN`).
pub(crate) fn ca_name(name: &str) -> Result<CString> {
    if name.len() >= sys::UMAD_CA_NAME_LEN as usize {
        return Err(Error::InvalidName(name.to_owned()));
    }
    CString::new(name).map_err(|_| Error::InvalidName(name.to_owned()))
}

/// The text of a fixed-size C char array, up to its first NUL (all of it if none).
fn c_chars(chars: &[c_char]) -> String {
    // SAFETY: c_char and u8 have the same size and alignment; the slice stays borrowed.
    let bytes = unsafe { std::slice::from_raw_parts(chars.as_ptr().cast::<u8>(), chars.len()) };
    match CStr::from_bytes_until_nul(bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}
