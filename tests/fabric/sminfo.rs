//! `sminfo`: the default query, the SM by LID, directed route and GUID, the common options,
//! and its errors (a LID that answers nothing, a missing port or CA, no CA at all, bad
//! paths, options and timeouts).

use rdma_verbs_test_kit::fabric::{
    compare, compare_at, compare_masked, mask_numbers, on_each_topology, Place,
};

/// `sminfo`'s stdout with the activity count (which opensm's SM increases while it runs)
/// left out.
fn without_count(text: &str) -> String {
    mask_numbers(text, ", activity count ")
}

/// The activity count `sminfo` printed.
fn count(text: &str) -> u64 {
    let after = text
        .split(", activity count ")
        .nth(1)
        .expect("an activity count");
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().expect("a number")
}

/// Compares a query that succeeds: the same output but the activity count, which is
/// between the C tool's before and after ours.
fn compare_query(args: &[&str]) {
    let (before, ours) = compare_masked("sminfo", args, Place::Fabric, without_count);
    assert_eq!(
        ours.status,
        Some(0),
        "sminfo {args:?} fails: {}",
        ours.text()
    );
    let (after, _) = compare_masked("sminfo", args, Place::Fabric, without_count);
    let (b, o, a) = (
        count(&before.text()),
        count(&ours.text()),
        count(&after.text()),
    );
    assert!(b <= o && o <= a, "activity counts: C {b}, ours {o}, C {a}");
}

#[test]
fn queries() {
    on_each_topology(|| {
        for args in [
            &[][..],
            &["1"],
            &["-L", "1"],
            &["-D", "0"],
            &["-D", "0,"],
            &["-G", "0x100001"],
            &["--Guid", "1048577"],
            &["-P", "1"],
            &["-C", "ibsim0", "-P", "1"],
            &["-t", "100", "1"],
            &["-v", "-v", "1"],
            &["-e"],
            &["-d"],
            &["--timeout=50", "--Ca", "ibsim0"],
        ] {
            compare_query(args);
        }
    });
}

#[test]
fn sm_absent_or_unanswered() {
    on_each_topology(|| {
        for args in [
            &["0xbfff"][..],
            &["-e", "99"],
            &["-D", "0,1"],
            &["-D", "0,a"],
            &["-D", "0,1,1,1"],
            &["-G", "0x100099"],
            &["-G", "0x200000"],
        ] {
            compare("sminfo", args);
        }
        // With -d the message on stdout shows the process ID.
        compare_masked("sminfo", &["-d", "99"], Place::Fabric, without_pid);
    });
}

/// Text with the process IDs of `[pid N]` left out.
fn without_pid(text: &str) -> String {
    mask_numbers(text, "[pid ")
}

/// Sets (a nonzero modifier: 1 handover, 2 acknowledge, 3 disable, 4 standby, 5 discover)
/// with the values of `-s`, `-p` and `-a`: opensm takes or refuses them alike; the activity
/// count it answers with is left out.
#[test]
fn sets() {
    on_each_topology(|| {
        for modifier in ["1", "2", "3", "4", "5"] {
            let args = ["-s", "3", "-p", "2", "-a", "7", "1", modifier];
            compare_masked("sminfo", &args, Place::Fabric, without_count);
        }
        let args = ["-D", "--priority", "15", "--state=1", "0", "4"];
        compare_masked("sminfo", &args, Place::Fabric, without_count);
        compare_query(&[]);
    });
}

#[test]
fn bad_destinations() {
    on_each_topology(|| {
        let long = format!("0{}", ",1".repeat(64));
        for args in [
            &["0"][..],
            &["0xc000"],
            &["-1"],
            &["x"],
            &["-D", ""],
            &["-D", &long],
            &["-G", "0"],
            &["-G", "x"],
        ] {
            compare("sminfo", args);
        }
    });
}

#[test]
fn missing_port_or_ca() {
    on_each_topology(|| {
        for args in [
            &["-P", "5"][..],
            &["-P", "-1"],
            &["-C", "nosuch"],
            &["-C", "nosuch", "-P", "1"],
            &["-C", "ibsim0", "-P", "2"],
        ] {
            compare("sminfo", args);
        }
    });
}

#[test]
fn bad_options() {
    on_each_topology(|| {
        for args in [
            &["-x"][..],
            &["-h"],
            &["--help"],
            &["-V"],
            &["-t", "0"],
            &["-t", "-1"],
            &["-t", "10ms"],
            &["-t", "2147483648"],
            &["-t"],
            &["--timeout"],
            &["--ver"],
            &["--verbose=1"],
            &["-K"],
            &["-s"],
            &["-V", "-x"],
            &["-x", "-V"],
            &["--", "-x"],
        ] {
            compare("sminfo", args);
        }
    });
}

#[test]
fn no_ca_at_all() {
    for args in [&[][..], &["1"], &["-D", "0"], &["-V"], &["-t", "0"]] {
        compare_at("sminfo", args, Place::NoCa);
    }
}
