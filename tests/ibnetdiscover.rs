//! `ibnetdiscover` against infiniband-diags 44 on the simulated fabric, on every topology of
//! `scripts/topologies/` (see `rdma_verbs_test_kit::fabric`): the topology and its variants
//! (`-f`, `-g`, `-m`, `-s`), the node lists, the ports report, a node name map, the output
//! file, the cache file (written byte for byte as the C tool does, read by both, diffed
//! with the C tool's caches of the shipped topologies in `tests/data/`, bad files), the
//! common options, and the errors (a missing CA or port, no CA at all, bad
//! options). The line with the time of the run is left out of the comparison and checked
//! on its own.
//!
//! Ours are the package's binaries, which `cargo test` builds before this test.

use std::path::{Path, PathBuf};

use rdma_verbs_test_kit::fabric::{compare_masked, on_each_topology, run_c, run_ours, Place};
use rdma_verbs_test_kit::fabric_runs::{compare_sequence_on, topologies};

/// The topology header's line with the time, `# Topology file: generated on <ctime>`.
const GENERATED: &str = "# Topology file: generated on ";

/// `text` with the time after [`GENERATED`] left out.
fn without_time(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with(GENERATED) {
                GENERATED
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `text` has the time line, in `ctime`'s form (`Thu Dec  3 12:29:15 2026`).
fn has_ctime(text: &str) -> bool {
    text.lines()
        .filter_map(|l| l.strip_prefix(GENERATED))
        .any(|t| {
            let fields: Vec<&str> = t.split_whitespace().collect();
            fields.len() == 5 && fields[3].len() == 8 && fields[4].len() == 4 && t.len() == 24
        })
}

/// Compares `ibnetdiscover args` with the C tool's, the time left out; returns our stdout.
fn compare(args: &[&str]) -> String {
    let (_, ours) = compare_masked("ibnetdiscover", args, Place::Fabric, without_time);
    ours.text()
}

/// A file in the target directory (writable in every place the tests run).
fn scratch(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the path of the test executable");
    let dir = exe
        .parent()
        .expect("target/<profile>/deps")
        .join("ibnetdiscover-test");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir.join(format!("{}-{name}", std::process::id()))
}

#[test]
fn topology() {
    on_each_topology(|| {
        for args in [
            &[][..],
            &["-f"],
            &["-m"],
            &["-g"],
            &["-f", "-g", "-m"],
            &["--full", "--grouping", "--max_hops"],
            &["-s"],
            &["--show", "-f"],
        ] {
            let text = compare(args);
            if !args.contains(&"-s") && !args.contains(&"--show") {
                assert!(text.starts_with("#\n# Topology file:"), "{text}");
            }
            assert!(has_ctime(&text), "no time line in {text}");
            assert!(text.contains("\nSwitch\t8 \"S-"), "no switch in {text}");
        }
    });
}

#[test]
fn lists_and_ports_report() {
    on_each_topology(|| {
        for args in [
            &["-l"][..],
            &["-H"],
            &["-S"],
            &["-R"],
            &["--list"],
            &["-p"],
            &["--ports", "-f"],
            &["-S", "-p"],
            &["-l", "-g"],
        ] {
            compare(args);
        }
    });
}

#[test]
fn common_options() {
    on_each_topology(|| {
        for args in [
            &["-C", "ibsim0"][..],
            &["-C", "ibsim0", "-P", "1"],
            &["-P", "1"],
            &["-t", "100"],
            &["--timeout", "2000"],
            &["-o", "4"],
            &["-y", "0"],
            &["-v"],
            &["-e"],
        ] {
            compare(args);
        }
    });
}

#[test]
fn node_name_map() {
    on_each_topology(|| {
        let map = scratch("names");
        let text = "# names\n0x200000 \"Core switch\"\n0x100000 first-host # rack 1\n\n";
        std::fs::write(&map, text).expect("the map");
        let map = map.to_str().expect("a UTF-8 path");
        for args in [
            &["--node-name-map", map][..],
            &["--node-name-map", map, "-l"],
            &["--node-name-map", map, "-p"],
            &["--node-name-map=/nonexistent/map"],
        ] {
            compare(args);
        }
        let bad = scratch("bad-names");
        std::fs::write(&bad, "0x1 a\nnot-a-guid b\n").expect("the map");
        compare(&["--node-name-map", bad.to_str().expect("a UTF-8 path")]);
    });
}

#[test]
fn output_file() {
    on_each_topology(|| {
        for extra in [&[][..], &["-l"]] {
            let (c_file, ours_file) = (scratch("c.topo"), scratch("ours.topo"));
            let c_path = c_file.to_str().expect("a UTF-8 path");
            let ours_path = ours_file.to_str().expect("a UTF-8 path");
            let c = run_c("ibnetdiscover", &[extra, &[c_path]].concat(), Place::Fabric);
            let ours = run_ours(
                "ibnetdiscover",
                &[extra, &[ours_path]].concat(),
                Place::Fabric,
            );
            assert_eq!(
                (ours.status, c.status),
                (Some(0), Some(0)),
                "{}",
                ours.stderr
            );
            assert_eq!(ours.stdout, c.stdout, "stdout differs");
            let c_text = std::fs::read_to_string(&c_file).expect("the C tool's file");
            let ours_text = std::fs::read_to_string(&ours_file).expect("our file");
            assert_eq!(without_time(&ours_text), without_time(&c_text));
            let _ = std::fs::remove_file(c_file);
            let _ = std::fs::remove_file(ours_file);
        }
        compare(&["/nonexistent/dir/topology"]);
    });
}

#[test]
fn errors() {
    on_each_topology(|| {
        for args in [
            &["-C", "nonexistent0"][..],
            &["-P", "5"],
            &["-C", "ibsim0", "-P", "2"],
            &["-t", "0"],
            &["-t", "10ms"],
            &["-x"],
            &["-D"],
            &["--bogus"],
            &["-o"],
            &["-h"],
        ] {
            compare(args);
        }
    });
}

#[test]
fn no_ca() {
    let (_, ours) = compare_masked("ibnetdiscover", &[], Place::NoCa, without_time);
    assert_eq!(ours.status, Some(255));
}

/// A cache file the C tool wrote on each shipped topology (`ibnetdiscover --cache` under
/// `scripts/with-ibsim -t <topology>`), to diff the live fabric with.
fn fixture(topology: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("ibnetdiscover-{topology}.cache"));
    path.to_str().expect("a UTF-8 path").to_owned()
}

#[test]
fn cache_files() {
    on_each_topology(|| {
        let (c_file, ours_file) = (scratch("c.cache"), scratch("ours.cache"));
        let (c_path, ours_path) = (
            c_file.to_str().expect("a UTF-8 path"),
            ours_file.to_str().expect("a UTF-8 path"),
        );
        let c = run_c("ibnetdiscover", &["--cache", c_path], Place::Fabric);
        let ours = run_ours("ibnetdiscover", &["--cache", ours_path], Place::Fabric);
        assert_eq!(
            (ours.status, c.status),
            (Some(0), Some(0)),
            "{}",
            ours.stderr
        );
        assert_eq!(without_time(&ours.text()), without_time(&c.text()));
        let c_bytes = std::fs::read(&c_file).expect("the C tool's cache");
        let ours_bytes = std::fs::read(&ours_file).expect("our cache");
        assert_eq!(ours_bytes, c_bytes, "the cache files differ");
        // Each tool reads the other's file, and writes it again.
        for path in [c_path, ours_path] {
            for extra in [&[][..], &["-p"], &["-l"], &["-m"], &["-g", "-f"]] {
                compare(&[&["--load-cache", path][..], extra].concat());
            }
            let (again_c, again_ours) = (scratch("c.again"), scratch("ours.again"));
            let load = ["--load-cache", path, "--cache"];
            let again = |file: &PathBuf| file.to_str().expect("a UTF-8 path").to_owned();
            run_c(
                "ibnetdiscover",
                &[&load[..], &[&again(&again_c)]].concat(),
                Place::Fabric,
            );
            run_ours(
                "ibnetdiscover",
                &[&load[..], &[&again(&again_ours)]].concat(),
                Place::Fabric,
            );
            assert_eq!(
                std::fs::read(&again_ours).expect("our cache again"),
                std::fs::read(&again_c).expect("the C tool's cache again"),
                "a loaded fabric cached again differs"
            );
            let _ = std::fs::remove_file(again_c);
            let _ = std::fs::remove_file(again_ours);
        }
        let _ = std::fs::remove_file(c_file);
        let _ = std::fs::remove_file(ours_file);
    });
}

#[test]
fn diffs() {
    on_each_topology(|| {
        for other in ["simple", "fabric"] {
            let cache = fixture(other);
            for checks in [
                &[][..],
                &["--diffcheck", "sw,ca,router,port,lid,nodedesc"],
                &["--diffcheck", "CA,lid"],
                &["--diffcheck", "sw,nodedesc"],
                &["--diffcheck", "ca,port"],
                &["--diffcheck", "router"],
                &["--diffcheck", "sw,bogus"],
            ] {
                compare(&[&["--diff", &cache][..], checks].concat());
                let load = ["--load-cache", &cache];
                let this = fixture(if other == "simple" {
                    "fabric"
                } else {
                    "simple"
                });
                compare(&[&load[..], &["--diff", &this], checks].concat());
            }
            compare(&["--diff", &cache, "-l"]);
            compare(&["--diff", &cache, "-p"]);
        }
    });
}

#[test]
fn bad_cache_files() {
    on_each_topology(|| {
        let good = std::fs::read(fixture("fabric")).expect("a fixture");
        let mut bad_magic = good.clone();
        bad_magic[0] ^= 1;
        let mut no_from = good.clone();
        no_from[16] ^= 0xff; // the GUID of the node the discovery started from
        for (name, bytes) in [
            ("empty", &[][..]),
            ("truncated", &good[..good.len() - 5]),
            ("header-only", &good[..28]),
            ("bad-magic", &bad_magic),
            ("no-from-node", &no_from),
        ] {
            let file = scratch(name);
            std::fs::write(&file, bytes).expect("a cache file");
            let path = file.to_str().expect("a UTF-8 path");
            compare(&["--load-cache", path]);
            compare(&["--diff", path]);
            let _ = std::fs::remove_file(file);
        }
        compare(&["--load-cache", "/nonexistent/cache"]);
        compare(&["--cache", "/nonexistent/dir/cache"]);
    });
}

#[test]
fn from_other_nodes() {
    let fabric = topologies()
        .into_iter()
        .find(|t| t.ends_with("fabric.net"))
        .expect("scripts/topologies/fabric.net");
    // A CA with two ports, a CA with a port down, and a switch as the starting point.
    for host in ["HcaDual", "Hca3", "Switch2"] {
        let steps: [&[&str]; 4] = [&[], &["-s", "-m"], &["-p"], &["-l"]];
        let ours = compare_sequence_on("ibnetdiscover", &fabric, Some(host), &steps, without_time);
        assert!(ours[0].0.contains("# Initiated from node"), "{}", ours[0].0);
    }
}
