//! rdma_cm as futures (`rdma_verbs::tokio::cm`) on the CM device: connect and accept through
//! a listener stream with private data both ways, then disconnect; a connect nobody
//! listens for is refused, one the server rejects fails with its private data; a connect
//! future dropped mid-handshake and a dropped request
//! leave the listener serving the next client; a connected id's QP taken into an `AsyncQp`;
//! UD multicast joins (a cancelled one, one whose QP receives through an `AsyncQp`).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use futures_core::Stream;
use rdma_verbs::cm::{CmEventKind, ConnParam, IbAddr, PortSpace};
use rdma_verbs::tokio::cm::{AsyncCmChannel, AsyncCmId, ConnectRequest, Listener};
use rdma_verbs::tokio::{AsyncCq, AsyncQp};
use rdma_verbs::{ProtectionDomain, QpType};
use rdma_verbs_test_kit::{
    assert_clean_drops, cm_addr, delivered_private_data, peer_reject_reason, provider,
    provider_has, Need, Provider,
};
use tokio::time::timeout;

use crate::common::LIMIT;

/// How long address and route resolution may take.
const RESOLVE: Duration = Duration::from_secs(2);

/// A PD and an RC QP (on a CQ of its own) for `id`, on its device.
fn add_qp(id: &mut AsyncCmId) -> ProtectionDomain {
    let ctx = id.id().context().unwrap();
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(8, None).unwrap());
    let qp = pd.create_qp(QpType::Rc, &cq, &cq);
    id.create_qp(qp.max_send_wr(4).max_recv_wr(4)).unwrap();
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

#[tokio::test]
async fn connect_accept_and_disconnect() {
    let channel = AsyncCmChannel::new().unwrap();
    let mut listener = channel.listen(SocketAddr::new(cm_addr(), 0), 4).unwrap();
    let dst = listener.local_addr().unwrap();
    let connect = async {
        let (id, pd) = client(&channel, dst).await;
        let param = ConnParam::new().private_data(b"hi");
        (id.connect(&param).await.unwrap(), pd)
    };
    let accept = async {
        let mut request = next_request(&mut listener).await;
        assert_eq!(request.private_data, delivered_private_data(b"hi", 56));
        let pd = add_qp(&mut request.id);
        let param = ConnParam::new().private_data(b"welcome");
        (request.accept(&param).await.unwrap(), pd)
    };
    let ((connected, client_pd), (server, server_pd)) =
        timeout(LIMIT, async { tokio::join!(connect, accept) })
            .await
            .expect("connected in time");
    assert_eq!(
        connected.private_data,
        delivered_private_data(b"welcome", 196)
    );
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
    let refused = timeout(LIMIT, id.connect(&ConnParam::new()))
        .await
        .expect("an answer in time")
        .unwrap_err();
    if provider() == Provider::Siw {
        // iWARP's connect is a TCP connect, refused at once by the peer's stack.
        assert_eq!(
            refused.raw_os_error(),
            Some(libc::ECONNREFUSED),
            "{refused}"
        );
        drop((pd, channel));
        assert_clean_drops();
        return;
    }
    assert!(
        matches!(
            &refused,
            rdma_verbs::Error::Rejected {
                verb: "rdma_connect",
                reason: 8,
                ..
            }
        ),
        "not a refusal: {refused:?}"
    );
    assert_eq!(refused.raw_os_error(), Some(libc::ECONNREFUSED));
    drop((pd, channel));
    assert_clean_drops();
}

/// AF_IB on tokio: the address of a RoCE port resolves by GID, and its route, which only
/// InfiniBand has, fails the resolve future with the kernel's `ENODEV`.
#[tokio::test]
async fn an_af_ib_resolve_ends_at_the_route_on_roce() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let gid = rdma_verbs_test_kit::open_cm().gid_table(1).unwrap()[0].gid;
    let channel = AsyncCmChannel::new().unwrap();
    let mut id = channel.create_id(PortSpace::Ib).unwrap();
    let dst = IbAddr::new(gid, PortSpace::Ib, 7471);
    let err = timeout(LIMIT, id.resolve_ib(None, &dst, RESOLVE))
        .await
        .expect("an answer in time")
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENODEV), "{err}");
    assert_eq!(id.id().peer_ib_addr(), Some(dst));
    drop((id, channel));
    assert_clean_drops();
}

