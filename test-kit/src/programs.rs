//! The programs the tests run: our tools (the root package's binaries), the examples, and the
//! C tools they are compared with.

use std::path::{Path, PathBuf};

use crate::run::Outcome;

/// The directory of the running test's profile, `target/<profile>/` (the test itself is in
/// `target/<profile>/deps/`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the path of the test executable");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("the test executable is in target/<profile>/deps")
        .to_path_buf()
}

/// Our tool `tool`, the binary of the root package that `cargo install --path .` installs
/// (`ibv_devinfo`, `ib_write_bw`, `rping`, ...), from `target/<profile>/`. Panics if it has not
/// been built: `cargo test -p rdma-verbs-tools` builds the binaries, other packages' tests do
/// not (`cargo build --bins`).
pub fn tool(tool: &str) -> PathBuf {
    built(profile_dir().join(tool), "cargo build --bins")
}

/// The example binary `name` (of any package of the workspace), from
/// `target/<profile>/examples/`. Panics if it has not been built: `cargo test` builds the
/// examples of the package it tests only with `--all-targets` (`cargo build --examples`).
pub fn example(name: &str) -> PathBuf {
    built(
        profile_dir().join("examples").join(name),
        "cargo build --examples",
    )
}

/// Which implementation of a C program an interoperability test runs: ours or rdma-core's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// Ours.
    Rust,
    /// rdma-core's, by its absolute path ([`c_tool`]).
    C,
}

impl Program {
    /// Our example `name` ([`example`]) or the C program `name`.
    pub fn example(self, name: &str) -> PathBuf {
        match self {
            Program::Rust => example(name),
            Program::C => c_tool(name),
        }
    }

    /// Our tool `name` ([`tool`]) or the C program `name`.
    pub fn tool(self, name: &str) -> PathBuf {
        match self {
            Program::Rust => tool(name),
            Program::C => c_tool(name),
        }
    }
}

fn built(path: PathBuf, how: &str) -> PathBuf {
    assert!(
        path.is_file(),
        "{} is missing: build it first (`{how}`)",
        path.display()
    );
    path
}

/// Whether an `rping` run, ours or rdma-core's, ended well: status 0, or rdma-core's known
/// teardown race and nothing else. Before rdma-core 58 (Debian 12 ships 44), C `rping`'s CM
/// thread reads once more after the last event, and when the main thread has destroyed the
/// event channel first, it prints `rdma_get_cm_event: Bad file descriptor` and exits with
/// status 255 after a run that succeeded (upstream commit f3ae6534, "rping: terminate CM event
/// thread before exiting"). That ending counts only after the DISCONNECT event, with that line
/// last on stderr; the caller still checks every ping.
pub fn rping_ended_well(out: &Outcome) -> bool {
    let teardown_race = out.status.code() == Some(255)
        && out.stderr.contains("DISCONNECT EVENT")
        && out
            .stderr
            .trim_end()
            .ends_with("rdma_get_cm_event: Bad file descriptor");
    out.status.success() || teardown_race
}

/// The C tool `tool` by its absolute path where Debian installs it (`/usr/bin` or
/// `/usr/sbin`), never found on `PATH`: a user's `PATH` may hold our tools of the same
/// names, and the tests would then compare ours with ours. Panics, naming the Debian package
/// to install, if it is missing or unknown: rdma-core's `ibv_devices`, `ibv_devinfo` and
/// `ibv_rc_pingpong` (ibverbs-utils), `ibstat`, `sminfo`, `smpquery`, `perfquery`,
/// `ibnetdiscover` and `ibportstate` (infiniband-diags), `rping`, `cmtime`, `udaddy`, `mckey`,
/// `ucmatose`, `rdma_server` and `rdma_client` (rdmacm-utils) and perftest's `ib_*` tools
/// (perftest).
pub fn c_tool(tool: &str) -> PathBuf {
    let (dir, package) = match tool {
        "ibv_devices" | "ibv_devinfo" | "ibv_rc_pingpong" => ("/usr/bin", "ibverbs-utils"),
        "ibstat" | "sminfo" | "smpquery" | "perfquery" | "ibnetdiscover" | "ibportstate" => {
            ("/usr/sbin", "infiniband-diags")
        }
        "rping" | "cmtime" | "udaddy" | "mckey" | "ucmatose" | "rdma_server" | "rdma_client" => {
            ("/usr/bin", "rdmacm-utils")
        }
        _ if tool.starts_with("ib_") => ("/usr/bin", "perftest"),
        _ => panic!("{tool} is not a C tool the tests know"),
    };
    let path = Path::new(dir).join(tool);
    assert!(
        path.is_file(),
        "the C tool {} is missing: install the Debian package {package} \
         (scripts/install-deps does)",
        path.display()
    );
    path
}
