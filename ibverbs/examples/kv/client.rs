//! The client: `--connections` connections in one task, each keeping `--depth` requests in
//! flight, one per slot; each slot owns its keys and checks every answer.

use std::collections::VecDeque;
use std::ops::AddAssign;

use futures_util::stream::{FuturesUnordered, StreamExt};
use rdma_verbs::cm::{ConnParam, PortSpace};
use rdma_verbs::tokio::cm::AsyncCmChannel;
use rdma_verbs::{AccessFlags, MemoryRegion, ProtectionDomain};

use crate::proto::{Op, Request, Response, Status, INLINE, MSG};
use crate::{add_qp, close, post_recv, received, send, within, Devices, Options, Result};

/// Keys per slot.
const KEYS: u64 = 2;
/// The value sizes a put picks from (those up to `--max-value`): around [`INLINE`], and
/// larger ones moved by RDMA.
const SIZES: [usize; 11] = [0, 1, 7, 64, 255, 256, 257, 1000, 4096, 20000, 65536];

/// What a client did.
#[derive(Default)]
struct Counts {
    puts: u64,
    gets: u64,
    not_found: u64,
    checked: u64,
}

impl AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.puts += o.puts;
        self.gets += o.gets;
        self.not_found += o.not_found;
        self.checked += o.checked;
    }
}

/// Runs every connection until the server shuts down and disconnects it.
pub async fn run(o: &Options) -> Result<()> {
    let cm = AsyncCmChannel::new()?;
    let devices = Devices::default();
    let mut conns: FuturesUnordered<_> = (0..o.connections)
        .map(|n| connection(&cm, &devices, o, n))
        .collect();
    let mut total = Counts::default();
    while let Some(done) = conns.next().await {
        total += done?;
    }
    println!(
        "client: connections {} puts {} gets {} not_found {} checked {} (each closed by the server)",
        o.connections, total.puts, total.gets, total.not_found, total.checked
    );
    Ok(())
}

/// A mixing function (splitmix64's finalizer).
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// One request at a time, over the slot's keys: get a key (the last value put, or not
/// found), then put a new value to it, then the next key.
struct Slot {
    /// The key's prefix: process, connection, slot.
    name: String,
    /// The version last put to each key.
    known: Vec<Option<u64>>,
    step: u64,
    max_value: usize,
    /// The region the server reads large puts from and writes large gets into.
    region: MemoryRegion,
}

impl Slot {
    fn new(pd: &ProtectionDomain, name: String, max_value: usize) -> Result<Slot> {
        let access =
            AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE;
        Ok(Slot {
            name,
            known: vec![None; KEYS as usize],
            step: 0,
            max_value,
            region: pd.alloc_mr(max_value.max(1), access)?,
        })
    }

    fn key(&self) -> (usize, Vec<u8>) {
        let k = (self.step / 2) % KEYS;
        (k as usize, format!("{}/{k}", self.name).into_bytes())
    }

    /// The value of `version` of key `k`.
    fn value(&self, k: usize, version: u64) -> Vec<u8> {
        let name = self.name.bytes().fold(0, |h, b| mix(h ^ u64::from(b)));
        let seed = mix(version ^ mix(k as u64 ^ name));
        let sizes: Vec<usize> = SIZES.into_iter().filter(|&s| s <= self.max_value).collect();
        let len = sizes[(seed % sizes.len() as u64) as usize];
        (0..len).map(|i| mix(seed ^ i as u64) as u8).collect()
    }

    /// The slot's next request (tagged `tag`), its large value placed in the region.
    fn request(&mut self, tag: u32) -> Result<Request> {
        let (k, key) = self.key();
        let mut request = Request {
            op: Op::Get,
            tag,
            key,
            len: 0,
            region: self.region.remote(),
            inline: Vec::new(),
        };
        if self.step % 2 == 1 {
            let value = self.value(k, self.step);
            request.op = Op::Put;
            request.len = value.len();
            if value.len() <= INLINE {
                request.inline = value;
            } else {
                self.region.write(0, &value)?;
            }
        }
        Ok(request)
    }

