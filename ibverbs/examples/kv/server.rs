//! The server: one task; every connection is a future in a `FuturesUnordered` it polls.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::pin::pin;

use futures_util::stream::{FuturesUnordered, StreamExt};
use rdma_verbs::cm::ConnParam;
use rdma_verbs::tokio::cm::{AsyncCmChannel, ConnectRequest, Listener};
use rdma_verbs::tokio::AsyncQp;
use rdma_verbs::{AccessFlags, MemoryRegion};
use tokio::sync::watch;

use crate::proto::{Op, Request, Response, Status, INLINE, MAX_DEPTH, MAX_VALUE, MSG};
use crate::{add_qp, close, post_recv, received, send, within, Devices, Options, Result};

/// What the connections share.
struct Server<'o> {
    options: &'o Options,
    devices: Devices,
    store: RefCell<HashMap<Vec<u8>, Vec<u8>>>,
    accepted: Cell<usize>,
    served: Cell<u64>,
    /// Set to shut down: the listener goes, each connection tells its client.
    stop: watch::Sender<bool>,
}

/// Serves until shut down (after `--clients` connections and `--requests` answers, or on
/// Ctrl-C) and every connection has closed.
pub async fn run(o: &Options) -> Result<()> {
    let cm = AsyncCmChannel::new()?;
    let mut listener = Some(cm.listen(o.addr, 128)?);
    let (stop, mut stopped) = watch::channel(false);
    let server = Server {
        options: o,
        devices: Devices::default(),
        store: RefCell::default(),
        accepted: Cell::new(0),
        served: Cell::new(0),
        stop,
    };
    let mut conns = FuturesUnordered::new();
    let mut ctrl_c = pin!(tokio::signal::ctrl_c());
    let mut interrupted = false;
    loop {
        if listener.is_none() && conns.is_empty() {
            break;
        }
        tokio::select! {
            request = next_request(&mut listener), if listener.is_some() => {
                conns.push(server.serve(request?));
            }
            Some(done) = conns.next(), if !conns.is_empty() => done?,
            _ = stopped.wait_for(|s| *s), if listener.is_some() => {
                listener = None; // stops accepting: requests not yet taken are rejected
            }
            _ = &mut ctrl_c, if !interrupted => {
                interrupted = true;
                server.stop.send_replace(true);
            }
            // Connections bound their own waits; with none, the wait for one is bounded.
            _ = tokio::time::sleep(o.timeout), if conns.is_empty() => {
                return Err(format!("no connection within {:?}", o.timeout).into());
            }
        }
    }
    println!(
        "server: requests {} connections {} keys {}",
        server.served.get(),
        server.accepted.get(),
        server.store.borrow().len()
    );
    Ok(())
}

/// The listener's next connect request (never, once there is no listener).
async fn next_request(listener: &mut Option<Listener>) -> Result<ConnectRequest> {
    match listener {
        Some(listener) => Ok(listener.next().await.ok_or("the listener ended")??),
        None => std::future::pending().await,
    }
}

impl Server<'_> {
    /// Shuts down once enough connections were accepted and requests answered.
    fn check_stop(&self) {
        let o = self.options;
        if self.accepted.get() >= o.clients && self.served.get() >= o.requests {
            self.stop.send_replace(true);
        }
    }

    /// Accepts `request` and serves the connection until its client's `Done`, then
    /// disconnects.
    async fn serve(&self, mut request: ConnectRequest) -> Result<()> {
        let limit = self.options.timeout;
        let dev = self.devices.get(&request.id)?;
        let recvs = MAX_DEPTH + 1;
        let cq = add_qp(&mut request.id, &dev.pd, &dev.channel, 2, recvs as u32)?;
        // The receives are posted before the accept: the client sends as soon as it is
        // connected, and iWARP has no receiver-not-ready retry (a send that finds no
        // receive ends the connection).
        let qp = request.id.async_qp(cq)?;
        let mut posted = VecDeque::new();
        for _ in 0..recvs {
            posted.push_back(post_recv(
                &qp,
                dev.pd.alloc_mr(MSG, AccessFlags::LOCAL_WRITE)?,
            )?);
        }
        let param = ConnParam::new();
        let id = within(limit, "rdma_accept", request.accept(&param)).await??;
        self.accepted.set(self.accepted.get() + 1);
        self.check_stop();

        let mut stop = self.stop.subscribe();
        let mut told = false;
        let mut send_mr = dev.pd.alloc_mr(MSG, AccessFlags::LOCAL_WRITE)?;
        // The sink of the RDMA reads of puts: iWARP writes a read's response into it as a
        // remote write would, so it has remote write access.
        let stage_access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
        let mut stage = dev.pd.alloc_mr(MAX_VALUE, stage_access)?;
        loop {
            let next = posted.front_mut().expect("receives stay posted");
            let (mr, bytes) = tokio::select! {
                got = received(next, limit) => got?,
                _ = stop.wait_for(|s| *s), if !told => {
                    told = true;
                    let bye = Response::new(Status::Shutdown, 0);
                    send_mr = send(&qp, send_mr, &bye.encode(), limit).await?;
                    continue;
                }
            };
            posted.pop_front();
            // Reposted before the answer goes, which gives the client its credit back.
            posted.push_back(post_recv(&qp, mr)?);
            let request = Request::decode(&bytes)?;
            if request.op == Op::Done {
                if !told {
                    return Err("a client sent Done unasked".into());
                }
                break;
            }
            let (back, response) = self.answer(&qp, &request, stage).await?;
            stage = back;
            send_mr = send(&qp, send_mr, &response.encode(), limit).await?;
            self.served.set(self.served.get() + 1);
            self.check_stop();
        }
        close(&id, &qp, true, limit).await
    }

    /// Carries out `request`, moving a large value through `stage` by RDMA; gives the
    /// region back with the answer.
    async fn answer(
        &self,
        qp: &AsyncQp,
        request: &Request,
        stage: MemoryRegion,
    ) -> Result<(MemoryRegion, Response)> {
        let limit = self.options.timeout;
        let invalid = Response::new(Status::Invalid, request.tag);
        match request.op {
            Op::Put if request.len > MAX_VALUE => Ok((stage, invalid)),
            Op::Put => {
                let (stage, value) = if request.len <= INLINE {
                    (stage, request.inline.clone())
                } else {
                    let Ok(remote) = request.region.slice(0, request.len as u64) else {
                        return Ok((stage, invalid));
                    };
                    let read = qp.read(stage, ..request.len, remote)?;
                    let (stage, wc) = within(limit, "an RDMA read", read).await??;
                    wc.ok()?;
                    let mut value = vec![0; request.len];
                    stage.read(0, &mut value)?;
                    (stage, value)
                };
                self.store.borrow_mut().insert(request.key.clone(), value);
                Ok((stage, Response::new(Status::Ok, request.tag)))
            }
            Op::Get => {
                let Some(value) = self.store.borrow().get(&request.key).cloned() else {
                    return Ok((stage, Response::new(Status::NotFound, request.tag)));
                };
                let mut response = Response::new(Status::Ok, request.tag);
                response.len = value.len();
                if value.len() <= INLINE {
                    response.inline = value;
                    return Ok((stage, response));
                }
                let Ok(remote) = request.region.slice(0, value.len() as u64) else {
                    return Ok((stage, invalid));
                };
                let mut stage = stage;
                stage.write(0, &value)?;
                let write = qp.write(stage, ..value.len(), remote)?;
                let (stage, wc) = within(limit, "an RDMA write", write).await??;
                wc.ok()?;
                Ok((stage, response))
            }
            Op::Done => unreachable!("handled by serve"),
        }
    }
}
