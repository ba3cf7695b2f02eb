//! `ibnetdiscover [options] [topology-file]` (infiniband-diags 44): discovers the subnet by
//! directed route from the local port and prints its topology (or, with `-l`/`-H`/`-S`/`-R`,
//! a list of its nodes; with `-p`, a report of its ports).
//!
//! `--cache` writes libibnetdisc's cache file, `--load-cache` prints a cached fabric
//! instead of discovering one and `--diff` compares a cached fabric with the current one.
//!
//! Not supported: the chassis grouping of `-g` for Mellanox, Voltaire, Topspin and
//! Xsigo switches (every node is printed as a non-chassis node), FDR10 detection (Mellanox's
//! ExtendedPortInfo) and `-d`'s debug lines.

mod diff;
mod reports;
mod topology;

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use ibumad::Port;

use super::netdisc::{cache, discover, Fabric, UmadSmi, NODE_CA, NODE_ROUTER, NODE_SWITCH};
use super::node_names::NodeNames;
use super::options::{self, Handled, Opt, Tool};
use crate::cli::{exit_code, prog_name, Output};
use crate::ibdiag;
use topology::Style;

/// libibnetdisc's default timeout (ms) and retries.
const TIMEOUT_MS: u32 = 1000;
const RETRIES: u32 = 3;

/// The tool's own options (the C table, in its order).
const OPTS: [Opt; 15] = [
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
    own(
        "cache",
        '\u{2}',
        Some("<file>"),
        "filename to cache ibnetdiscover data to",
    ),
    own(
        "load-cache",
        '\u{3}',
        Some("<file>"),
        "filename of ibnetdiscover cache to load",
    ),
    own(
        "diff",
        '\u{4}',
        Some("<file>"),
        "filename of ibnetdiscover cache to diff",
    ),
    own(
        "diffcheck",
        '\u{5}',
        Some("<key(s)>"),
        "specify checks to execute for --diff",
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
        "number of SMPs outstanding during the scan (no effect: 2 here)",
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
    cache: Option<String>,
    load_cache: Option<String>,
    diff: Option<String>,
    checks: diff::Checks,
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
    let handler = |letter: char, value: Option<&str>, out: &mut Output| {
        let file = || value.map(str::to_owned);
        match letter {
            'f' => asked.style.full = true,
            's' => asked.show = true,
            'l' => asked.list = vec![NODE_CA, NODE_SWITCH, NODE_ROUTER],
            'g' => asked.style.group = true,
            'H' => asked.list = vec![NODE_CA],
            'S' => asked.list = vec![NODE_SWITCH],
            'R' => asked.list = vec![NODE_ROUTER],
            '\u{1}' => asked.name_map = file(),
            '\u{2}' => asked.cache = file(),
            '\u{3}' => asked.load_cache = file(),
            '\u{4}' => asked.diff = file(),
            '\u{5}' => match diff::Checks::parse(value.unwrap_or("")) {
                Ok(checks) => asked.checks = checks,
                Err(key) => {
                    out.error(&format!("invalid diff check key: {key}"));
                    return Handled::No;
                }
            },
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

    let loaded = |path: &str| std::fs::read(path).ok().and_then(|b| cache::load(&b).ok());
    let diff_fabric = match &asked.diff {
        None => None,
        Some(path) => match loaded(path) {
            Some(fabric) => Some(fabric),
            None => return fail(out, "loading cached fabric for diff failed\n"),
        },
    };
    let fabric = match &asked.load_cache {
        Some(path) => loaded(path).ok_or("loading cached fabric failed\n"),
        None => open_and_discover(&common, asked.show, out).ok_or("discover failed\n"),
    };
    let fabric = match fabric {
        Ok(fabric) => fabric,
        Err(msg) => return fail(out, msg),
    };
    let mut text = String::new();
    if asked.ports {
        reports::write_ports(&fabric, &names, &mut text);
        let _ = out.write_str(&text);
    } else {
        if !asked.list.is_empty() {
            reports::write_list(&fabric, &asked.list, &names, &mut text);
        } else if let Some(orig) = &diff_fabric {
            let out_of = |fabric| topology::Out {
                fabric,
                style: Style::default(),
                names: &names,
            };
            diff::write_diff(&out_of(orig), &out_of(&fabric), asked.checks, &mut text);
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
    }
    if let Some(path) = &asked.cache {
        if write_cache(path, &fabric).is_err() {
            return fail(out, "caching ibnetdiscover data failed\n");
        }
    }
    0
}

/// `ibnd_cache_fabric`: replaces `path` with the cache file of `fabric`.
fn write_cache(path: &str, fabric: &Fabric) -> std::io::Result<()> {
    use std::io::Write as _;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let written = file.write_all(&cache::write(fabric));
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

/// `ibnd_discover_fabric` from `-C`/`-P`'s port: `None` (after a message on stderr) when
/// the port cannot be opened or the local node does not answer.
fn open_and_discover(common: &options::Common, show: bool, out: &mut Output) -> Option<Fabric> {
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
        pipeline: agent.pipeline(Duration::from_millis(u64::from(timeout)), RETRIES),
        m_key: common.m_key,
        sent: VecDeque::new(),
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