/// A request the server rejects with private data fails the connect with
/// `Error::Rejected` carrying those bytes.
#[tokio::test]
async fn a_rejected_connect_carries_the_peers_private_data() {
    let channel = AsyncCmChannel::new().unwrap();
    let mut listener = channel.listen(SocketAddr::new(cm_addr(), 0), 4).unwrap();
    let dst = listener.local_addr().unwrap();
    let (id, pd) = client(&channel, dst).await;
    let reject = async {
        let request = next_request(&mut listener).await;
        request.reject(b"come back later").unwrap();
    };
    let param = ConnParam::new();
    let ((), refused) = timeout(LIMIT, async { tokio::join!(reject, id.connect(&param)) })
        .await
        .expect("an answer in time");
    match refused.unwrap_err() {
        rdma_verbs::Error::Rejected {
            verb,
            reason,
            private_data,
            ..
        } => {
            assert_eq!((verb, reason), ("rdma_connect", peer_reject_reason()));
            assert_eq!(
                private_data,
                delivered_private_data(b"come back later", 148)
            );
        }
        other => panic!("not a reject: {other:?}"),
    }
    drop((pd, listener, channel));
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
    let param = ConnParam::new().private_data(b"first");
    let mut dropped = Box::pin(first.connect(&param));
    let polled = std::future::poll_fn(|cx| {
        std::task::Poll::Ready(std::future::Future::poll(dropped.as_mut(), cx))
    })
    .await;
    assert!(polled.is_pending(), "not connected without an accept");
    drop(dropped);
    drop(first_pd);

    let (second, second_pd) = client(&channel, dst).await;
    let param = ConnParam::new().private_data(b"second");
    let connect = async { second.connect(&param).await.unwrap() };
    let accept = async {
        loop {
            let mut request = next_request(&mut listener).await;
            if request.private_data == delivered_private_data(b"first", 56) {
                continue; // dropped: its id is destroyed
            }
            assert_eq!(request.private_data, delivered_private_data(b"second", 56));
            let pd = add_qp(&mut request.id);
            break (request.accept(&ConnParam::new()).await.unwrap(), pd);
        }
    };
    let (connected, (server, server_pd)) = timeout(LIMIT, async { tokio::join!(connect, accept) })
        .await
        .expect("the second client connected in time");
    assert_eq!(connected.id.id().peer_addr(), server.id().local_addr());
    drop((connected, server, second_pd, server_pd, listener, channel));
    assert_clean_drops();
}

/// An RC QP for `id` on a CQ of its own that reports to a new channel, and that CQ as an
/// [`AsyncCq`] (to wrap the QP with once it is taken out of the id).
fn add_async_qp(id: &mut AsyncCmId) -> (ProtectionDomain, AsyncCq) {
    let ctx = id.id().context().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let channel = ctx.create_comp_channel().unwrap();
    let cq = AsyncCq::new(ctx.create_cq(8, Some(&channel)).unwrap()).unwrap();
    let qp = pd.create_qp(QpType::Rc, cq.cq(), cq.cq());
    id.create_qp(qp.max_send_wr(4).max_recv_wr(4)).unwrap();
    (pd, cq)
}

