//! `perfquery`: PortCounters and PortCountersExtended of every node by LID and GUID, one
//! port, lists, ranges, all ports summed or in turn, resets (which the simulator applies),
//! the common options, and the errors.
//!
//! The traffic counters (data and packets) count the MADs of the queries themselves, so
//! they are compared as numbers that only grow: ours between the C tool's before and after.

use rdma_verbs_test_kit::fabric::{
    compare, compare_at, compare_masked, mask_numbers, nodes, on_each_topology, run_c, run_ours,
    Place,
};

/// The counters that traffic (our own queries included) changes.
const TRAFFIC: [&str; 8] = [
    "PortXmitData:",
    "PortRcvData:",
    "PortXmitPkts:",
    "PortRcvPkts:",
    "PortUnicastXmitPkts:",
    "PortUnicastRcvPkts:",
    "PortMulticastXmitPkts:",
    "PortMulticastRcvPkts:",
];

/// Whether `line` shows a traffic counter.
fn traffic(line: &str) -> bool {
    TRAFFIC.iter().any(|name| line.starts_with(name))
}

/// `text` with the traffic counters' values left out.
fn without_traffic(text: &str) -> String {
    text.lines()
        .map(|l| match l.rfind('.') {
            Some(dot) if traffic(l) => format!("{}_\n", &l[..=dot]),
            _ => format!("{l}\n"),
        })
        .collect()
}

/// The traffic counters' values, in order.
fn traffic_values(text: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| traffic(l))
        .map(|l| {
            let digits = l.rsplit('.').next().unwrap_or_default();
            digits.parse().unwrap_or_else(|_| panic!("a counter: {l}"))
        })
        .collect()
}

/// Compares `perfquery args`: the same output but the traffic counters, each of ours
/// between the C tool's before and after (unless a reset comes between).
fn compare_counters(args: &[&str]) {
    let (before, ours) = compare_masked("perfquery", args, Place::Fabric, without_traffic);
    if args
        .iter()
        .any(|a| a.starts_with("-r") || a.starts_with("-R"))
    {
        return;
    }
    let after = run_c("perfquery", args, Place::Fabric);
    let (b, o, a) = (
        traffic_values(&before.text()),
        traffic_values(&ours.text()),
        traffic_values(&after.text()),
    );
    assert_eq!(b.len(), o.len(), "perfquery {args:?}");
    for i in 0..o.len() {
        assert!(
            b[i] <= o[i] && o[i] <= a[i],
            "perfquery {args:?}: traffic counter {i}: C {}, ours {}, C {}",
            b[i],
            o[i],
            a[i]
        );
    }
}

/// `words` split at spaces.
fn args(words: &str) -> Vec<String> {
    words.split_whitespace().map(str::to_owned).collect()
}

/// Runs [`compare_counters`] on each argument list.
fn compare_all(lists: &[Vec<String>]) {
    for list in lists {
        let list: Vec<&str> = list.iter().map(String::as_str).collect();
        compare_counters(&list);
    }
}

#[test]
fn every_node() {
    on_each_topology(|| {
        let mut lists = vec![args(""), args("-x"), args("-a"), args("-l")];
        for node in nodes() {
            let lid = node.lid;
            lists.push(args(&lid.to_string()));
            for port in 0..=node.ports + 1 {
                lists.push(args(&format!("{lid} {port}")));
                lists.push(args(&format!("-x {lid} {port}")));
            }
            for opts in ["-a", "-x -a", "-l", "-a -l", "-x -l"] {
                lists.push(args(&format!("{opts} {lid}")));
            }
            lists.push(args(&format!("{lid} 255")));
            lists.push(args(&format!("-G {} 1", node.port_guid)));
        }
        compare_all(&lists);
    });
}

#[test]
fn port_lists_and_ranges() {
    on_each_topology(|| {
        let switch = nodes().into_iter().find(|n| n.switch).expect("a switch");
        let lid = switch.lid;
        let mut lists = Vec::new();
        lists.push(args(&format!("-t 100 {lid} 1")));
        lists.push(args(&format!("-v -d {lid} 1")));
        for ports in [
            "1,2", "1,3,5", "2,", "1-3", "2-8", "-2", "3-2", "2-2", "1,9",
        ] {
            for opts in ["", "-x", "-a", "-l", "-a -l", "-x -a"] {
                lists.push(args(&format!("{opts} {lid} {ports}")));
            }
        }
        compare_all(&lists);
    });
}

