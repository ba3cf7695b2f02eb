//! `ibdevices` read through libibumad on an InfiniBand link layer, against C `ibstat`
//! field by field (`rdma_verbs_test_kit::ibdevices`): at every node of the topology
//! (channel adapters and switches), every device and the one named; an unknown device; and
//! no CA at all. (On rxe, tests/ibdevices.rs compares the verbs path in the VM.)

use rdma_verbs_test_kit::fabric::{node_ids, on_each_topology, require, run_c, run_ours, Place};
use rdma_verbs_test_kit::ibdevices::assert_agrees;

/// Runs C `ibstat` and our `ibdevices` with `args` at `place` and compares them; returns
/// the number of devices they show.
fn agrees(args: &[&str], place: Place) -> usize {
    require(place);
    let c = run_c("ibstat", args, place);
    let ours = run_ours("ibdevices", args, place);
    let call = format!("{} at {place:?}", [&["ibdevices"], args].concat().join(" "));
    let devices = assert_agrees(&call, &c, &ours);
    println!("{call}:\n{}", ours.text());
    devices
}

#[test]
fn at_every_node() {
    on_each_topology(|| {
        for node in node_ids() {
            for args in [&[][..], &["ibsim0"]] {
                let devices = agrees(args, Place::At(node));
                assert_eq!(devices, 1, "ibdevices {args:?} at {node}: the simulated CA");
            }
        }
        assert_eq!(agrees(&["nosuch"], Place::Fabric), 0);
    });
}

#[test]
fn no_ca_at_all() {
    for args in [&[][..], &["ibsim0"]] {
        assert_eq!(agrees(args, Place::NoCa), 0);
    }
}
