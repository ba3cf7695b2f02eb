//! Our fabric tools against infiniband-diags on the simulated InfiniBand fabric of
//! `scripts/with-ibsim` (ibsim and opensm; libibumad redirected by `libumad2sim.so`): each
//! comparison runs the C tool (by absolute path) and ours with the same arguments,
//! both with the tool's name as `argv[0]`, and asserts the same stdout byte for byte, the
//! same exit status, and a message on stderr exactly when the C tool writes one.
//!
//! A test wraps its comparisons in [`on_each_topology`]: under `scripts/with-ibsim` it runs
//! them on that fabric; elsewhere (plain `cargo test`, `scripts/test`) it runs itself again
//! under `scripts/with-ibsim -t T` for every topology T in `scripts/topologies/`.
//!
//! `libumad2sim` writes one `ibwarn: ... sim_connect: attached ...` line on stderr in every
//! process that attaches to the simulator; that line is not the tool's and is left out of
//! stderr before it is compared.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::c_tool;

/// What a tool did: its stdout, its stderr without the simulator's line, its exit status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error, less `libumad2sim`'s `sim_connect` line.
    pub stderr: String,
    /// Exit status (`None`: killed by a signal).
    pub status: Option<i32>,
}

/// What a program did, its stderr less `libumad2sim`'s `sim_connect` line.
impl From<Output> for Run {
    fn from(out: Output) -> Run {
        let stderr = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !(l.starts_with("ibwarn: ") && l.contains("sim_connect: attached")))
            .map(|l| format!("{l}\n"))
            .collect();
        Run {
            stdout: out.stdout,
            stderr,
            status: out.status.code(),
        }
    }
}

impl Run {
    /// Standard output as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Where a comparison runs the tools: on the simulated fabric, or with no CA at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// On the simulated fabric of `scripts/with-ibsim` (its environment as inherited): at
    /// the first node of the topology.
    Fabric,
    /// On the simulated fabric, at the node with this id (`SIM_HOST`), a switch or a
    /// channel adapter.
    At(&'static str),
    /// Without the simulator and over an empty `/sys/class` (a private mount namespace,
    /// `unshare -rm`): libibumad finds no CA and no umad device, whatever the host has.
    NoCa,
}

/// The workspace's `scripts/` directory.
fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts")
}

/// The topology file of the simulated fabric this process runs on, if it runs on one
/// (`scripts/with-ibsim`'s environment).
fn simulated() -> Option<PathBuf> {
    let sim = std::env::var_os("IBSIM_SOCKNAME").is_some();
    let preload = std::env::var("LD_PRELOAD").unwrap_or_default();
    let file = std::env::var_os("WITH_IBSIM_TOPOLOGY_FILE")?;
    (sim && preload.contains("libumad2sim.so")).then(|| PathBuf::from(file))
}

/// The topology file `scripts/with-ibsim` runs; fails (never skips) outside of it.
pub fn topology() -> PathBuf {
    simulated().unwrap_or_else(|| {
        panic!(
            "not on the simulated fabric: run under scripts/with-ibsim \
             (e.g. scripts/with-ibsim -t fabric cargo test -p rdma-verbs-tools --test fabric)"
        )
    })
}

/// The text of the topology file in use (see [`topology`]).
pub fn topology_text() -> String {
    let file = topology();
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()))
}

/// The ids of the nodes of the topology in use, in the order of its file (the quoted names
/// of its `Hca` and `Switch` lines), leaked for [`Place::At`].
pub fn node_ids() -> Vec<&'static str> {
    topology_text()
        .lines()
        .filter(|l| l.starts_with("Hca") || l.starts_with("Switch"))
        .filter_map(|l| l.split('"').nth(1))
        .map(|id| &*Box::leak(id.to_owned().into_boxed_str()))
        .collect()
}

/// Runs `body` on the simulated fabric: at once under `scripts/with-ibsim`; otherwise runs
/// the calling test (the current thread's name, as libtest names it) again in this test
/// executable under `scripts/with-ibsim -t T` for each topology T of `scripts/topologies/`,
/// and fails if any run fails.
pub fn on_each_topology(body: impl FnOnce()) {
    if simulated().is_some() {
        body();
        return;
    }
    let test = std::thread::current()
        .name()
        .expect("a test thread, named after its test")
        .to_owned();
    let exe = std::env::current_exe().expect("the path of the test executable");
    let mut topologies: Vec<PathBuf> = std::fs::read_dir(scripts().join("topologies"))
        .expect("scripts/topologies")
        .map(|e| e.expect("a topology file").path())
        .filter(|p| p.extension().is_some_and(|e| e == "net"))
        .collect();
    topologies.sort();
    assert!(!topologies.is_empty(), "no topology in scripts/topologies");
    for topology in topologies {
        let out = Command::new(scripts().join("with-ibsim"))
            .arg("-t")
            .arg(&topology)
            .arg(&exe)
            .args(["--exact", &test, "--test-threads=1"])
            .output()
            .unwrap_or_else(|e| panic!("cannot run scripts/with-ibsim: {e}"));
        assert!(
            out.status.success(),
            "{test} on {}: {}\n{}{}",
            topology.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let ran = String::from_utf8_lossy(&out.stdout).contains("1 passed");
        assert!(ran, "{test} did not run on {}", topology.display());
    }
}

/// Fails unless [`Place::NoCa`] works here (user and mount namespaces): else both tools
/// would fail alike, and matching failures prove nothing.
fn require_no_ca_place() {
    let script = "mount -t tmpfs none /sys/class && test -z \"$(ls -A /sys/class)\"";
    let ok = Command::new("unshare")
        .args(["-rm", "bash", "-c", script])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "cannot hide /sys/class in a private mount namespace (`unshare -rm` and a tmpfs \
         mount): the no-CA comparison needs unprivileged user namespaces"
    );
}