/// `CmId::take_qp` moves a connected id's QP into an `AsyncQp`: sends arrive, the ids
/// still disconnect, and `to_error` flushes what is posted (the id no longer does).
#[tokio::test]
async fn a_connected_qp_taken_from_its_id_into_an_async_qp() {
    let channel = AsyncCmChannel::new().unwrap();
    let mut listener = channel.listen(SocketAddr::new(cm_addr(), 0), 4).unwrap();
    let dst = listener.local_addr().unwrap();
    let connect = async {
        let mut id = channel.create_id(PortSpace::Tcp).unwrap();
        assert!(id.take_qp().is_none(), "no QP yet");
        timeout(LIMIT, id.resolve(None, dst, RESOLVE))
            .await
            .expect("resolved in time")
            .unwrap();
        let (pd, cq) = add_async_qp(&mut id);
        (id.connect(&ConnParam::new()).await.unwrap().id, pd, cq)
    };
    let accept = async {
        let mut request = next_request(&mut listener).await;
        let (pd, cq) = add_async_qp(&mut request.id);
        (request.accept(&ConnParam::new()).await.unwrap(), pd, cq)
    };
    let ((mut client, client_pd, client_cq), (mut server, server_pd, server_cq)) =
        timeout(LIMIT, async { tokio::join!(connect, accept) })
            .await
            .expect("connected in time");
    let client_qp = client.take_qp().expect("the client's QP");
    let server_qp = server.take_qp().expect("the server's QP");
    assert!(client.id().qp().is_none() && client.take_qp().is_none());
    let client_qp = AsyncQp::new(client_qp, client_cq).unwrap();
    let server_qp = AsyncQp::new(server_qp, server_cq).unwrap();

    let access = rdma_verbs::AccessFlags::LOCAL_WRITE;
    let recv = server_qp
        .recv(server_pd.alloc_mr(16, access).unwrap(), ..)
        .unwrap();
    let mut hello = client_pd.alloc_mr(16, access).unwrap();
    hello.write(0, b"hello").unwrap();
    let sent = client_qp.send(hello, ..5).unwrap();
    let (received, sent) = timeout(LIMIT, async { tokio::join!(recv, sent) })
        .await
        .expect("delivered in time");
    let (mr, wc) = received.unwrap();
    assert_eq!(wc.ok().unwrap().byte_len(), 5);
    let mut got = [0; 5];
    mr.read(0, &mut got).unwrap();
    assert_eq!(&got, b"hello");
    drop(mr);
    let (hello, wc) = sent.unwrap();
    wc.ok().unwrap();

    // A receive left posted (in a region of the client's PD, as the QP's): the disconnect
    // leaves it, `to_error` flushes it.
    let pending = client_qp.recv(hello, ..).unwrap();
    let passive = async {
        let event = server.next_event().await.unwrap();
        assert!(matches!(event.kind, CmEventKind::Disconnected), "{event:?}");
        server.id().disconnect().unwrap();
    };
    let ((), done) = timeout(LIMIT, async { tokio::join!(passive, client.disconnect()) })
        .await
        .expect("disconnected in time");
    done.unwrap();
    assert_eq!(
        client_qp.in_flight(),
        1,
        "rdma_disconnect left the taken QP alone"
    );
    client_qp.to_error().unwrap();
    let (_, wc) = timeout(LIMIT, pending)
        .await
        .expect("flushed in time")
        .unwrap();
    assert_eq!(wc.status(), rdma_verbs::WcStatus::WR_FLUSH_ERR);
    drop((client_qp, server_qp, client, server, listener, channel));
    drop((client_pd, server_pd));
    assert_clean_drops();
}

/// A UD QP for `id` on a CQ of its own that reports to a new channel, and that CQ as an
/// [`AsyncCq`].
fn add_async_ud_qp(id: &mut AsyncCmId) -> (ProtectionDomain, AsyncCq) {
    let ctx = id.id().context().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let channel = ctx.create_comp_channel().unwrap();
    let cq = AsyncCq::new(ctx.create_cq(8, Some(&channel)).unwrap()).unwrap();
    let qp = pd.create_qp(QpType::Ud, cq.cq(), cq.cq());
    id.create_qp(qp.max_send_wr(4).max_recv_wr(4)).unwrap();
    (pd, cq)
}

