//! `rdma_server`: the server of rdma-core's smallest rdma_cm example pair (librdmacm's
//! `rdma_server.c`, package rdmacm-utils), a work-alike: its options (`-s server_address`
//! to listen on, default `0.0.0.0`; `-p port_number`, default 7471), its output
//! (`rdma_server: start`, `rdma_server: end N`, and `perror`'s text on stderr for a failed
//! step) and its exit status (N's low byte), so that it runs against the C `rdma_client`
//! and ours (`examples/rdma_client.rs`).
//!
//! The exchange, over one RC connection in the TCP port space: the server takes the first
//! connect request, creates its QP, posts a receive of 16 bytes before it accepts, waits
//! for the client's 16 bytes, sends 16 bytes (zeroes) back, waits for the send to complete,
//! disconnects and exits. C runs `rdma_create_ep` and `rdma_get_request` on a synchronous
//! id; here the ids are on an event channel, and each step waits for the event that ends
//! it, as librdmacm does inside the synchronous calls (`rdma_accept` waits for the
//! connection, `rdma_disconnect` for the id's next event). As in C, the QP has one send and
//! one receive request of one entry each, 16 bytes of inline data and a completion for
//! every send; its two CQs each have a completion channel, on which the waits for a
//! completion sleep; the send is inline when the QP got 16 bytes of inline data. Unlike C,
//! the send buffer is registered even when it goes inline: this crate's entries always
//! name a region.
//!
//! `cargo run --example rdma_server -- [-s server_address] [-p port_number]`

use std::process::ExitCode;

use rdma_verbs::cm::{CmEvent, CmEventKind, CmId, EventChannel, IdHandle, PortSpace};
use rdma_verbs_tools::cli::{exit_code, strerror, verbs_error_text};

#[path = "common/rdma_pair.rs"]
mod pair;

use pair::{complete, failed, lookup, null_conn_param, parse, Endpoint, Options};

/// Waits for the next event of the id `of` (the listening id's events stay unread in C,
/// on a channel of their own: here they are dropped, a connect request with its new id).
fn next_event(channel: &EventChannel, of: IdHandle) -> Result<CmEvent, String> {
    loop {
        let event = channel.get_event().map_err(|e| verbs_error_text(&e))?;
        if event.id == of {
            return Ok(event);
        }
    }
}

/// `rdma_get_request`: the next connect request on `listen`, with its QP
/// ([`Endpoint::new`]).
fn get_request(channel: &EventChannel, listen: &CmId) -> Result<Endpoint, String> {
    let event = next_event(channel, listen.handle())?;
    complete(&event, |k| matches!(k, CmEventKind::ConnectRequest { .. })).map_err(strerror)?;
    let CmEventKind::ConnectRequest { id, .. } = event.kind else {
        unreachable!("complete checked the kind")
    };
    Endpoint::new(id)
}

/// Accepts the connection of `ep`, then exchanges the messages and disconnects.
fn serve(channel: &EventChannel, ep: &Endpoint) -> i32 {
    ep.with_messages("rdma_server", |send| {
        let established = |e: &CmEvent| {
            complete(e, |k| matches!(k, CmEventKind::Established { .. })).map_err(strerror)
        };
        let accepted = match ep.id.accept(&null_conn_param()) {
            Ok(()) => next_event(channel, ep.id.handle()).and_then(|e| established(&e)),
            Err(e) => Err(verbs_error_text(&e)),
        };
        if let Err(e) = accepted {
            eprintln!("rdma_accept: {e}");
            return -1;
        }
        let ret = match ep.recv() {
            0 => ep.send(send),
            ret => ret,
        };
        // rdma_disconnect: its result is not looked at; it waits for the id's next event.
        if ep.id.disconnect().is_ok() {
            let _ = next_event(channel, ep.id.handle());
        }
        ret
    })
}

fn run(o: &Options) -> i32 {
    let src = match lookup(o, true) {
        Ok(src) => src,
        Err(ret) => return ret,
    };
    // rdma_create_ep of a passive id: created and bound.
    let bound = src.ok_or_else(|| strerror(libc::EINVAL)).and_then(|src| {
        let channel = EventChannel::new().map_err(|e| verbs_error_text(&e))?;
        let listen = channel
            .create_id(PortSpace::Tcp)
            .map_err(|e| verbs_error_text(&e))?;
        listen.bind(src).map_err(|e| verbs_error_text(&e))?;
        Ok((channel, listen))
    });
    let (channel, listen) = match bound {
        Ok(bound) => bound,
        Err(e) => {
            eprintln!("rdma_create_ep: {e}");
            return -1;
        }
    };
    if let Err(e) = listen.listen(0) {
        return failed("rdma_listen", &e);
    }
    match get_request(&channel, &listen) {
        Ok(ep) => serve(&channel, &ep),
        Err(e) => {
            eprintln!("rdma_get_request: {e}");
            -1
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args, "rdma_server", "0.0.0.0") {
        Ok(o) => o,
        Err(code) => return code,
    };
    println!("rdma_server: start");
    let ret = run(&o);
    println!("rdma_server: end {ret}");
    exit_code(ret)
}