#[test]
fn resets() {
    on_each_topology(|| {
        let switch = nodes().into_iter().find(|n| n.switch).expect("a switch");
        let lid = switch.lid.to_string();
        for list in [
            args(&format!("-R {lid} 1")),
            args(&format!("-r {lid} 1")),
            args(&format!("-x -R {lid} 1")),
            args(&format!("-x -r {lid} 2")),
            args(&format!("-R -a {lid}")),
            args(&format!("-R {lid} 1-3")),
            args(&format!("-R {lid} 2 0x0fff")),
            args(&format!("-R {lid} 2 0xf000")),
            args(&format!("-R -l {lid}")),
            args("-R"),
        ] {
            let list: Vec<&str> = list.iter().map(String::as_str).collect();
            compare_counters(&list);
        }
        // Ours resets: what the C tool reads next has only its own query and our reset.
        let ours = run_ours("perfquery", &["-R", &lid, "1"], Place::Fabric);
        assert_eq!(ours.status, Some(0), "{}", ours.stderr);
        let after = run_c("perfquery", &[&lid, "1"], Place::Fabric);
        let values = traffic_values(&after.text());
        assert!(
            values.iter().all(|&v| v < 1000),
            "not reset: {values:?}\n{}",
            after.text()
        );
    });
}

/// The detail options the simulator answers (on every node).
const ANSWERED: [&str; 8] = [
    "-D",
    "-E",
    "--oprcvcounters",
    "--flowctlcounters",
    "--vloppackets",
    "--vlopdata",
    "--vlxmitflowctlerrors",
    "--vlxmitcounters",
];

/// The detail options the simulator does not answer: asked only of switches, since ibsim
/// hands such a MAD for the node opensm sits on to opensm, which crashes on it.
const UNANSWERED: [&str; 8] = [
    "-X",
    "-S",
    "--swportvlcong",
    "--rcvcc",
    "--slrcvfecn",
    "--slrcvbecn",
    "--xmitcc",
    "--vlxmittimecc",
];

#[test]
fn details() {
    on_each_topology(|| {
        let mut lists = vec![args("-D"), args("-E -r"), args("-E -D")];
        for node in nodes() {
            let lid = node.lid;
            for opt in ANSWERED {
                lists.push(args(&format!("{opt} {lid} 1")));
            }
            if node.switch {
                for opt in UNANSWERED {
                    lists.push(args(&format!("{opt} {lid} 1")));
                }
                for opts in ["-D -r", "-E -R", "-R --vlopdata", "-D -a", "-x -E", "-E -X"] {
                    lists.push(args(&format!("{opts} {lid} 2")));
                }
                lists.push(args(&format!("-R -D {lid} 2 0x3")));
            }
        }
        compare_all(&lists);
    });
}

/// `-T` (PortExtendedSpeedsCounters) and `-c` (PortSamplesControl), which the simulator
/// does not answer (so asked of switches only, as [`UNANSWERED`]): the error paths, alone
/// and against the other attribute options (the first in the C tool's order wins).
#[test]
fn ext_speeds_and_samples_control() {
    on_each_topology(|| {
        let mut lists = Vec::new();
        for node in nodes().into_iter().filter(|n| n.switch) {
            let lid = node.lid;
            for opts in [
                "-T",
                "-c",
                "--extended_speeds",
                "--smplctl",
                "-T -r",
                "-T -R",
                "-c -R",
                "-T -c",
                "-c -X",
                "-T --oprcvcounters",
                "-E -T",
                "-c -D",
                "-c --vlxmittimecc",
                "-x -c",
            ] {
                lists.push(args(&format!("{opts} {lid} 1")));
            }
            lists.push(args(&format!("-T -R {lid} 2 0x3")));
            lists.push(args(&format!("-T -R {lid} 2 0")));
            lists.push(args(&format!("-c -a {lid}")));
        }
        compare_all(&lists);
        // With -d: the pids in the messages differ.
        let switch = nodes().into_iter().find(|n| n.switch).expect("a switch");
        let lid = switch.lid.to_string();
        let pids = |text: &str| mask_numbers(&mask_numbers(text, "[pid "), "ibdebug: [");
        for opts in ["-d -T", "-d -c", "-d -T -R", "-d -d -T -r"] {
            let list = args(&format!("{opts} {lid} 1"));
            let list: Vec<&str> = list.iter().map(String::as_str).collect();
            compare_masked("perfquery", &list, Place::Fabric, pids);
        }
        compare_masked(
            "perfquery",
            &["-d", "-T", "-R", &lid, "1", "0"],
            Place::Fabric,
            pids,
        );
    });
}

#[test]
fn errors_and_common_options() {
    on_each_topology(|| {
        for words in [
            "0xbfff",
            "-e 0xbfff 1",
            "0",
            "-G 0x1234 1",
            "-P 9",
            "-C nosuch",
            "-t 0",
            "-s 1 -G 0x100001 1",
            "-K",
            "-h",
            "-V",
            "--extended --loop_ports 1",
            "--all 1",
        ] {
            let list = args(words);
            let list: Vec<&str> = list.iter().map(String::as_str).collect();
            compare("perfquery", &list);
        }
    });
}

#[test]
fn no_ca_at_all() {
    for args in [&[][..], &["1"], &["-x", "1", "1"], &["-V"]] {
        compare_at("perfquery", args, Place::NoCa);
    }
}
