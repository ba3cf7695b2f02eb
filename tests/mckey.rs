//! Our `mckey` (the package's example) against rdma-core's (`/usr/bin`, package
//! rdmacm-utils), as sender and as receiver, and against itself, on the rdma_cm device (run
//! through `scripts/with-rdma`, which names its address in `$WITH_RDMA_CM_ADDR`; a missing
//! one is a failure, not a skip; multicast on its dummy netdev: docs/testing.md): the
//! receiver joins an IPv4 group, the sender joins it too (as a full or a send-only member)
//! and sends its datagrams through the join event's address handle, the receiver gets them
//! all (it waits for its count), and both print C's lines and end with status 0; a message
//! larger than the MTU and bad options get C's output and status; what rdma-verbs cannot do
//! (`-M`) fails, naming it; `-l` fails on rxe as C's does. Each test uses its own group, so
//! they run in parallel.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{cm_addr, open_cm, strings, Program, Running};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Whether the host is a member of `group` at the IP level (`/proc/net/igmp`, which
/// writes each group as its 32 bits in host order, in hexadecimal): what a full member's
/// join does on RoCE.
fn igmp_member(group: Ipv4Addr) -> bool {
    let hex = format!("{:08X}", u32::from_ne_bytes(group.octets()));
    std::fs::read_to_string("/proc/net/igmp")
        .is_ok_and(|text| text.split_whitespace().any(|word| word == hex))
}

/// C's lines for a run of `ids` ids on `group` in `role` (`client`: the sender).
fn lines(role: &str, ids: usize, group: Ipv4Addr) -> Vec<String> {
    let mut l = vec![format!("mckey: starting {role}"), "mckey: joining".into()];
    for _ in 0..ids {
        l.push(format!("mckey: joined dgid: ::ffff:{group} mlid 0x0 sl 0"));
    }
    l.push(if role == "client" {
        "initiating data transfers".into()
    } else {
        "receiving data transfers".into()
    });
    for last in [
        "data transfers complete",
        "test complete",
        "return status 0",
    ] {
        l.push(last.into());
    }
    l
}

/// A receiver of `ids` ids, then a sender of `ids` ids (with `sender_args` besides), on
/// `group`, both bound to the CM address; `args` (messages, sizes) go to both.
fn multicast(
    receiver: Program,
    sender: Program,
    group: Ipv4Addr,
    ids: usize,
    args: &[&str],
    sender_args: &[&str],
) {
    open_cm();
    let (addr, group_text, ids_text) = (cm_addr().to_string(), group.to_string(), ids.to_string());
    let mut common = vec![
        "-m",
        group_text.as_str(),
        "-b",
        addr.as_str(),
        "-c",
        &ids_text,
    ];
    common.extend(args);
    let mut r = Running::spawn("receiver", &receiver.example("mckey"), &strings(&common));
    r.wait_until("joined the group", TIMEOUT, || igmp_member(group));
    let mut s_args = common.clone();
    s_args.push("-s");
    s_args.extend(sender_args);
    let s = Running::spawn("sender", &sender.example("mckey"), &strings(&s_args))
        .finish_by(Instant::now() + TIMEOUT);
    let r = r.finish_by(Instant::now() + TIMEOUT);
    let what = format!("{receiver:?} receiver, {sender:?} sender {sender_args:?}, {args:?}");
    let s = s.unwrap_or_else(|out| panic!("{what}: the sender hung\n{out}"));
    let r = r
        .unwrap_or_else(|out| panic!("{what}: the receiver hung\n{out}\nsender:\n{}", s.context()));
    s.assert_clean(&format!("{what}: sender"), &lines("client", ids, group));
    r.assert_clean(&format!("{what}: receiver"), &lines("server", ids, group));
}

#[test]
fn rust_sender_c_receiver() {
    multicast(
        Program::C,
        Program::Rust,
        Ipv4Addr::new(239, 1, 4, 1),
        1,
        &[],
        &[],
    );
}

