//! `smpquery`: every op on every node of the topology by LID, ports by number (one past
//! the last too), directed routes and GUIDs, the common options, and the errors.

use rdma_verbs_test_kit::fabric::{compare, compare_at, nodes, on_each_topology, Place};

/// Runs the comparison of `smpquery` with each argument list.
fn compare_all(lists: &[Vec<String>]) {
    for args in lists {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        compare("smpquery", &args);
    }
}

/// `words` split at spaces, as an argument list.
fn args(words: &str) -> Vec<String> {
    words.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn every_op_on_every_node() {
    on_each_topology(|| {
        let mut lists = Vec::new();
        for node in nodes() {
            let lid = node.lid;
            for op in [
                "nodeinfo",
                "NI",
                "nodedesc",
                "nd",
                "switchinfo",
                "SI",
                "GUIDInfo",
            ] {
                lists.push(args(&format!("{op} {lid}")));
            }
            for port in 0..=node.ports + 1 {
                for op in ["portinfo", "PKeys", "sl2vl", "vlarb", "mepi", "pie"] {
                    lists.push(args(&format!("{op} {lid} {port}")));
                }
            }
            lists.push(args(&format!("portinfo {lid}")));
            lists.push(args(&format!("-x portinfo {lid} 1")));
            lists.push(args(&format!("-K pi {lid}")));
            lists.push(args(&format!("MlnxExtPortInfo {lid}")));
            lists.push(args(&format!("PortInfoExtended {lid}")));
            lists.push(args(&format!("-G nodeinfo {}", node.port_guid)));
            lists.push(args(&format!("--Guid pi {} 1", node.port_guid)));
        }
        compare_all(&lists);
    });
}

#[test]
fn directed_routes() {
    on_each_topology(|| {
        let mut lists = vec![args("-D nodeinfo 0"), args("-D nd 0,"), args("-D pi 0 1")];
        for port in 0..=9 {
            lists.push(args(&format!("-D nodeinfo 0,1,{port}")));
            lists.push(args(&format!("-D portinfo 0,1 {port}")));
        }
        lists.push(args("-D switchinfo 0,1"));
        lists.push(args("-D mepi 0 1"));
        lists.push(args("-D MEPI 0,1 2"));
        lists.push(args("-D pie 0,1 2"));
        lists.push(args("-D nd 0,1,1,1,1"));
        compare_all(&lists);
    });
}

/// Combined routes (`-c <lid> <path>`), which the simulator does not route: every query
/// times out (`-t 50` keeps that short) or fails to resolve, alike.
#[test]
fn combined_routes() {
    on_each_topology(|| {
        compare_all(&[
            args("-t 50 -c nodeinfo 2 0,1"),
            args("-t 50 -c nd 2 0"),
            args("-t 50 -c nd 2"),
            args("-t 50 -c pi 2 0,1 1"),
            args("-t 50 -c nd 2x0,1"),
            args("-c nd 0 0,1"),
            args("-c nd x 0"),
            args("-c -D nd 0 x"),
            args("-t 50 -D -c nd 2 0"),
            args("-c -L nd 1"),
            args("-c -G nd 0x100001 x"),
        ]);
    });
}

#[test]
fn common_options() {
    on_each_topology(|| {
        compare_all(&[
            args("-C ibsim0 -P 1 nodeinfo 1"),
            args("-t 100 -e nd 1"),
            args("-v -v nd 1"),
            args("-d nd 1"),
            args("-s 1 -G nd 0x100001"),
            args("-L nd 1"),
            args("--node-name-map /nonexistent nd 1"),
        ]);
    });
}

#[test]
fn node_name_map() {
    on_each_topology(|| {
        let map = std::env::temp_dir().join(format!("smpquery-map-{}", std::process::id()));
        std::fs::write(&map, "# names\n0x100000 \"first host\"\n0x200000 sw\n")
            .expect("a node name map");
        let map = map.to_str().expect("a UTF-8 path").to_owned();
        compare_all(&[
            args(&format!("--node-name-map {map} nd 1")),
            args(&format!("--node-name-map={map} -D nd 0,1")),
        ]);
        std::fs::write(&map, "host without guid\n").expect("a node name map");
        compare_all(&[args(&format!("--node-name-map {map} nd 1"))]);
        std::fs::remove_file(&map).expect("removing the map");
    });
}

#[test]
fn errors() {
    on_each_topology(|| {
        compare_all(&[
            args("nodeinfo 0xbfff"),
            args("-e portinfo 0xbfff 1"),
            args("mepi 0xbfff 1"),
            args("pie 0xbfff 1"),
            args("nodeinfo 0"),
            args("nodeinfo x"),
            args("-D nodeinfo 0,1,1,1,1,1,1,1,9"),
            args("-G nodeinfo 0x1234"),
            args("-G nodeinfo 0"),
            args("nodeinfo"),
            args(""),
            args("nosuchop 1"),
            args("guids 1"),
            args("-P 9 nodeinfo 1"),
            args("-C nosuch nodeinfo 1"),
            args("-t 0 nodeinfo 1"),
            args("-y 1z nodeinfo 1"),
            args("-z"),
            args("-h"),
            args("-V"),
            args("--bogus"),
        ]);
        let long = format!("-D nodeinfo 0{}", ",1".repeat(64));
        compare_all(&[args(&long)]);
    });
}

#[test]
fn no_ca_at_all() {
    for args in [&["nodeinfo", "1"][..], &["-D", "nd", "0"], &["nd"]] {
        compare_at("smpquery", args, Place::NoCa);
    }
}
