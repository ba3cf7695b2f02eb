//! The programs the tests run: the root package's examples (our tools) and the C tools
//! they are compared with.

use std::path::{Path, PathBuf};

/// The example binary `tool` (of any package of the workspace), from
/// `target/<profile>/examples/`, beside the running test (`target/<profile>/deps/`). Panics
/// if it has not been built: `cargo test -p rdma-verbs-tools` builds the examples,
/// `cargo test --test NAME` and the other packages' tests do not (`cargo build --examples`).
pub fn example(tool: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the path of the test executable");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join(tool))
        .expect("the test executable is in target/<profile>/deps");
    assert!(
        path.is_file(),
        "{} is missing: build the examples first (`cargo build --examples`)",
        path.display()
    );
    path
}

/// The C tool `tool` by its absolute path where Debian installs it (`/usr/bin` or
/// `/usr/sbin`), never found on `PATH`: a user's `PATH` may hold our tools of the same
/// names, and the tests would then compare ours with ours. Panics, naming the Debian package
/// to install, if it is missing or unknown: rdma-core's `ibv_devices`, `ibv_devinfo` and
/// `ibv_rc_pingpong` (ibverbs-utils), `ibstat`, `sminfo`, `smpquery`, `perfquery`,
/// `ibnetdiscover` and `ibportstate` (infiniband-diags), `rping` (rdmacm-utils) and
/// perftest's `ib_*` tools (perftest).
pub fn c_tool(tool: &str) -> PathBuf {
    let (dir, package) = match tool {
        "ibv_devices" | "ibv_devinfo" | "ibv_rc_pingpong" => ("/usr/bin", "ibverbs-utils"),
        "ibstat" | "sminfo" | "smpquery" | "perfquery" | "ibnetdiscover" | "ibportstate" => {
            ("/usr/sbin", "infiniband-diags")
        }
        "rping" => ("/usr/bin", "rdmacm-utils"),
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
