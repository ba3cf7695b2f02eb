//! `ibportstate` against infiniband-diags 44 on the simulated fabric, on every topology of
//! `scripts/topologies/`: queries of CA and switch ports by LID, directed route and GUID
//! (with the peer check of an active switch port), the common options, the errors (a LID
//! that answers nothing, a port that does not exist, malformed directed routes and
//! operations, no CA at all), and state changes.
//!
//! A state change changes the simulated fabric, so the C tool and ours each run the same
//! sequence of commands (disable, query, enable, query, reset, query, ...) on a simulator of
//! their own, started for that sequence, and the sequences' results are compared step by
//! step.
//!
//! Ours are the package's binaries, which `cargo test` builds before this test.

use rdma_verbs_test_kit::fabric::{compare, compare_at, on_each_topology, Place};
use rdma_verbs_test_kit::fabric_runs::{compare_sequence_on, topologies, Step};

#[test]
fn queries() {
    on_each_topology(|| {
        for args in [
            &["1", "1"][..],
            &["1", "1", "query"],
            &["-L", "1", "1"],
            &["2", "0"],
            &["2", "1"],
            &["2", "2"],
            &["2", "3"],
            &["0x2", "2"],
            &["3", "1"],
            &["-D", "0", "1"],
            &["-D", "0,1", "0"],
            &["-D", "0,1", "1"],
            &["-D", "0,1", "2"],
            &["-D", "0,1,2", "1"],
            &["--Direct", "0,1", "3"],
            &["-G", "0x100001", "1"],
            &["-G", "0x100000", "1"],
        ] {
            compare("ibportstate", args);
        }
    });
}

#[test]
fn common_options() {
    on_each_topology(|| {
        for args in [
            &["-K", "1", "1"][..],
            &["-K", "2", "0"],
            &["-C", "ibsim0", "-P", "1", "1", "1"],
            &["-t", "100", "2", "2"],
            &["-e", "1", "1"],
            &["-v", "1", "1"],
            &["-y", "0", "1", "1"],
            &["-s", "1", "1", "1"],
        ] {
            compare("ibportstate", args);
        }
    });
}

#[test]
fn errors() {
    let long_path = format!("0{}", ",1".repeat(64));
    on_each_topology(|| {
        for args in [
            &["99", "1"][..],
            &["2", "9"],
            &["1", "7"],
            &["0", "1"],
            &["0xc000", "1"],
            &["-D", "", "1"],
            &["-D", "0,x", "1"],
            &["-D", "0,9", "1"],
            &["-D", &long_path, "1"],
            &["-G", "0", "1"],
            &["1"],
            &[],
            &["1", "1", "bogus"],
            &["1", "1", "speed"],
            &["1", "1", "speed", "16"],
            &["1", "1", "width", "32"],
            &["1", "1", "lid", "0xc000"],
            &["1", "1", "enable", "disable"],
            &["2", "1", "mkey", "5"],
            &["-C", "nonexistent0", "1", "1"],
            &["-P", "5", "1", "1"],
            &["-x", "1", "1"],
            &["-h"],
        ] {
            compare("ibportstate", args);
        }
    });
}

#[test]
fn no_ca() {
    let ours = compare_at("ibportstate", &["1", "1"], Place::NoCa);
    assert_eq!(ours.status, Some(255));
}

/// Runs `steps` with the C tool and with ours, each on a fresh simulator of every topology,
/// and compares them step by step; returns what ours did on the last topology.
fn compare_sequence(steps: &[&[&str]]) -> Vec<Step> {
    let mut last = Vec::new();
    for topology in topologies() {
        last = compare_sequence_on("ibportstate", &topology, None, steps, str::to_owned);
    }
    last
}

#[test]
fn disable_enable_reset_switch_port() {
    let disabled = "PhysLinkState:...................Disabled";
    let ours = compare_sequence(&[
        &["2", "2", "disable"],
        &["2", "2"],
        &["-D", "0,1,2", "1"],
        &["2", "2", "enable"],
        &["2", "2"],
        &["2", "2", "reset"],
        &["2", "2"],
    ]);
    assert!(ours[1].0.contains(disabled), "not disabled: {}", ours[1].0);
    assert!(
        !ours[4].0.contains(disabled),
        "still disabled: {}",
        ours[4].0
    );
    assert!(
        !ours[6].0.contains(disabled),
        "disabled after reset: {}",
        ours[6].0
    );
}

#[test]
fn on_off_by_directed_route() {
    let ours = compare_sequence(&[
        &["-D", "0,1", "2", "on"],
        &["-D", "0,1", "2", "off"],
        &["-D", "0,1", "2"],
        &["-D", "0,1", "2", "on"],
        &["-D", "0,1", "2"],
    ]);
    assert!(ours[0].0.contains("Port is already in enable state"));
    assert!(ours[2]
        .0
        .contains("PhysLinkState:...................Disabled"));
    assert!(ours[4]
        .0
        .contains("PhysLinkState:...................Polling"));
}

#[test]
fn speed_width_and_fields() {
    drop(compare_sequence(&[
        &["2", "3", "speed", "1"],
        &["2", "3", "width", "2"],
        &["2", "3", "espeed", "0"],
        &["2", "3", "speed", "7", "width", "255"],
        &["2", "3"],
        &["2", "3", "vls", "2", "mtu", "4"],
        &["2", "3", "lid", "0x20", "smlid", "0x21", "lmc", "1"],
        &["2", "3", "fdr10", "1"],
        &["2", "0", "mkeylease", "10", "mkeyprot", "0"],
        &["-K", "2", "0"],
    ]));
}

#[test]
fn attached_elsewhere() {
    let fabric = topologies()
        .into_iter()
        .find(|t| t.ends_with("fabric.net"))
        .expect("scripts/topologies/fabric.net");
    for host in ["HcaDual", "Switch2"] {
        let steps: [&[&str]; 4] = [
            &["-D", "0", "1"],
            &["-D", "0,2", "1"],
            &["3", "5"],
            &["2", "2"],
        ];
        compare_sequence_on("ibportstate", &fabric, Some(host), &steps, str::to_owned);
    }
}

#[test]
fn ca_port_states() {
    drop(compare_sequence(&[
        &["3", "1", "down"],
        &["3", "1", "arm"],
        &["3", "1", "active"],
        &["3", "1"],
    ]));
}
