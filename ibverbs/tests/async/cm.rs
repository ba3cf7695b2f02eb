//! rdma_cm as futures (`ibverbs::tokio::cm`) on the CM device: connect and accept through
//! a listener stream with private data both ways, then disconnect; a connect nobody
//! listens for is refused; a connect future dropped mid-handshake and a dropped request
//! leave the listener serving the next client.

use std::net::SocketAddr;
use std::time::Duration;

use futures_core::Stream;
use ibverbs::cm::{CmEventKind, ConnParam, PortSpace};
use ibverbs::tokio::cm::{AsyncCmChannel, AsyncCmId, ConnectRequest, Listener};
use ibverbs::ProtectionDomain;
use ibverbs_test_kit::{assert_clean_drops, cm_addr};
use tokio::time::timeout;

use crate::common::LIMIT;

/// How long address and route resolution may take.
const RESOLVE: Duration = Duration::from_secs(2);

/// A PD and an RC QP (on a CQ of its own) for `id`, on its device.
fn add_qp(id: &mut AsyncCmId) -> ProtectionDomain {
    let ctx = id.id().context().unwrap();
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(8, None).unwrap());
    let caps = ibverbs::ffi::ibv_qp_cap {
        max_send_wr: 4,
        max_recv_wr: 4,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    id.id_mut().create_qp(&pd, &cq, &cq, caps).unwrap();
    pd
}

/// A client id resolved to `dst`, with a QP.
async fn client(channel: &AsyncCmChannel, dst: SocketAddr) -> (AsyncCmId, ProtectionDomain) {
    let mut id = channel.create_id(PortSpace::Tcp).unwrap();
    timeout(LIMIT, id.resolve(None, dst, RESOLVE))
        .await
        .expect("resolved in time")
        .unwrap();
    let pd = add_qp(&mut id);
    (id, pd)
}

/// The listener's next connect request, within [`LIMIT`].
async fn next_request(listener: &mut Listener) -> ConnectRequest {
    let mut listener = std::pin::Pin::new(listener);
    let next = std::future::poll_fn(|cx| listener.as_mut().poll_next(cx));
    let item = timeout(LIMIT, next).await.expect("a request in time");
    item.expect("the listener does not end").unwrap()
}

/// `data` zero-padded to `len` (the CM sends whole private-data fields).
fn padded(data: &[u8], len: usize) -> Vec<u8> {
    let mut v = data.to_vec();
    v.resize(len, 0);
    v
}

#[tokio::test]
async fn connect_accept_and_disconnect() {
    let channel = AsyncCmChannel::new().unwrap();
    let mut listener = channel.listen(SocketAddr::new(cm_addr(), 0), 4).unwrap();
    let dst = listener.local_addr().unwrap();
    let connect = async {
        let (id, pd) = client(&channel, dst).await;
        let param = ConnParam {
            private_data: b"hi",
            ..ConnParam::default()
        };
        (id.connect(&param).await.unwrap(), pd)
    };
    let accept = async {
        let mut request = next_request(&mut listener).await;
        assert_eq!(request.private_data, padded(b"hi", 56));
        let pd = add_qp(&mut request.id);
        let param = ConnParam {
            private_data: b"welcome",
            ..ConnParam::default()
        };
        (request.accept(&param).await.unwrap(), pd)
    };
    let ((connected, client_pd), (server, server_pd)) =
        timeout(LIMIT, async { tokio::join!(connect, accept) })
            .await
            .expect("connected in time");
    assert_eq!(connected.private_data, padded(b"welcome", 196));
    assert_eq!(
        connected.id.id().peer_addr(),
        server.id().local_addr(),
        "connected to the listener's address"
    );
    // The client disconnects; the server answers its Disconnected.
    let passive = async {
        let event = server.next_event().await.unwrap();
        assert!(matches!(event.kind, CmEventKind::Disconnected), "{event:?}");
        server.id().disconnect().unwrap();
    };
    let ((), done) = timeout(LIMIT, async {
        tokio::join!(passive, connected.id.disconnect())
    })
    .await
    .expect("disconnected in time");
    done.unwrap();
    drop((connected, server, client_pd, server_pd, listener, channel));
    assert_clean_drops();
}

#[tokio::test]
async fn a_connect_nobody_listens_for_is_refused() {
    let channel = AsyncCmChannel::new().unwrap();
    // A port of a listener that is gone.
    let dst = channel
        .listen(SocketAddr::new(cm_addr(), 0), 1)
        .unwrap()
        .local_addr()
        .unwrap();
    let (id, pd) = client(&channel, dst).await;
    let refused = timeout(LIMIT, id.connect(&ConnParam::default()))
        .await
        .expect("an answer in time")
        .unwrap_err();
    let ibverbs::Error::Verb { source, .. } = &refused else {
        panic!("not a refusal: {refused:?}");
    };
    assert_eq!(
        source.kind(),
        std::io::ErrorKind::ConnectionRefused,
        "{refused}"
    );
    drop((pd, channel));
    assert_clean_drops();
}

/// A connect future polled once (the request is sent) and dropped destroys its id; the
/// listener drops that request and still serves the next client.
#[tokio::test]
async fn a_dropped_connect_and_a_dropped_request_leave_the_listener_serving() {
    let channel = AsyncCmChannel::new().unwrap();
    let mut listener = channel.listen(SocketAddr::new(cm_addr(), 0), 4).unwrap();
    let dst = listener.local_addr().unwrap();
    let (first, first_pd) = client(&channel, dst).await;
    let param = ConnParam {
        private_data: b"first",
        ..ConnParam::default()
    };
    let mut dropped = Box::pin(first.connect(&param));
    let polled = std::future::poll_fn(|cx| {
        std::task::Poll::Ready(std::future::Future::poll(dropped.as_mut(), cx))
    })
    .await;
    assert!(polled.is_pending(), "not connected without an accept");
    drop(dropped);
    drop(first_pd);

    let (second, second_pd) = client(&channel, dst).await;
    let param = ConnParam {
        private_data: b"second",
        ..ConnParam::default()
    };
    let connect = async { second.connect(&param).await.unwrap() };
    let accept = async {
        loop {
            let mut request = next_request(&mut listener).await;
            if request.private_data == padded(b"first", 56) {
                continue; // dropped: its id is destroyed
            }
            assert_eq!(request.private_data, padded(b"second", 56));
            let pd = add_qp(&mut request.id);
            break (request.accept(&ConnParam::default()).await.unwrap(), pd);
        }
    };
    let (connected, (server, server_pd)) = timeout(LIMIT, async { tokio::join!(connect, accept) })
        .await
        .expect("the second client connected in time");
    assert_eq!(connected.id.id().peer_addr(), server.id().local_addr());
    drop((connected, server, second_pd, server_pd, listener, channel));
    assert_clean_drops();
}
