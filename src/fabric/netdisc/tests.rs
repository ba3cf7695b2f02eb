//! The cache file reader against hostile files (never a panic; a C tool's file read and
//! written again is the same), and the discovery against hostile subnets: answers of random bytes (NodeInfo's GUIDs drawn
//! from a few, so that nodes meet again through loops) must never make it panic, loop
//! forever or leave a one-sided link. (Its output on real topologies is compared with the
//! C tool's on the simulator, in tests/fabric.rs.)

use proptest::prelude::*;

use super::smi::QueryError;
use super::*;
use crate::fuzz::config;

/// A subnet where every node answers anything: `seed` drives the bytes, `guids` bounds
/// the node GUIDs, `budget` the SMPs answered (then every query times out).
struct Hostile {
    seed: u64,
    guids: u64,
    budget: u32,
    /// The answers to the SMPs in flight, oldest first.
    answers: std::collections::VecDeque<Result<[u8; 64], QueryError>>,
}

impl Hostile {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.seed ^= self.seed >> 12;
        self.seed ^= self.seed << 25;
        self.seed ^= self.seed >> 27;
        self.seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

impl Smi for Hostile {
    fn send(&mut self, path: &[u8], attr: u16, modifier: u32) {
        let answer = self.get(path, attr, modifier);
        self.answers.push_back(answer);
    }

    fn answer(&mut self) -> Result<[u8; 64], QueryError> {
        self.answers.pop_front().unwrap_or(Err(QueryError::Timeout))
    }
}

impl Hostile {
    fn get(&mut self, _path: &[u8], attr: u16, _modifier: u32) -> Result<[u8; 64], QueryError> {
        if self.budget == 0 {
            return Err(QueryError::Timeout);
        }
        self.budget -= 1;
        let mut data = [0u8; 64];
        for chunk in data.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_be_bytes());
        }
        match self.next() % 8 {
            0 => return Err(QueryError::Status(0x1c)),
            1 => return Err(QueryError::Timeout),
            _ => {}
        }
        if attr == NodeInfo::ATTR_ID {
            let guid = self.next() % self.guids.max(1);
            data[12..20].copy_from_slice(&guid.to_be_bytes());
            // Mostly switches with few ports, entered by one of them, so that the walk
            // goes on.
            if self.next() % 4 != 0 {
                data[2] = NODE_SWITCH;
                data[3] = 1 + data[3] % 12;
                data[36] = 1 + data[36] % data[3];
            }
        }
        if attr == PortInfo::ATTR_ID && self.next() % 2 == 0 {
            data[33] = (data[33] & 0x0f) | (LINK_UP << 4); // PortPhysicalState LinkUp
        }
        Ok(data)
    }
}

/// Every port is within its node, where its number says.
fn check_ports(fabric: &Fabric) {
    for node in &fabric.nodes {
        assert_eq!(node.ports.len(), usize::from(node.info.num_ports) + 1);
        for (num, port) in node.ports.iter().enumerate() {
            if let Some(port) = port {
                assert_eq!(usize::from(port.num), num);
            }
        }
    }
}

/// [`check_ports`], and every link is seen from both ends.
fn check(fabric: &Fabric) {
    check_ports(fabric);
    for (n, node) in fabric.nodes.iter().enumerate() {
        for port in node.ports.iter().flatten() {
            if let Some((rn, rp)) = port.remote {
                let back = fabric.nodes[rn].port(rp).and_then(|p| p.remote);
                assert_eq!(back, Some((n, port.num)), "one-sided link");
            }
        }
    }
}

#[test]
fn a_port_beyond_the_node_is_refused() {
    // The local node says it has 1 port and that the SMP came in by port 9.
    struct Liar;
    impl Smi for Liar {
        fn send(&mut self, _: &[u8], _: u16, _: u32) {}

        fn answer(&mut self) -> Result<[u8; 64], QueryError> {
            let info = NodeInfo {
                node_type: NODE_CA,
                num_ports: 1,
                node_guid: 7,
                local_port_num: 9,
                ..NodeInfo::default()
            };
            let mut data = [0; 64];
            data.copy_from_slice(&info.encode());
            Ok(data)
        }
    }
    let mut out = Output::new();
    assert!(discover(&mut Liar, false, &mut out).is_none());
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn hostile_answers_end_cleanly(seed in 1u64.., guids in 1u64..40, budget in 0u32..3000) {
        let mut smi = Hostile {
            seed,
            guids,
            budget,
            answers: std::collections::VecDeque::new(),
        };
        let mut out = Output::new();
        if let Some(fabric) = discover(&mut smi, true, &mut out) {
            check(&fabric);
            prop_assert!(fabric.nodes.len() as u64 <= guids);
            prop_assert!(fabric.max_hops <= MAX_HOPS as u32);
        }
    }
}

/// The C tool's cache files of the shipped topologies.
const FIXTURES: [&[u8]; 2] = [
    include_bytes!("../../../tests/data/ibnetdiscover-simple.cache"),
    include_bytes!("../../../tests/data/ibnetdiscover-fabric.cache"),
];

#[test]
fn a_cache_read_and_written_again_is_the_same() {
    for bytes in FIXTURES {
        let fabric = cache::load(bytes).expect("the C tool's cache file");
        assert!(fabric.from.is_some());
        check(&fabric);
        // Ports enter the table in node order when loaded: same ports, maybe in another
        // order; loaded again, the same fabric.
        let again = cache::write(&fabric);
        assert_eq!(again.len(), bytes.len());
        assert_eq!(again[..28], bytes[..28]);
        let twice = cache::write(&cache::load(&again).expect("our cache file"));
        assert_eq!(twice, again);
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn cache_reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        if let Ok(fabric) = cache::load(&bytes) {
            check_ports(&fabric);
        }
    }

    #[test]
    fn damaged_caches_never_panic(which in 0usize..2, at in any::<prop::sample::Index>(), value in any::<u8>(), cut in any::<prop::sample::Index>()) {
        let mut bytes = FIXTURES[which].to_vec();
        let i = at.index(bytes.len());
        bytes[i] = value;
        bytes.truncate(cut.index(bytes.len() + 1).max(i));
        if let Ok(fabric) = cache::load(&bytes) {
            check_ports(&fabric);
        }
    }
}