    /// Checks the answer to the slot's request and moves on.
    fn check(&mut self, response: &Response, counts: &mut Counts) -> Result<()> {
        let (k, key) = self.key();
        let key = String::from_utf8_lossy(&key);
        let bad = |what: &str| format!("{key}: {what}: {response:?}");
        if self.step % 2 == 1 {
            if response.status != Status::Ok {
                return Err(bad("the put failed").into());
            }
            self.known[k] = Some(self.step);
            counts.puts += 1;
        } else {
            counts.gets += 1;
            match (self.known[k], response.status) {
                (None, Status::NotFound) => counts.not_found += 1,
                (Some(version), Status::Ok) => {
                    let want = self.value(k, version);
                    let got = if response.len <= INLINE {
                        response.inline.clone()
                    } else {
                        let mut got = vec![0; response.len];
                        self.region.read(0, &mut got).map_err(|_| bad("too long"))?;
                        got
                    };
                    if got != want {
                        return Err(bad(&format!("not version {version}")).into());
                    }
                    counts.checked += got.len() as u64;
                }
                _ => return Err(bad("the wrong answer").into()),
            }
        }
        self.step += 1;
        Ok(())
    }
}

/// One connection: requests until the server says `Shutdown`, then `Done`, the answers
/// still due, and the server's disconnect.
async fn connection(
    cm: &AsyncCmChannel,
    devices: &Devices,
    o: &Options,
    n: usize,
) -> Result<Counts> {
    let limit = o.timeout;
    let mut id = cm.create_id(PortSpace::Tcp)?;
    within(limit, "resolving", id.resolve(None, o.addr, limit)).await??;
    let dev = devices.get(&id)?;
    let depth = o.depth;
    let cq = add_qp(&mut id, &dev.pd, &dev.channel, 2, depth as u32 + 1)?;
    // A receive for each answer in flight and for the server's Shutdown, posted before
    // the connection is up (iWARP has no receiver-not-ready retry).
    let qp = id.async_qp(cq)?;
    let mut posted = VecDeque::new();
    for _ in 0..=depth {
        posted.push_back(post_recv(
            &qp,
            dev.pd.alloc_mr(MSG, AccessFlags::LOCAL_WRITE)?,
        )?);
    }
    let param = ConnParam::new();
    let id = within(limit, "rdma_connect", id.connect(&param)).await??.id;
    let mut send_mr = dev.pd.alloc_mr(MSG, AccessFlags::LOCAL_WRITE)?;
    let mut slots = Vec::new();
    for s in 0..depth {
        let name = format!("{}/{n}/{s}", std::process::id());
        slots.push(Slot::new(&dev.pd, name, o.max_value)?);
    }
    for (tag, slot) in slots.iter_mut().enumerate() {
        let request = slot.request(tag as u32)?;
        send_mr = send(&qp, send_mr, &request.encode(), limit).await?;
    }
    let mut counts = Counts::default();
    let (mut outstanding, mut stopping) = (depth, false);
    while outstanding > 0 || !stopping {
        let next = posted.front_mut().expect("receives stay posted");
        let (mr, bytes) = received(next, limit).await?;
        posted.pop_front();
        posted.push_back(post_recv(&qp, mr)?);
        let response = Response::decode(&bytes)?;
        if response.status == Status::Shutdown {
            if stopping {
                return Err("Shutdown twice".into());
            }
            stopping = true;
            let done = Request {
                op: Op::Done,
                tag: 0,
                key: Vec::new(),
                len: 0,
                region: slots[0].region.remote(),
                inline: Vec::new(),
            };
            send_mr = send(&qp, send_mr, &done.encode(), limit).await?;
            continue;
        }
        let slot = slots
            .get_mut(response.tag as usize)
            .ok_or_else(|| format!("an answer to tag {}", response.tag))?;
        slot.check(&response, &mut counts)?;
        outstanding -= 1;
        if !stopping {
            let request = slot.request(response.tag)?;
            send_mr = send(&qp, send_mr, &request.encode(), limit).await?;
            outstanding += 1;
        }
    }
    close(&id, &qp, false, limit).await?;
    Ok(counts)
}
