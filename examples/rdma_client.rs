//! `rdma_client`: the client of rdma-core's smallest rdma_cm example pair (librdmacm's
//! `rdma_client.c`, package rdmacm-utils), a work-alike: its options (`-s server_address`,
//! default `127.0.0.1`; `-p port_number`, default 7471), its output (`rdma_client: start`,
//! `rdma_client: end N`, and `perror`'s text on stderr for a failed step) and its exit
//! status (N's low byte), so that it runs against the C `rdma_server` and ours
//! (`examples/rdma_server.rs`).
//!
//! The exchange, over one RC connection in the TCP port space: the client posts a
//! receive of 16 bytes before it connects, sends 16 bytes (zeroes) once the connection is
//! up, waits for the send and then the server's 16 bytes to complete, and disconnects.
//! C runs `rdma_create_ep` on a synchronous id; here the id is on an event channel, and
//! each step waits for the event that ends it, as librdmacm does inside the synchronous
//! calls (`rdma_disconnect` too waits for the id's next event). As in C, the QP has one
//! send and one receive request of one entry each, 16 bytes of inline data and a
//! completion for every send; its two CQs each have a completion channel, on which the
//! waits for a completion sleep (`rdma_get_send_comp`, `rdma_get_recv_comp`); the send is
//! inline when the QP got 16 bytes of inline data. Unlike C, the send buffer is
//! registered even when it goes inline: this crate's entries always name a region.
//!
//! `cargo run --example rdma_client -- [-s server_address] [-p port_number]`

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use rdma_verbs::cm::{CmEventKind, EventChannel, PortSpace};
use rdma_verbs_tools::cli::{exit_code, strerror, verbs_error_text};

#[path = "common/rdma_pair.rs"]
mod pair;

use pair::{complete, lookup, null_conn_param, parse, Endpoint, Options};

/// What `rdma_create_ep` gives address and route resolution.
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

/// Waits for the event that ends a step on the client's one id.
fn wait(channel: &EventChannel, want: fn(&CmEventKind) -> bool) -> Result<(), String> {
    let event = channel.get_event().map_err(|e| verbs_error_text(&e))?;
    complete(&event, want).map_err(strerror)
}

/// `rdma_create_ep` of an active id: resolves the address and route, then creates the QP
/// ([`Endpoint::new`]); the id's channel comes with it.
fn create_ep(dst: SocketAddr) -> Result<(EventChannel, Endpoint), String> {
    let text = |e: rdma_verbs::Error| verbs_error_text(&e);
    let channel = EventChannel::new().map_err(text)?;
    let id = channel.create_id(PortSpace::Tcp).map_err(text)?;
    id.resolve_addr(None, dst, RESOLVE_TIMEOUT).map_err(text)?;
    wait(&channel, |k| matches!(k, CmEventKind::AddrResolved))?;
    id.resolve_route(RESOLVE_TIMEOUT).map_err(text)?;
    wait(&channel, |k| matches!(k, CmEventKind::RouteResolved))?;
    Ok((channel, Endpoint::new(id)?))
}

fn run(o: &Options) -> i32 {
    let dst = match lookup(o, false) {
        Ok(dst) => dst,
        Err(ret) => return ret,
    };
    let (channel, ep) = match dst
        .ok_or_else(|| strerror(libc::EINVAL))
        .and_then(create_ep)
    {
        Ok(ep) => ep,
        Err(e) => {
            eprintln!("rdma_create_ep: {e}");
            return -1;
        }
    };
    ep.with_messages("rdma_client", |send| {
        let connected = match ep.id.connect(&null_conn_param()) {
            Ok(()) => wait(&channel, |k| matches!(k, CmEventKind::Established { .. })),
            Err(e) => Err(verbs_error_text(&e)),
        };
        if let Err(e) = connected {
            eprintln!("rdma_connect: {e}");
            return -1;
        }
        let ret = match ep.send(send) {
            0 => ep.recv(),
            ret => ret,
        };
        // rdma_disconnect: its result is not looked at; it waits for the id's next event.
        if ep.id.disconnect().is_ok() {
            let _ = channel.get_event();
        }
        ret
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args, "rdma_client", "127.0.0.1") {
        Ok(o) => o,
        Err(code) => return code,
    };
    println!("rdma_client: start");
    let ret = run(&o);
    println!("rdma_client: end {ret}");
    exit_code(ret)
}
