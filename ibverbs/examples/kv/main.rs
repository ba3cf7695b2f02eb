//! A key-value service over rdma_cm on tokio (features `tokio` and `cm`): get and put over
//! RDMA send/receive, values larger than [`proto::INLINE`] bytes moved by RDMA.
//!
//! ```text
//! kv server [-a ADDR] [-p PORT] [--clients N] [--requests N] [--timeout SECS]
//! kv client -a ADDR [-p PORT] [--connections N] [--depth D] [--max-value BYTES] [--timeout SECS]
//!
//!   -a ADDR          address to listen on (server, default 0.0.0.0) or to connect to
//!   -p PORT          port (default 7471)
//!   --clients N      the server shuts down once N connections were accepted and
//!   --requests N     N requests answered (default: never; Ctrl-C shuts it down too)
//!   --connections N  connections the client opens (default 1), all in one task
//!   --depth D        requests each connection keeps in flight (default 4, at most 16)
//!   --max-value B    the largest value the client puts (default 65536)
//!   --timeout SECS   the longest any single wait may take (default 10): a stalled peer
//!                    is an error, never a hang
//! ```
//!
//! The design, as RDMA services usually do it:
//! - The server exposes no memory. Each request names a region of the client's (address,
//!   rkey, length); the server RDMA-reads a large put's value from it and RDMA-writes a
//!   large get's value into it, then answers with a send, which on RC arrives after the
//!   write. The server decides when its memory is used, and a client can only give the
//!   server access to its own.
//! - Flow control by credits: the server keeps `MAX_DEPTH + 1` receives posted per
//!   connection and a client sends at most `--depth` requests before their answers (and
//!   one `Done`); the client keeps a receive posted for each answer it may get.
//! - One server task drives every connection (a `FuturesUnordered` of per-connection
//!   futures) on a current-thread runtime; every CQ waits on one completion channel.
//! - Shutdown: the server stops accepting (drops its listener), tells each connection
//!   `Shutdown`, answers every request up to the client's `Done`, then disconnects; the
//!   client checks that it was answered everything and that the server disconnected.
//!   Both sides then move their QP to error, wait for the flushes, and drop everything;
//!   each exits with status 1 if a destructor failed (`rdma_verbs::drop_error::count`).
//!
//! Each client owns its keys (process id, connection, slot, key); every get is checked,
//! byte for byte, against the last value put, or must be `NotFound` before the first put.
//! On the CM device of `scripts/with-rdma`:
//!
//! ```text
//! kv server -a 198.18.1.1 --clients 64 --requests 2000 &
//! kv client -a 198.18.1.1 --connections 64
//! ```

mod client;
mod proto;
mod server;

use std::cell::RefCell;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;

use rdma_verbs::cm::CmEventKind;
use rdma_verbs::tokio::cm::AsyncCmId;
use rdma_verbs::tokio::{AsyncCq, AsyncQp};
use rdma_verbs::{CompletionChannel, MemoryRegion, ProtectionDomain, QpType};

/// The example's errors: messages.
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// The options of both sides.
struct Options {
    addr: SocketAddr,
    clients: usize,
    requests: u64,
    connections: usize,
    depth: usize,
    max_value: usize,
    timeout: Duration,
}

fn usage(text: &str) -> Result<(bool, Options)> {
    Err(format!("{text}\nusage: kv server|client [-a ADDR] [-p PORT] [--clients N] [--requests N] [--connections N] [--depth D] [--max-value B] [--timeout SECS]").into())
}

/// Parses the command line: whether it is the server, and the options.
fn parse(args: &[String]) -> Result<(bool, Options)> {
    let server = match args.first().map(String::as_str) {
        Some("server") => true,
        Some("client") => false,
        _ => return usage("the first argument is server or client"),
    };
    let mut ip = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    let mut port = 7471;
    let mut o = Options {
        addr: SocketAddr::new(ip, port),
        clients: 0,
        requests: u64::MAX,
        connections: 1,
        depth: 4,
        max_value: proto::MAX_VALUE,
        timeout: Duration::from_secs(10),
    };
    let mut it = args[1..].iter();
    while let Some(flag) = it.next() {
        let Some(value) = it.next() else {
            return usage(&format!("{flag} needs a value"));
        };
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "-a" => ip = value.parse().map_err(|e| bad(&e))?,
            "-p" => port = value.parse().map_err(|e| bad(&e))?,
            "--clients" => o.clients = value.parse().map_err(|e| bad(&e))?,
            "--requests" => o.requests = value.parse().map_err(|e| bad(&e))?,
            "--connections" => o.connections = value.parse().map_err(|e| bad(&e))?,
            "--depth" => o.depth = value.parse().map_err(|e| bad(&e))?,
            "--max-value" => o.max_value = value.parse().map_err(|e| bad(&e))?,
            "--timeout" => o.timeout = Duration::from_secs(value.parse().map_err(|e| bad(&e))?),
            _ => return usage(&format!("unknown option {flag}")),
        }
    }
    if !(1..=proto::MAX_DEPTH).contains(&o.depth) || o.max_value > proto::MAX_VALUE {
        return usage("--depth is 1..=16 and --max-value at most 65536");
    }
    o.addr = SocketAddr::new(ip, port);
    Ok((server, o))
}

