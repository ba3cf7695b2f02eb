//! Our `ibdevices` against infiniband-diags' `ibstat`, which shows all its fields but two:
//! for the same arguments, the same devices and ports in the same order, each field they
//! share equal, each port's `Width` times the lane rate of its `Active speed` equal to its
//! `Rate`, the same exit status, and a message on stderr exactly when `ibstat` writes one.

use crate::fabric::Run;

/// The fields of a device that `ibdevices` shows, besides its `<type> type` line.
const DEVICE_FIELDS: [&str; 4] = [
    "Number of ports",
    "Firmware version",
    "Node GUID",
    "System image GUID",
];
/// The fields of a port that `ibdevices` shares with `ibstat`.
const PORT_FIELDS: [&str; 3] = ["State", "Physical state", "Rate"];
/// The fields of a port that `ibdevices` adds, last.
const ADDED_FIELDS: [&str; 2] = ["Width", "Active speed"];

/// A block of `ibstat`'s layout: a device (`CA 'rxe0'`) or a port (`Port 1:`), its header
/// line and its `Field: value` lines, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Block {
    head: String,
    fields: Vec<(String, String)>,
}

impl Block {
    fn new(head: &str) -> Block {
        Block {
            head: head.to_owned(),
            fields: Vec::new(),
        }
    }

    /// The value of field `name`; fails if there is none.
    fn value(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("{}: no {name}", self.head))
    }

    /// The names of its fields, in order.
    fn names(&self) -> Vec<&str> {
        self.fields.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The fields whose names `keep` accepts, in order.
    fn only(&self, keep: impl Fn(&str) -> bool) -> Vec<(String, String)> {
        self.fields
            .iter()
            .filter(|(n, _)| keep(n))
            .cloned()
            .collect()
    }
}

/// The devices of `ibstat`-layout text, each with its ports; fails on a line that does not
/// fit the layout.
fn parse(text: &str) -> Vec<(Block, Vec<Block>)> {
    let mut devices: Vec<(Block, Vec<Block>)> = Vec::new();
    for line in text.lines() {
        let field = |l: &str| {
            let (name, value) = l
                .split_once(':')
                .unwrap_or_else(|| panic!("not a field: {line:?}"));
            (
                name.to_owned(),
                value.strip_prefix(' ').unwrap_or(value).to_owned(),
            )
        };
        let (device, ports) = match devices.last_mut() {
            Some(last) => (&mut last.0, &mut last.1),
            None if !line.starts_with('\t') => {
                devices.push((Block::new(line), Vec::new()));
                continue;
            }
            None => panic!("a field before any device: {line:?}"),
        };
        if let Some(l) = line.strip_prefix("\t\t") {
            let port = ports
                .last_mut()
                .unwrap_or_else(|| panic!("a port field before any port: {line:?}"));
            port.fields.push(field(l));
        } else if let Some(l) = line.strip_prefix('\t') {
            if l.starts_with("Port ") && l.ends_with(':') {
                ports.push(Block::new(l));
            } else {
                assert!(ports.is_empty(), "a device field after its ports: {line:?}");
                device.fields.push(field(l));
            }
        } else {
            devices.push((Block::new(line), Vec::new()));
        }
    }
    devices
}

/// The number in `Rate` (`2.5`, `100`, `40 (FDR10)`), and whether it says FDR10.
fn rate(value: &str) -> (f64, bool) {
    let (number, fdr10) = match value.split_once(' ') {
        Some((n, "(FDR10)")) => (n, true),
        Some(_) => panic!("Rate {value:?}: a number, then (FDR10) or nothing"),
        None => (value, false),
    };
    let number = number
        .parse()
        .unwrap_or_else(|_| panic!("Rate {value:?}: not a number"));
    (number, fdr10)
}