/// UD multicast on tokio: a join future dropped before its event cancels the join (the id
/// leaves the group); a receiver joins, takes its attached QP into an `AsyncQp` (the group
/// goes along) and receives what a send-only member sends through the address handle, QP
/// number and Q_Key its join resolved to; bad joins and leaves are refused before librdmacm.
#[tokio::test]
async fn multicast_joins_on_tokio() {
    if !provider_has(Need::Ud) {
        return;
    }
    use rdma_verbs::cm::MulticastJoinFlag;
    use rdma_verbs::{AccessFlags, SendRequest, WorkCompletion, MULTICAST_QPN};

    let group: IpAddr = "239.1.3.1".parse().unwrap();
    let channel = AsyncCmChannel::new().unwrap();
    let mut receiver = channel.create_id(PortSpace::Udp).unwrap();
    receiver.id().bind(SocketAddr::new(cm_addr(), 0)).unwrap();
    let (rpd, rcq) = add_async_ud_qp(&mut receiver);

    let err = receiver.join_multicast(cm_addr()).await.unwrap_err();
    assert!(
        matches!(
            &err,
            rdma_verbs::Error::InvalidArgument {
                what: "multicast group address",
                ..
            }
        ),
        "{err:?}"
    );
    let err = receiver.leave_multicast(group).unwrap_err();
    assert!(
        matches!(
            &err,
            rdma_verbs::Error::InvalidArgument {
                what: "multicast group",
                ..
            }
        ),
        "{err:?}"
    );

    // Polled once (the join is made, its event not yet read), then dropped: the id leaves.
    {
        let mut join = std::pin::pin!(receiver.join_multicast(group));
        let first = std::future::poll_fn(|cx| std::task::Poll::Ready(join.as_mut().poll(cx))).await;
        assert!(
            first.is_pending(),
            "the join's event came within its first poll"
        );
    }
    assert!(
        receiver.id().multicast_groups().is_empty(),
        "the cancelled join was left"
    );

    let rpeer = timeout(LIMIT, receiver.join_multicast(group))
        .await
        .expect("joined in time")
        .expect("rdma_join_multicast");
    assert_eq!(rpeer.qp_num, MULTICAST_QPN);
    assert_eq!(receiver.id().multicast_groups(), [group]);
    let rqp = receiver.take_qp().expect("the receiver's QP");
    assert_eq!(rqp.mcast().len(), 1, "the QP takes its group along");
    let rqp = AsyncQp::new(rqp, rcq).unwrap();
    let recv = rqp
        .recv(rpd.alloc_mr(40 + 64, AccessFlags::LOCAL_WRITE).unwrap(), ..)
        .unwrap();

    let mut sender = channel.create_id(PortSpace::Udp).unwrap();
    sender.id().bind(SocketAddr::new(cm_addr(), 0)).unwrap();
    let ctx = sender.id().context().unwrap();
    let (spd, scq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(4, None).unwrap());
    sender
        .create_qp(spd.create_qp(QpType::Ud, &scq, &scq).max_send_wr(4))
        .unwrap();
    let speer = timeout(
        LIMIT,
        sender.join_multicast_ex(group, MulticastJoinFlag::SendOnlyFullMember),
    )
    .await
    .expect("joined in time")
    .expect("rdma_join_multicast_ex");
    assert_eq!((speer.qp_num, speer.qkey), (rpeer.qp_num, rpeer.qkey));
    let ah = speer.create_ah(&spd).unwrap();
    let msg: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
    let mut smr = spd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    smr.write(0, &msg).unwrap();
    {
        let sge = [smr.sge(..).unwrap()];
        let qp = sender.id().qp().unwrap();
        qp.post_send(&mut [SendRequest::send(1, &sge)
            .ud(&ah, speer.qp_num, speer.qkey)
            .signaled()])
            .unwrap();
        let mut wc = [WorkCompletion::default()];
        let done = scq.poll_wait(&mut wc, Some(LIMIT)).unwrap();
        assert_eq!(done.len(), 1);
        done[0].ok().unwrap();
    }
    let (mr, wc) = timeout(LIMIT, recv)
        .await
        .expect("received in time")
        .unwrap();
    let wc = wc.ok().unwrap();
    assert_eq!(wc.byte_len(), 40 + 64);
    assert_eq!(wc.src_qp(), sender.id().qp().unwrap().qp_num());
    let mut got = [0; 64];
    mr.read(40, &mut got).unwrap();
    assert_eq!(got.as_slice(), msg.as_slice());

    receiver.leave_multicast(group).unwrap();
    assert!(receiver.leave_multicast(group).is_err(), "left already");
    // The sender is dropped with its join: it leaves the group then.
    drop((ah, sender, receiver, rqp, channel));
    drop((rpd, spd));
    assert_clean_drops();
}

/// Compile-time: the set-up futures are `Send` (an id is not `Sync`, so none of them may
/// hold a shared borrow of one across an await), so a task that connects or accepts can be
/// spawned on a multi-threaded runtime.
#[allow(dead_code)]
fn set_up_futures_are_send(
    mut id: AsyncCmId,
    request: ConnectRequest,
    param: ConnParam<'static>,
    dst: SocketAddr,
) {
    fn send<T: Send>(_: &T) {}
    send(&id.resolve(None, dst, RESOLVE));
    send(&id.connect(&param));
    send(&request.accept(&param));
}
