//! `ibnetdiscover` against infiniband-diags 44 on the simulated fabric, on every topology of
//! `scripts/topologies/` (see `ibverbs_test_kit::fabric`): the topology and its variants
//! (`-f`, `-g`, `-m`, `-s`), the node lists, the ports report, a node name map, the output
//! file, the common options, and the errors (a missing CA or port, no CA at all, bad
//! options). The line with the time of the run is left out of the comparison and checked
//! on its own.
//!
//! The tools are the example binaries beside this test (`cargo build --examples` first).

use std::path::PathBuf;

use ibverbs_test_kit::fabric::{compare_masked, on_each_topology, run_c, run_ours, Place};

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