/// Asserts that port `port` of `ibdevices` names its width and speed (`4X`, `EDR (25 Gb/s
/// per lane)`) and that they make its rate.
fn assert_width_times_speed_is_rate(at: &str, port: &Block) {
    let width = port.value("Width");
    let lanes: f64 = width
        .strip_suffix('X')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{at}: Width {width:?} is not a number of lanes (4X)"));
    let speed = port.value("Active speed");
    let (name, lane) = speed
        .strip_suffix(" Gb/s per lane)")
        .and_then(|s| s.split_once(" ("))
        .unwrap_or_else(|| panic!("{at}: Active speed {speed:?} is not NAME (N Gb/s per lane)"));
    let lane: f64 = lane
        .parse()
        .unwrap_or_else(|_| panic!("{at}: Active speed {speed:?}: no lane rate"));
    let (gbps, fdr10) = rate(port.value("Rate"));
    assert_eq!(
        lanes * lane,
        gbps,
        "{at}: Width {width} times Active speed {speed} is not Rate {gbps}"
    );
    assert_eq!(
        fdr10,
        name == "FDR10",
        "{at}: Rate says FDR10 exactly when Active speed does"
    );
}

/// Asserts that `ours`, a run of our `ibdevices`, agrees with `c`, a run of C `ibstat`
/// with the same arguments (`call` names them), as the module doc says; returns the number of
/// devices compared.
pub fn assert_agrees(call: &str, c: &Run, ours: &Run) -> usize {
    assert!(
        !ours.stderr.contains("panicked"),
        "{call}: ibdevices panicked:\n{}",
        ours.stderr
    );
    assert_eq!(
        ours.status, c.status,
        "{call}: exit status differs (left: ibdevices, right: ibstat); stderr:\n\
         ibdevices: {}\nibstat: {}",
        ours.stderr, c.stderr
    );
    assert_eq!(
        ours.stderr.is_empty(),
        c.stderr.is_empty(),
        "{call}: one writes to stderr, the other not:\nibdevices: {}\nibstat: {}",
        ours.stderr,
        c.stderr
    );
    let (ours_text, c_text) = (ours.text(), c.text());
    let context = format!("{call}:\nibdevices:\n{ours_text}\nibstat:\n{c_text}");
    let (ours_devices, c_devices) = (parse(&ours_text), parse(&c_text));
    let heads = |devices: &[(Block, Vec<Block>)]| -> Vec<String> {
        devices.iter().map(|(d, _)| d.head.clone()).collect()
    };
    assert_eq!(
        heads(&ours_devices),
        heads(&c_devices),
        "devices differ (left: ibdevices, right: ibstat); {context}"
    );
    for ((ours_dev, ours_ports), (c_dev, c_ports)) in ours_devices.iter().zip(&c_devices) {
        let node_type = c_dev.head.split(' ').next().unwrap_or_default();
        let type_field = format!("{node_type} type");
        let device_field = |n: &str| n == type_field || DEVICE_FIELDS.contains(&n);
        let expected: Vec<&str> = [type_field.as_str()]
            .into_iter()
            .chain(DEVICE_FIELDS)
            .collect();
        assert_eq!(
            ours_dev.names(),
            expected,
            "{}: fields; {context}",
            c_dev.head
        );
        assert_eq!(
            ours_dev.fields,
            c_dev.only(device_field),
            "{}: device fields differ (left: ibdevices, right: ibstat's shared ones); {context}",
            c_dev.head
        );
        let port_heads =
            |ports: &[Block]| -> Vec<String> { ports.iter().map(|p| p.head.clone()).collect() };
        assert_eq!(
            port_heads(ours_ports),
            port_heads(c_ports),
            "{}: ports differ; {context}",
            c_dev.head
        );
        for (ours_port, c_port) in ours_ports.iter().zip(c_ports) {
            let at = format!("{} {}", c_dev.head, c_port.head.trim_end_matches(':'));
            let expected: Vec<&str> = PORT_FIELDS.iter().chain(&ADDED_FIELDS).copied().collect();
            assert_eq!(ours_port.names(), expected, "{at}: fields; {context}");
            assert_eq!(
                ours_port.only(|n| PORT_FIELDS.contains(&n)),
                c_port.only(|n| PORT_FIELDS.contains(&n)),
                "{at}: shared fields differ (left: ibdevices, right: ibstat); {context}"
            );
            assert_width_times_speed_is_rate(&at, ours_port);
        }
    }
    c_devices.len()
}
