//! Smoke test of the raw bindings on the simulated fabric: run it under
//! `scripts/with-ibsim cargo test -p ibumad-sys` (the runner then runs it on the host).
//! Without a CA (no simulator, no InfiniBand device) it fails, never skips.

use std::ffi::CStr;
use std::mem::MaybeUninit;

use ibumad_sys::*;

/// Held by each test: libumad2sim attaches a process to the simulator on its first call and
/// aborts the process when two threads attach at once ("can't bind ctl socket").
static SIM: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The names `umad_get_cas_names` fills in.
fn ca_names() -> Vec<String> {
    let mut names = [[0; UMAD_CA_NAME_LEN as usize]; UMAD_MAX_DEVICES as usize];
    // SAFETY: `names` has UMAD_MAX_DEVICES entries of UMAD_CA_NAME_LEN bytes, as max says.
    let n = unsafe { umad_get_cas_names(names.as_mut_ptr(), UMAD_MAX_DEVICES as i32) };
    assert!(n >= 0, "umad_get_cas_names: {n}");
    names[..n as usize]
        .iter()
        .map(|name| {
            // SAFETY: libibumad NUL-terminates each name it fills in.
            unsafe { CStr::from_ptr(name.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

#[test]
fn lists_the_simulated_ca_and_its_active_port() {
    let _sim = SIM.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: no preconditions; it is idempotent.
    assert_eq!(unsafe { umad_init() }, 0, "umad_init");
    let names = ca_names();
    assert!(!names.is_empty(), "no CA: run under scripts/with-ibsim");

    let mut ca = MaybeUninit::<umad_ca_t>::zeroed();
    let name = std::ffi::CString::new(names[0].clone()).unwrap();
    // SAFETY: name is NUL-terminated; ca is writable for a umad_ca_t.
    let rc = unsafe { umad_get_ca(name.as_ptr(), ca.as_mut_ptr()) };
    assert_eq!(rc, 0, "umad_get_ca({})", names[0]);
    // SAFETY: umad_get_ca succeeded and filled it in.
    let ca = unsafe { ca.assume_init_mut() };
    assert!(ca.numports >= 1, "{} has no port", names[0]);
    let active = ca.ports.iter().filter(|p| !p.is_null()).any(|&p| {
        // SAFETY: non-null entries point to ports umad_get_ca allocated, valid until release.
        let port = unsafe { &*p };
        port.state == 4 && port.base_lid != 0
    });
    assert!(
        active,
        "no ACTIVE port with a LID on {}: is opensm up?",
        names[0]
    );
    // SAFETY: ca was filled in by umad_get_ca and is released once.
    assert_eq!(unsafe { umad_release_ca(ca) }, 0, "umad_release_ca");
    // SAFETY: paired with umad_init above.
    assert_eq!(unsafe { umad_done() }, 0, "umad_done");
}

/// `umad_size` is the size of the `ib_user_mad` header for the ABI in use: the header
/// without `pkey_index` (8 bytes less) until a port is opened with the pkey-aware ABI, which
/// `umad_open_port` enables; after that, the C struct's size.
#[test]
fn buffer_header_has_the_c_size_once_a_port_is_open() {
    let _sim = SIM.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: no preconditions; it is idempotent.
    assert_eq!(unsafe { umad_init() }, 0, "umad_init");
    let name = std::ffi::CString::new(ca_names()[0].clone()).unwrap();
    // SAFETY: name is NUL-terminated; port 0 picks the first usable port.
    let fd = unsafe { umad_open_port(name.as_ptr(), 0) };
    assert!(fd >= 0, "umad_open_port: {fd}");
    // SAFETY: no preconditions.
    let size = unsafe { umad_size() };
    assert_eq!(size, std::mem::size_of::<ib_user_mad>());
    // SAFETY: fd was opened above and is closed once.
    assert_eq!(unsafe { umad_close_port(fd) }, 0, "umad_close_port");
}
