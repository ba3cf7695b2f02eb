//! The safe layer on the simulated fabric: run under `scripts/with-ibsim cargo test -p
//! ibumad` (on either topology; the runner then runs this binary on the host). Without a
//! CA it fails, never skips. The MADs are built by hand here, byte by byte from the IBTA
//! layouts (common header 13.4.2, SMP 14.2.1, NodeInfo 14.2.5.3).

use std::process::Command;
use std::time::{Duration, Instant};

use ibumad::{ca_names, Address, Ca, Error, Port, MAD_SIZE};

const TIMEOUT: Duration = Duration::from_millis(200);

/// A Get(NodeInfo) SMP: directed route along `path` (class 0x81) if given, else
/// LID-routed (class 0x01).
fn node_info_get(path: Option<&[u8]>) -> [u8; MAD_SIZE] {
    let mut mad = [0u8; MAD_SIZE];
    mad[0] = 1; // BaseVersion
    mad[1] = if path.is_some() { 0x81 } else { 0x01 };
    mad[2] = 1; // ClassVersion
    mad[3] = 0x01; // Method: Get
    mad[16..18].copy_from_slice(&0x0011u16.to_be_bytes()); // AttributeID: NodeInfo
    if let Some(path) = path {
        mad[7] = u8::try_from(path.len()).unwrap(); // HopCount (HopPointer 0)
        mad[32..36].copy_from_slice(&[0xff; 4]); // DrSLID, DrDLID: permissive
        mad[129..129 + path.len()].copy_from_slice(path); // InitialPath[1..]
    }
    mad
}

/// NodeInfo from an SMP answer: (node type, node GUID), after checking its status.
fn node_info(answer: &[u8; MAD_SIZE]) -> (u8, u64) {
    assert_eq!(answer[3], 0x81, "method GetResp");
    let status = u16::from_be_bytes([answer[4], answer[5]]) & 0x7fff; // D bit masked
    assert_eq!(status, 0, "MAD status");
    let data = &answer[64..128];
    (
        data[2],
        u64::from_be_bytes(data[12..20].try_into().unwrap()),
    )
}

/// The first CA and its first port with a LID.
fn local() -> (Ca, u16) {
    let ca = Ca::get(None).expect("umad_get_ca: run under scripts/with-ibsim");
    let lid = ca
        .ports
        .iter()
        .find(|p| p.state == 4 && p.base_lid != 0)
        .unwrap_or_else(|| panic!("no ACTIVE port with a LID on {ca:?}: is opensm up?"))
        .base_lid;
    (ca, u16::try_from(lid).unwrap())
}

#[test]
fn lists_what_the_c_ibstat_lists() {
    let names = ca_names().expect("umad_get_cas_names");
    assert!(!names.is_empty(), "no CA: run under scripts/with-ibsim");
    let (ca, lid) = local();
    assert_eq!(ca.name, names[0]);
    let out = Command::new("/usr/sbin/ibstat")
        .arg(&ca.name)
        .output()
        .expect("run ibstat");
    assert!(out.status.success(), "ibstat: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!("Node GUID: 0x{:016x}\n", ca.node_guid)),
        "{ca:?}\n{text}"
    );
    assert!(
        text.contains(&format!("Base lid: {lid}\n")),
        "{ca:?}\n{text}"
    );
    assert!(
        text.contains(&format!("Number of ports: {}\n", ca.num_ports)),
        "{ca:?}\n{text}"
    );
}

