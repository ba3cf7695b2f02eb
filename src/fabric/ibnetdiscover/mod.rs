//! `ibnetdiscover [options] [topology-file]` (infiniband-diags 44): discovers the subnet by
//! directed route from the local port and prints its topology (or, with `-l`/`-H`/`-S`/`-R`,
//! a list of its nodes; with `-p`, a report of its ports).
//!
//! Not supported: `--cache`, `--load-cache`, `--diff` and `--diffcheck` (libibnetdisc's
//! binary cache file), the chassis grouping of `-g` for Mellanox, Voltaire, Topspin and
//! Xsigo switches (every node is printed as a non-chassis node), FDR10 detection (Mellanox's
//! ExtendedPortInfo) and `-d`'s debug lines.

mod reports;
mod topology;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use ibumad::Port;

use super::netdisc::{discover, UmadSmi, NODE_CA, NODE_ROUTER, NODE_SWITCH};
use super::node_names::NodeNames;
use super::options::{self, Handled, Opt, Tool};
use crate::cli::{exit_code, prog_name, Output};
use crate::ibdiag;
use topology::Style;

/// libibnetdisc's default timeout (ms) and retries.
const TIMEOUT_MS: u32 = 1000;
const RETRIES: u32 = 3;

/// The tool's own options (the C table, in its order).
const OPTS: [Opt; 11] = [
    own(
        "full",
        'f',
        None,
        "show full information (ports' speed and width, vlcap)",
    ),
    own("show", 's', None, "show more information"),
    own("list", 'l', None, "list of connected nodes"),
    own("grouping", 'g', None, "show grouping"),
    own("Hca_list", 'H', None, "list of connected CAs"),
    own("Switch_list", 'S', None, "list of connected switches"),
    own("Router_list", 'R', None, "list of connected routers"),
    own(
        "node-name-map",
        '\u{1}',
        Some("<file>"),
        "node name map file",
    ),
    own("ports", 'p', None, "obtain a ports report"),
    own(
        "max_hops",
        'm',
        None,
        "report max hops discovered by the library",
    ),
    own(
        "outstanding_smps",
        'o',
        Some("<val>"),
        "number of SMPs outstanding during the scan (no effect: one at a time here)",
    ),
];

const fn own(
    name: &'static str,
    letter: char,
    value: Option<&'static str>,
    help: &'static str,
) -> Opt {
    Opt {
        name,
        letter,
        value,
        help,
    }
}

/// What the options ask for.
#[derive(Debug, Default)]
struct Asked {
    style: Style,
    show: bool,
    list: Vec<u8>,
    ports: bool,
    name_map: Option<String>,
}

/// `ibnetdiscover`: the whole tool, `args` with the program name first.
pub fn ibnetdiscover(args: Vec<OsString>) -> ExitCode {
    let prog = prog_name(&args, "ibnetdiscover");
    let mut out = Output::new();
    let status = run(&prog, &args, &mut out);
    out.flush();
    exit_code(status)
}

fn run(prog: &str, args: &[OsString], out: &mut Output) -> i32 {
    let tool = Tool {
        exclude: "DGKLs",
        opts: &OPTS,
        usage_args: "[topology-file]",
        examples: &[],
    };
    let mut asked = Asked::default();
    let handler = |letter: char, value: Option<&str>, _: &mut Output| {
        match letter {
            'f' => asked.style.full = true,
            's' => asked.show = true,
            'l' => asked.list = vec![NODE_CA, NODE_SWITCH, NODE_ROUTER],
            'g' => asked.style.group = true,
            'H' => asked.list = vec![NODE_CA],
            'S' => asked.list = vec![NODE_SWITCH],
            'R' => asked.list = vec![NODE_ROUTER],
            '\u{1}' => asked.name_map = value.map(str::to_owned),
            'p' => asked.ports = true,
            'm' => asked.style.max_hops = true,
            'o' => {}
            _ => return Handled::No,
        }
        Handled::Yes
    };
    let (common, operands) = match options::parse(prog, args, &tool, out, handler) {
        Ok(parsed) => parsed,
        Err(status) => return status,
    };
    let fail = |out: &mut Output, msg: &str| ibdiag::exit(out, prog, common.debug, "main", msg);
    let mut file = match operands.first() {
        None => None,
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Some(f),
            Err(_) => return fail(out, &format!("can't open file {path} for writing")),
        },
    };
    let (names, warnings) = NodeNames::open(asked.name_map.as_deref());
    for warning in warnings {
        out.error(&warning);
    }

    let Some(fabric) = open_and_discover(&common, asked.show, out) else {
        return fail(out, "discover failed\n");
    };
    let mut text = String::new();
    if asked.ports {
        reports::write_ports(&fabric, &names, &mut text);
        let _ = out.write_str(&text);
        return 0;
    }
    if !asked.list.is_empty() {
        reports::write_list(&fabric, &asked.list, &names, &mut text);
    } else {
        topology::write_topology(&fabric, asked.style, &names, &ctime_now(), &mut text);
    }
    match file.as_mut() {
        Some(f) => {
            use std::io::Write as _;
            let _ = f.write_all(text.as_bytes());
        }
        None => {
            let _ = out.write_str(&text);
        }
    }
    0
}

/// `ibnd_discover_fabric` from `-C`/`-P`'s port: `None` (after a message on stderr) when
/// the port cannot be opened or the local node does not answer.
fn open_and_discover(
    common: &options::Common,
    show: bool,
    out: &mut Output,
) -> Option<super::netdisc::Fabric> {
    let ca = common.ca.as_deref();
    let port_num = common.port;
    let port = u32::try_from(port_num)
        .ok()
        .and_then(|p| Port::open(ca, p).ok());
    let Some(port) = port else {
        let shown = ca.unwrap_or("(null)");
        out.error(&format!(
            "ibnetdisc: can't open MAD port ({shown}:{port_num})"
        ));
        return None;
    };
    let agent = match port.register(0x81, 1) {
        Ok(agent) => agent,
        Err(e) => {
            out.error(&format!(
                "ibnetdisc: failed to register SMI_DIRECT agent: {e}"
            ));
            return None;
        }
    };
    let timeout = if common.timeout_ms > 0 {
        common.timeout_ms
    } else {
        TIMEOUT_MS
    };
    let mut smi = UmadSmi {
        agent,
        timeout: Duration::from_millis(u64::from(timeout)),
        retries: RETRIES,
        m_key: common.m_key,
    };
    discover(&mut smi, show, out)
}

/// `ctime(time(NULL))`: the local time as `Thu Dec  3 12:29:15 2026\n`.
fn ctime_now() -> String {
    let mut buf = [0 as libc::c_char; 64];
    // SAFETY: a null pointer asks time() for its result only.
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    // SAFETY: ctime_r writes at most 26 bytes (NUL included) into buf, which has 64.
    let text = unsafe { libc::ctime_r(&now, buf.as_mut_ptr()) };
    if text.is_null() {
        return "\n".to_owned();
    }
    // SAFETY: ctime_r succeeded and left a NUL-terminated string in buf.
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}
