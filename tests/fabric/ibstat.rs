//! `ibstat` read through libibumad on an InfiniBand link layer: at every node of the
//! topology (channel adapters and switches), each option set, each port number (and
//! missing ones), an unknown device, and no CA at all. (On rxe, tests/tools.rs compares the
//! verbs and sysfs path in the VM.)

use rdma_verbs_test_kit::fabric::{compare_at, node_ids, on_each_topology, Place};

#[test]
fn at_every_node() {
    on_each_topology(|| {
        for node in node_ids() {
            for args in [
                &[][..],
                &["-l"],
                &["-s"],
                &["-p"],
                &["-lp"],
                &["ibsim0"],
                &["-s", "ibsim0"],
                &["-p", "ibsim0"],
                &["ibsim0", "0"],
                &["ibsim0", "1"],
                &["ibsim0", "2"],
                &["ibsim0", "3"],
                &["-s", "ibsim0", "1"],
                &["ibsim0", "-1"],
                &["nosuch"],
                &["-l", "nosuch"],
            ] {
                compare_at("ibstat", args, Place::At(node));
            }
        }
    });
}

#[test]
fn options() {
    on_each_topology(|| {
        for args in [
            &["-x"][..],
            &["-h"],
            &["-V"],
            &["--list_of_cas"],
            &["--short", "ibsim0"],
            &["--port_list"],
            &["-v", "-d"],
            &["-z", "/nonexistent", "-l"],
            &["-C", "ibsim0"],
        ] {
            compare_at("ibstat", args, Place::Fabric);
        }
    });
}

#[test]
fn no_ca_at_all() {
    for args in [
        &[][..],
        &["-l"],
        &["-s"],
        &["-p"],
        &["ibsim0"],
        &["ibsim0", "1"],
    ] {
        compare_at("ibstat", args, Place::NoCa);
    }
}