#[test]
fn bad_names_and_ports_are_errors() {
    assert!(matches!(Ca::get(Some("a\0b")), Err(Error::InvalidName(_))));
    assert!(matches!(
        Ca::get(Some(&"x".repeat(40))),
        Err(Error::InvalidName(_))
    ));
    let err = Port::open(Some("no_such_ca"), 1).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Call {
                call: "umad_open_port",
                ..
            }
        ),
        "{err}"
    );
    let ca = Ca::get(None).unwrap();
    let err = Port::open(Some(&ca.name), 9).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Call {
                call: "umad_open_port",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn directed_route_node_info_of_this_node_and_its_neighbour() {
    let (ca, _) = local();
    let port = Port::open(None, 0).expect("umad_open_port");
    let agent = port.register(0x81, 1).expect("umad_register");
    let to = Address::smi(0xffff);
    let here = agent
        .request(&node_info_get(Some(&[])), &to, TIMEOUT, 2)
        .expect("DR to self");
    assert_eq!(node_info(&here), (1, ca.node_guid), "this CA");
    let port_num = u8::try_from(ca.ports[0].port_num).unwrap();
    let next = agent
        .request(&node_info_get(Some(&[port_num])), &to, TIMEOUT, 2)
        .expect("DR 1 hop");
    assert_eq!(node_info(&next).0, 2, "the switch the CA is cabled to");
}

#[test]
fn lid_routed_node_info_of_this_node() {
    let (ca, lid) = local();
    let port = Port::open(Some(&ca.name), 0).expect("umad_open_port");
    let agent = port.register(0x01, 1).expect("umad_register");
    let answer = agent
        .request(&node_info_get(None), &Address::smi(lid), TIMEOUT, 2)
        .expect("LID-routed NodeInfo");
    assert_eq!(node_info(&answer), (1, ca.node_guid));
}

#[test]
fn a_lid_nobody_has_times_out_after_every_try() {
    let port = Port::open(None, 0).expect("umad_open_port");
    let agent = port.register(0x01, 1).expect("umad_register");
    let start = Instant::now();
    let err = agent
        .request(&node_info_get(None), &Address::smi(0x7ff), TIMEOUT, 1)
        .unwrap_err();
    let took = start.elapsed();
    assert!(matches!(err, Error::Timeout { tries: 2 }), "{err}");
    // ibsim hands an unroutable request back at once, as timed out (status ETIMEDOUT), where
    // a kernel waits for the timeout first: only the upper bound holds for both.
    assert!(took < 10 * TIMEOUT, "took {took:?}");
}

#[test]
fn performance_class_port_info_over_qp1() {
    let (_, lid) = local();
    let port = Port::open(None, 0).expect("umad_open_port");
    let agent = port.register(0x04, 1).expect("umad_register");
    let mut mad = [0u8; MAD_SIZE];
    mad[..4].copy_from_slice(&[1, 0x04, 1, 0x01]); // PerfMgt, Get
    mad[16..18].copy_from_slice(&0x0001u16.to_be_bytes()); // ClassPortInfo
    let answer = agent
        .request(&mad, &Address::gsi(lid), TIMEOUT, 2)
        .expect("PerfMgt ClassPortInfo");
    assert_eq!(
        answer[..4],
        [1, 0x04, 1, 0x81],
        "GetResp of the performance class"
    );
    assert_eq!(u16::from_be_bytes([answer[4], answer[5]]), 0, "MAD status");
}

#[test]
fn a_pipeline_answers_in_the_order_sent() {
    let (ca, _) = local();
    let port = Port::open(None, 0).expect("umad_open_port");
    let agent = port.register(0x81, 1).expect("umad_register");
    let to = Address::smi(0xffff);
    let port_num = u8::try_from(ca.ports[0].port_num).unwrap();
    let mut pipeline = agent.pipeline(TIMEOUT, 1);
    assert!(pipeline.answer().is_none(), "nothing in flight");
    pipeline
        .send(&node_info_get(Some(&[port_num])), &to)
        .expect("DR 1 hop");
    pipeline
        .send(&node_info_get(Some(&[])), &to)
        .expect("DR to self");
    assert_eq!(pipeline.len(), 2);
    let next = pipeline.answer().expect("in flight").expect("DR 1 hop");
    assert_eq!(node_info(&next).0, 2, "the switch the CA is cabled to");
    let here = pipeline.answer().expect("in flight").expect("DR to self");
    assert_eq!(node_info(&here), (1, ca.node_guid), "this CA");
    assert!(pipeline.is_empty());
}

#[test]
fn a_pipeline_times_out_one_request_and_answers_the_next() {
    let (ca, lid) = local();
    let port = Port::open(None, 0).expect("umad_open_port");
    let agent = port.register(0x01, 1).expect("umad_register");
    let mut pipeline = agent.pipeline(TIMEOUT, 1);
    let start = Instant::now();
    for dest in [lid, 0x7ff, lid] {
        let to = Address::smi(dest);
        pipeline.send(&node_info_get(None), &to).expect("umad_send");
    }
    let first = pipeline.answer().expect("in flight").expect("NodeInfo");
    assert_eq!(node_info(&first), (1, ca.node_guid));
    let err = pipeline.answer().expect("in flight").unwrap_err();
    assert!(matches!(err, Error::Timeout { tries: 2 }), "{err}");
    let last = pipeline.answer().expect("in flight").expect("NodeInfo");
    assert_eq!(node_info(&last), (1, ca.node_guid));
    assert!(start.elapsed() < 10 * TIMEOUT, "took {:?}", start.elapsed());
}