/// Fails unless `place` is there: the simulated fabric, or a way to hide every CA.
pub fn require(place: Place) {
    match place {
        Place::Fabric | Place::At(_) => drop(topology()),
        Place::NoCa => require_no_ca_place(),
    }
}

/// Runs `program` as `tool` with `args` at `place`.
fn run(program: PathBuf, tool: &str, args: &[&str], place: Place) -> Run {
    let mut cmd = match place {
        Place::Fabric => Command::new(&program),
        Place::At(node) => {
            let mut cmd = Command::new(&program);
            cmd.env("SIM_HOST", node);
            cmd
        }
        Place::NoCa => {
            let mut cmd = Command::new("unshare");
            let script = r#"mount -t tmpfs none /sys/class && exec -a "$0" "$@""#;
            cmd.args(["-rm", "bash", "-c", script, tool])
                .arg(&program)
                .env_remove("LD_PRELOAD")
                .env_remove("IBSIM_SOCKNAME");
            cmd
        }
    };
    if place != Place::NoCa {
        cmd.arg0(tool);
    }
    // SAFETY: setsid is async-signal-safe and touches no memory of this process.
    unsafe {
        // A session of its own: no controlling terminal, so a tool that would prompt on
        // /dev/tty (`-y` with a bad key) reads the closed stdin instead of waiting.
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
        .into()
}

/// Runs the C tool `tool` (infiniband-diags, by absolute path) with `args` at `place`.
pub fn run_c(tool: &str, args: &[&str], place: Place) -> Run {
    run(c_tool(tool), tool, args, place)
}

/// Runs our `tool` with `args` at `place`.
pub fn run_ours(tool: &str, args: &[&str], place: Place) -> Run {
    run(crate::tool(tool), tool, args, place)
}

/// Compares the C tool `tool` with ours, both run with `args` on the fabric; returns what
/// ours did.
pub fn compare(tool: &str, args: &[&str]) -> Run {
    compare_at(tool, args, Place::Fabric)
}

/// Compares the C tool `tool` with ours, both run with `args` at `place`; returns what ours
/// did.
pub fn compare_at(tool: &str, args: &[&str], place: Place) -> Run {
    let (c, ours) = compare_masked(tool, args, place, str::to_owned);
    let call = format!("{tool} {}", args.join(" "));
    assert_eq!(ours.stdout, c.stdout, "{call}: stdout bytes differ");
    ours
}

/// Compares the C tool `tool` with ours, both run with `args` at `place`, their stdout
/// compared after `mask` (for a value that changes between two runs, such as the subnet
/// manager's activity count; the caller checks it otherwise); returns what C and ours did.
pub fn compare_masked(
    tool: &str,
    args: &[&str],
    place: Place,
    mask: impl Fn(&str) -> String,
) -> (Run, Run) {
    require(place);
    let c = run_c(tool, args, place);
    let ours = run_ours(tool, args, place);
    let call = format!("{tool} {}", args.join(" "));
    assert!(
        !ours.stderr.contains("panicked"),
        "{call}: ours panicked:\n{}",
        ours.stderr
    );
    assert_eq!(
        mask(&ours.text()),
        mask(&c.text()),
        "{call}: stdout differs (left: ours, right: C)"
    );
    assert_eq!(
        ours.status, c.status,
        "{call}: exit status differs (left: ours, right: C); stderr:\nours: {}\nC: {}",
        ours.stderr, c.stderr
    );
    assert_eq!(
        ours.stderr.is_empty(),
        c.stderr.is_empty(),
        "{call}: one writes to stderr, the other not:\nours: {}\nC: {}",
        ours.stderr,
        c.stderr
    );
    (c, ours)
}

/// `text` with the decimal number after each `marker` replaced by `_` (a mask for
/// [`compare_masked`]).
pub fn mask_numbers(text: &str, marker: &str) -> String {
    let mut parts = text.split(marker);
    let mut masked = parts.next().unwrap_or("").to_owned();
    for part in parts {
        masked.push_str(marker);
        masked.push('_');
        masked.push_str(part.trim_start_matches(|c: char| c.is_ascii_digit()));
    }
    masked
}

/// A node of the simulated fabric, as the C `smpquery nodeinfo` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Its LID (a switch's port 0, a channel adapter's port).
    pub lid: u16,
    /// Whether it is a switch.
    pub switch: bool,
    /// Its number of ports.
    pub ports: u8,
    /// The GUID of the port with that LID.
    pub port_guid: String,
}

/// The nodes the subnet manager gave LIDs, by LID (1 up to the first LID nothing answers),
/// found with the C `smpquery nodeinfo`; fails if there is none.
pub fn nodes() -> Vec<Node> {
    topology();
    let mut nodes = Vec::new();
    for lid in 1u16.. {
        let run = run_c("smpquery", &["nodeinfo", &lid.to_string()], Place::Fabric);
        if run.status != Some(0) {
            break;
        }
        let text = run.text();
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim_start_matches(['.', ':']).to_owned())
                .unwrap_or_else(|| panic!("no {name} in smpquery nodeinfo {lid}:\n{text}"))
        };
        nodes.push(Node {
            lid,
            switch: value("NodeType") == "Switch",
            ports: value("NumPorts").parse().expect("NumPorts"),
            port_guid: value("PortGuid"),
        });
    }
    assert!(!nodes.is_empty(), "no LID answers: is opensm up?");
    nodes
}