/// `fut` within `limit`; `what` names the wait in the error.
async fn within<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> Result<T> {
    tokio::time::timeout(limit, fut)
        .await
        .map_err(|_| format!("{what}: no answer within {limit:?}").into())
}

/// The PD and completion channel every connection of a process uses, made on the device
/// of the first id that has one.
struct Device {
    pd: ProtectionDomain,
    channel: CompletionChannel,
}

/// The process's [`Device`], once made.
#[derive(Default)]
struct Devices(RefCell<Option<Rc<Device>>>);

impl Devices {
    /// The device of `id` (bound or resolved), made the first time.
    fn get(&self, id: &AsyncCmId) -> Result<Rc<Device>> {
        if let Some(dev) = &*self.0.borrow() {
            return Ok(Rc::clone(dev));
        }
        let ctx = id.id().context()?;
        let dev = Rc::new(Device {
            pd: ctx.alloc_pd()?,
            channel: ctx.create_comp_channel()?,
        });
        *self.0.borrow_mut() = Some(Rc::clone(&dev));
        Ok(dev)
    }
}

/// Gives `id` an RC QP on a new CQ of `channel` (room for `recvs` receives and `sends`
/// sends), waiting on events only (no spinning: one task serves many CQs).
fn add_qp(
    id: &mut AsyncCmId,
    pd: &ProtectionDomain,
    channel: &CompletionChannel,
    sends: u32,
    recvs: u32,
) -> Result<AsyncCq> {
    let ctx = id.id().context()?;
    let cq = AsyncCq::new(ctx.create_cq(sends + recvs, Some(channel))?)?.with_spin(0);
    let qp = pd.create_qp(QpType::Rc, cq.cq(), cq.cq());
    id.create_qp(qp.max_send_wr(sends).max_recv_wr(recvs))?;
    Ok(cq)
}

/// Posts a receive of [`proto::MSG`] bytes into `mr`.
fn post_recv(qp: &AsyncQp, mr: MemoryRegion) -> Result<rdma_verbs::tokio::Op> {
    Ok(qp.recv(mr, ..proto::MSG)?)
}

/// Awaits the receive `op` (within `limit`): its region and the bytes it got.
async fn received(
    op: &mut rdma_verbs::tokio::Op,
    limit: Duration,
) -> Result<(MemoryRegion, Vec<u8>)> {
    let (mr, wc) = within(limit, "a message", op).await??;
    wc.ok()?;
    let mut bytes = vec![0; wc.byte_len() as usize];
    mr.read(0, &mut bytes)?;
    Ok((mr, bytes))
}

/// Sends `bytes` from `mr` and waits for the send's completion: gives the region back.
async fn send(
    qp: &AsyncQp,
    mut mr: MemoryRegion,
    bytes: &[u8],
    limit: Duration,
) -> Result<MemoryRegion> {
    mr.write(0, bytes)?;
    let (mr, wc) = within(limit, "a send", qp.send(mr, ..bytes.len())?).await??;
    wc.ok()?;
    Ok(mr)
}

/// After the connection's last message: waits for the id's `Disconnected` (answering the
/// peer's with `rdma_disconnect`, or `disconnect` first if `active`), moves the QP to
/// error and waits until every request is flushed.
async fn close(id: &AsyncCmId, qp: &AsyncQp, active: bool, limit: Duration) -> Result<()> {
    if active {
        within(limit, "rdma_disconnect", id.disconnect()).await??;
    } else {
        let event = within(limit, "the peer's disconnect", id.next_event()).await??;
        if !matches!(event.kind, CmEventKind::Disconnected) {
            return Err(format!("{} instead of a disconnect", event.kind.c_name()).into());
        }
        id.id().disconnect()?;
    }
    qp.to_error()?;
    within(limit, "the flushes", qp.settle()).await??;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = parse(&args).and_then(|(server, options)| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        if server {
            rt.block_on(server::run(&options))
        } else {
            rt.block_on(client::run(&options))
        }
    });
    // Everything (the runtime's registrations too) is dropped by now.
    let failed = rdma_verbs::drop_error::count();
    match result {
        Ok(()) if failed == 0 => ExitCode::SUCCESS,
        Ok(()) => {
            eprintln!("kv: {failed} destroy calls failed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("kv: {e}");
            ExitCode::FAILURE
        }
    }
}