#[test]
fn c_sender_rust_receiver() {
    multicast(
        Program::Rust,
        Program::C,
        Ipv4Addr::new(239, 1, 4, 2),
        1,
        &[],
        &[],
    );
}

#[test]
fn rust_sender_rust_receiver_two_ids_of_full_size_datagrams() {
    multicast(
        Program::Rust,
        Program::Rust,
        Ipv4Addr::new(239, 1, 4, 3),
        2,
        &["-C", "30", "-S", "1024"],
        &[],
    );
}

#[test]
fn rust_send_only_sender_c_receiver() {
    multicast(
        Program::C,
        Program::Rust,
        Ipv4Addr::new(239, 1, 4, 4),
        1,
        &["-C", "20"],
        &["-o"],
    );
}

#[test]
fn c_send_only_sender_rust_receiver() {
    multicast(
        Program::Rust,
        Program::C,
        Ipv4Addr::new(239, 1, 4, 5),
        1,
        &["-C", "20", "-S", "512"],
        &["-o"],
    );
}

/// What `program` prints and returns for `args`, its path written as `mckey`.
fn run_alone(program: Program, args: &[&str]) -> (Option<i32>, String, String) {
    rdma_verbs_test_kit::run_alone(&program.example("mckey"), "mckey", args, TIMEOUT)
}

#[test]
fn a_message_over_the_mtu_fails_as_in_c() {
    // Checked once the group resolved, before the join; the leave then fails as well.
    open_cm();
    let addr = cm_addr().to_string();
    let args = ["-m", "239.1.4.6", "-b", addr.as_str(), "-s", "-S", "100000"];
    let (ours, c) = (
        run_alone(Program::Rust, &args),
        run_alone(Program::C, &args),
    );
    assert_eq!(ours, c);
    assert!(
        c.1.contains("message_size 100000 is larger than active mtu"),
        "{c:?}"
    );
    assert_eq!(c.0, Some(255), "the failed leave's -1");
}

#[test]
fn what_rdma_verbs_cannot_do_fails_naming_it() {
    open_cm();
    let addr = cm_addr().to_string();
    let args = ["-M", "ff0e::1", "-b", addr.as_str(), "-s"];
    let (status, stdout, stderr) = run_alone(Program::Rust, &args);
    assert_eq!(status, Some(255), "{stdout}{stderr}");
    assert!(
        stdout.ends_with("test complete\nreturn status -1\n"),
        "{stdout}"
    );
    assert!(
        stderr.contains("AF_IB") && stderr.contains("not supported by rdma-verbs"),
        "{stderr}"
    );
}

/// `-l`: a QP created with `IBV_QP_CREATE_BLOCK_SELF_MCAST_LB`, which rxe refuses; ours
/// fails as C's does (output and status), its message naming the creation flags.
#[test]
fn no_loopback_qps_fail_on_rxe_as_cs_do() {
    open_cm();
    let addr = cm_addr().to_string();
    let args = ["-m", "239.1.4.7", "-b", addr.as_str(), "-s", "-l"];
    let (ours, c) = (
        run_alone(Program::Rust, &args),
        run_alone(Program::C, &args),
    );
    assert_eq!((&ours.0, &ours.1), (&c.0, &c.1), "ours {ours:?}, C {c:?}");
    assert!(c.2.contains("mckey: unable to create QP"), "{c:?}");
    assert!(
        ours.2.contains("mckey: unable to create QP") && ours.2.contains("creation flags"),
        "{ours:?}"
    );
}

#[test]
fn bad_options_get_cs_usage_and_messages() {
    for args in [&["-h"][..], &["-M", "ff0e::1"]] {
        let (ours, c) = (run_alone(Program::Rust, args), run_alone(Program::C, args));
        assert_eq!(ours, c, "{args:?}");
        assert_eq!(c.0, Some(1), "{args:?}");
    }
}
