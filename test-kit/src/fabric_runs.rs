//! Runs of a fabric tool on a simulator of their own: a sequence of commands on one fresh
//! `scripts/with-ibsim` fabric (for commands that change it, such as `ibportstate disable`,
//! or that attach elsewhere with `SIM_HOST`), the C tool's and ours compared step by step.
//! ([`fabric`](crate::fabric) compares single commands on the fabric the test runs on.)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::c_tool;

/// What one command did: stdout, whether stderr had a message of the tool's own (other
/// than `libumad2sim`'s `sim_connect` line), exit status.
pub type Step = (String, bool, Option<i32>);

/// The workspace's `scripts/` directory.
fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts")
}

/// The topology files of `scripts/topologies/`, sorted.
pub fn topologies() -> Vec<PathBuf> {
    let dir = scripts().join("topologies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scripts/topologies")
        .map(|e| e.expect("a topology file").path())
        .filter(|p| p.extension().is_some_and(|e| e == "net"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no topology in {}", dir.display());
    files
}

/// Runs `program` as `tool` with each of `steps` in turn on a simulator of `topology` of
/// its own (`scripts/with-ibsim`), the tool attached at node `sim_host` if given, and
/// returns what each did.
pub fn run_sequence(
    program: &Path,
    tool: &str,
    topology: &Path,
    sim_host: Option<&str>,
    steps: &[&[&str]],
) -> Vec<Step> {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("fabric-runs-{}-{run}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut script = String::from("set -u\n");
    for (i, step) in steps.iter().enumerate() {
        let args: Vec<String> = step.iter().map(|a| quote(a)).collect();
        script.push_str(&format!(
            "(exec -a {} {} {}) >{d}/{i}.out 2>{d}/{i}.err; echo $? >{d}/{i}.rc\n",
            quote(tool),
            quote(program.to_str().expect("a UTF-8 path")),
            args.join(" "),
            d = quote(dir.to_str().expect("a UTF-8 path")),
        ));
    }
    let mut cmd = Command::new(scripts().join("with-ibsim"));
    cmd.arg("-t")
        .arg(topology)
        .args(["bash", "-c", &script])
        .env_remove("IBSIM_SOCKNAME")
        .env_remove("LD_PRELOAD")
        .env_remove("SIM_HOST");
    if let Some(host) = sim_host {
        cmd.env("SIM_HOST", host);
    }
    let status = cmd.status().expect("scripts/with-ibsim runs");
    assert!(
        status.success(),
        "the sequence on {}: {status}",
        topology.display()
    );
    let read = |i: usize, ext: &str| {
        std::fs::read_to_string(dir.join(format!("{i}.{ext}"))).expect("a step's output")
    };
    let steps = (0..steps.len())
        .map(|i| {
            let own_err = read(i, "err")
                .lines()
                .any(|l| !(l.starts_with("ibwarn: ") && l.contains("sim_connect: attached")));
            (read(i, "out"), own_err, read(i, "rc").trim().parse().ok())
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    steps
}

/// Runs `steps` with the C tool `tool` and with ours, each on a fresh simulator of
/// `topology` (attached at `sim_host` if given), compares them step by step (stdout after
/// `mask`), and returns what ours did.
pub fn compare_sequence_on(
    tool: &str,
    topology: &Path,
    sim_host: Option<&str>,
    steps: &[&[&str]],
    mask: impl Fn(&str) -> String,
) -> Vec<Step> {
    let c = run_sequence(&c_tool(tool), tool, topology, sim_host, steps);
    let ours = run_sequence(&crate::tool(tool), tool, topology, sim_host, steps);
    for ((step, c), ours) in steps.iter().zip(&c).zip(&ours) {
        let call = format!("{tool} {} on {}", step.join(" "), topology.display());
        assert_eq!(
            mask(&ours.0),
            mask(&c.0),
            "{call}: stdout differs (left: ours, right: C)"
        );
        assert_eq!(ours.2, c.2, "{call}: exit status differs");
        assert_eq!(ours.1, c.1, "{call}: stderr differs in having a message");
    }
    ours
}
