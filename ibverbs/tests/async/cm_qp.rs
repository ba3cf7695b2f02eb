//! An `AsyncQp` made on a CM id before the connection (`AsyncCmId::create_async_qp`): RC
//! receives posted before connect and accept take the first messages, sent the moment
//! each side is up; UD over rdma_cm (a service ID resolution): the client sends through the
//! address its `Connected` resolved, the server answers through the handle of each
//! datagram; the id and the `AsyncQp` dropped in either order; misuse refused.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use rdma_verbs::cm::{ConnParam, PortSpace};
use rdma_verbs::tokio::cm::{AsyncCmChannel, AsyncCmId, ConnectRequest, Listener};
use rdma_verbs::tokio::{AsyncCq, AsyncQp};
use rdma_verbs::{AccessFlags, AlignedBuffer, Error, ProtectionDomain, QpType, GRH_LEN};
use rdma_verbs_test_kit::{assert_clean_drops, cm_addr, provider_has, Need};
use tokio::time::timeout;

use crate::common::LIMIT;

const RESOLVE: Duration = Duration::from_secs(2);

/// The listener's next connect request, within [`LIMIT`].
async fn next_request(listener: &mut Listener) -> ConnectRequest {
    let mut listener = std::pin::Pin::new(listener);
    let next = std::future::poll_fn(|cx| listener.as_mut().poll_next(cx));
    let item = timeout(LIMIT, next).await.expect("a request in time");
    item.expect("the listener does not end").unwrap()
}

/// A PD and an `AsyncQp` of `qp_type` made on `id` before it connects or accepts.
fn async_qp(id: &mut AsyncCmId, qp_type: QpType) -> (ProtectionDomain, AsyncQp) {
    let ctx = id.id().context().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let channel = ctx.create_comp_channel().unwrap();
    let cq = AsyncCq::new(ctx.create_cq(8, Some(&channel)).unwrap()).unwrap();
    let qp = pd.create_qp(qp_type, cq.cq(), cq.cq());
    id.create_qp(qp.max_send_wr(4).max_recv_wr(4)).unwrap();
    let qp = id
        .async_qp(cq)
        .expect("the id's QP wrapped before the connection");
    (pd, qp)
}

/// A region of `len` bytes holding `data` at its start.
fn region(pd: &ProtectionDomain, len: usize, data: &[u8]) -> rdma_verbs::MemoryRegion {
    let mut mr = pd.alloc_mr(len, AccessFlags::LOCAL_WRITE).unwrap();
    mr.write(0, data).unwrap();
    mr
}

/// `len` bytes of `mr` from `at`.
fn bytes(mr: &rdma_verbs::MemoryRegion, at: usize, len: usize) -> Vec<u8> {
    let mut got = vec![0; len];
    mr.read(at, &mut got).unwrap();
    got
}

#[tokio::test]
async fn receives_posted_before_connect_and_accept_take_the_first_messages() {
    let channel = AsyncCmChannel::new().unwrap();
    let mut listener = channel.listen(SocketAddr::new(cm_addr(), 0), 4).unwrap();
    let dst = listener.local_addr().unwrap();
    let client = async {
        let mut id = channel.create_id(PortSpace::Tcp).unwrap();
        timeout(LIMIT, id.resolve(None, dst, RESOLVE))
            .await
            .expect("resolved in time")
            .unwrap();
        let (pd, qp) = async_qp(&mut id, QpType::Rc);
        assert!(id.id().qp().is_none(), "only the AsyncQp posts on it");
        let recv = qp.recv(region(&pd, 32, &[]), ..).unwrap();
        let connected = id.connect(&ConnParam::new()).await.unwrap();
        // At once: the server's receive was posted before it accepted.
        let sent = qp.send(region(&pd, 32, b"from the client"), ..15).unwrap();
        (connected.id, pd, qp, recv, sent)
    };
    let server = async {
        let mut request = next_request(&mut listener).await;
        let (pd, qp) = async_qp(&mut request.id, QpType::Rc);
        let recv = qp.recv(region(&pd, 32, &[]), ..).unwrap();
        let id = request.accept(&ConnParam::new()).await.unwrap();
        let sent = qp.send(region(&pd, 32, b"from the server"), ..15).unwrap();
        (id, pd, qp, recv, sent)
    };
    let (c, s) = timeout(LIMIT, async { tokio::join!(client, server) })
        .await
        .expect("connected in time");
    let (mut cid, cpd, cqp, crecv, csent) = c;
    let (sid, spd, sqp, srecv, ssent) = s;
    for (recv, sent, want) in [
        (crecv, ssent, b"from the server"),
        (srecv, csent, b"from the client"),
    ] {
        let (received, sent) = timeout(LIMIT, async { tokio::join!(recv, sent) })
            .await
            .expect("delivered in time");
        let (mr, wc) = received.unwrap();
        assert_eq!(wc.ok().unwrap().byte_len(), 15);
        assert_eq!(bytes(&mr, 0, 15), want);
        sent.unwrap().1.ok().unwrap();
    }

    // The id keeps the QP: no second one, none to take.
    let extra_cq = cpd.context().create_cq(1, None).unwrap();
    let err = cid
        .create_qp(cpd.create_qp(QpType::Rc, &extra_cq, &extra_cq))
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what: "CM id", reason } if reason.contains("already has a QP")),
        "{err:?}"
    );
    assert!(cid.take_qp().is_none());

    // librdmacm still moves the lent QP: the disconnect flushes a receive left posted.
    let pending = cqp.recv(region(&cpd, 32, &[]), ..).unwrap();
    let passive = async {
        let event = sid.next_event().await.unwrap();
        assert!(
            matches!(event.kind, rdma_verbs::cm::CmEventKind::Disconnected),
            "{event:?}"
        );
        sid.id().disconnect().unwrap();
    };
    let ((), done) = timeout(LIMIT, async { tokio::join!(passive, cid.disconnect()) })
        .await
        .expect("disconnected in time");
    done.unwrap();
    let (_, wc) = timeout(LIMIT, pending)
        .await
        .expect("flushed in time")
        .unwrap();
    assert_eq!(wc.status(), rdma_verbs::WcStatus::WR_FLUSH_ERR);

    // Either order of drops: the id first (the AsyncQp keeps the QP), or the AsyncQp first
    // (the id keeps it until it goes).
    drop(cid);
    drop(cqp);
    drop(sqp);
    drop(sid);
    drop((cpd, spd, listener, channel));
    assert_clean_drops();
}

#[tokio::test]
async fn ud_over_rdma_cm_on_tokio_answered_through_each_datagrams_sender() {
    if !provider_has(Need::Ud) {
        return;
    }
    let channel = AsyncCmChannel::new().unwrap();
    let listen = channel.create_id(PortSpace::Udp).unwrap();
    listen.id().bind(SocketAddr::new(cm_addr(), 0)).unwrap();
    let dst = listen.id().local_addr().unwrap();
    let mut listener = listen.listen(4).unwrap();
    let client = async {
        let mut id = channel.create_id(PortSpace::Udp).unwrap();
        timeout(LIMIT, id.resolve(None, dst, RESOLVE))
            .await
            .expect("resolved in time")
            .unwrap();
        let (pd, qp) = async_qp(&mut id, QpType::Ud);
        let recv = qp.recv(region(&pd, GRH_LEN + 64, &[]), ..).unwrap();
        let connected = timeout(LIMIT, id.connect(&ConnParam::new()))
            .await
            .expect("resolved the service in time")
            .unwrap();
        let peer = connected.ud.expect("a UD connection names its peer");
        let ah = Arc::new(peer.create_ah(&pd).unwrap());
        let sent = qp
            .send_to(region(&pd, 64, b"hello"), ..5, ah, peer.qp_num, peer.qkey)
            .unwrap();
        sent.await.unwrap().1.ok().unwrap();
        let (mr, wc) = timeout(LIMIT, recv)
            .await
            .expect("answered in time")
            .unwrap();
        assert_eq!(wc.ok().unwrap().byte_len() as usize, GRH_LEN + 5);
        assert_eq!(bytes(&mr, GRH_LEN, 5), b"world");
        (connected.id, qp, pd)
    };
    let server = async {
        let mut request = next_request(&mut listener).await;
        let (pd, qp) = async_qp(&mut request.id, QpType::Ud);
        let recv = qp.recv(region(&pd, GRH_LEN + 64, &[]), ..).unwrap();
        let id = timeout(LIMIT, request.accept(&ConnParam::new()))
            .await
            .expect("a UD accept does not wait for an Established")
            .unwrap();
        let (mr, wc) = timeout(LIMIT, recv)
            .await
            .expect("received in time")
            .unwrap();
        let wc = *wc.ok().unwrap();
        assert_eq!(wc.byte_len() as usize, GRH_LEN + 5);
        assert_eq!(bytes(&mr, GRH_LEN, 5), b"hello");
        let port = id.id().port_num().expect("a bound id has a port");
        let ah = pd
            .create_ah_from_wc(port, &wc, &bytes(&mr, 0, GRH_LEN))
            .unwrap();
        let sent = qp
            .send_to(
                region(&pd, 64, b"world"),
                ..5,
                Arc::new(ah),
                wc.src_qp(),
                rdma_verbs::cm::UDP_QKEY,
            )
            .unwrap();
        sent.await.unwrap().1.ok().unwrap();
        (id, qp, pd)
    };
    let (c, s) = timeout(LIMIT, async { tokio::join!(client, server) })
        .await
        .expect("exchanged in time");
    drop((c, s, listener, channel));
    assert_clean_drops();
}

#[tokio::test]
async fn an_async_qp_on_a_cm_id_refuses_misuse() {
    if !provider_has(Need::Ud) {
        return;
    }
    let channel = AsyncCmChannel::new().unwrap();
    let mut id = channel.create_id(PortSpace::Tcp).unwrap();
    id.id().bind(SocketAddr::new(cm_addr(), 0)).unwrap();
    let ctx = id.id().context().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let comp = ctx.create_comp_channel().unwrap();
    // No QP yet.
    let cq = AsyncCq::new(ctx.create_cq(8, Some(&comp)).unwrap()).unwrap();
    let err = id.async_qp::<AlignedBuffer>(cq).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what: "CM id", reason } if reason.contains("no QP")),
        "{err:?}"
    );
    // The QP's CQ is another one: refused, and the QP is destroyed with nothing left.
    let other = ctx.create_cq(8, None).unwrap();
    id.create_qp(pd.create_qp(QpType::Rc, &other, &other))
        .unwrap();
    let cq = AsyncCq::new(ctx.create_cq(8, Some(&comp)).unwrap()).unwrap();
    let err = id.async_qp::<AlignedBuffer>(cq).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidArgument {
                what: "async queue pair",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(id.id().qp().is_none());
    // Posted on before: its completions could not be told from the table's.
    let cq = AsyncCq::new(ctx.create_cq(8, Some(&comp)).unwrap()).unwrap();
    id.create_qp(pd.create_qp(QpType::Rc, cq.cq(), cq.cq()).max_send_wr(2))
        .unwrap();
    let mut mr = region(&pd, 8, &[]);
    {
        let sge = [mr.sge(..).unwrap()];
        let qp = id.id().qp().unwrap();
        qp.post_recv(&mut [rdma_verbs::RecvRequest::new(9, &sge)])
            .unwrap();
    }
    let err = id.async_qp::<AlignedBuffer>(cq).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what: "async queue pair", reason } if reason.contains("posted")),
        "{err:?}"
    );
    mr.write(0, b"unused").unwrap();
    // A datagram on a connected QP (whose send would ignore the address): refused.
    let cq = AsyncCq::new(ctx.create_cq(8, Some(&comp)).unwrap()).unwrap();
    id.create_qp(pd.create_qp(QpType::Rc, cq.cq(), cq.cq()).max_send_wr(2))
        .unwrap();
    let qp: AsyncQp = id.async_qp(cq).unwrap();
    let port = id.id().port_num().expect("a bound id has a port");
    let gid = ctx.default_gid(port).unwrap();
    let to = rdma_verbs::Endpoint::new(1, 0, 0, gid.gid);
    let route = rdma_verbs::Route::new();
    let ah = Arc::new(
        pd.create_ah(&to)
            .port(port)
            .gid_index(gid.index)
            .route(route)
            .build()
            .unwrap(),
    );
    let err = qp
        .send_to(region(&pd, 8, b"x"), ..1, ah, 1, rdma_verbs::cm::UDP_QKEY)
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what: "queue pair type", reason } if reason.contains("Rc")),
        "{err:?}"
    );
    assert_eq!(qp.in_flight(), 0, "nothing was posted");
    drop((qp, id, mr, pd, channel));
    assert_clean_drops();
}
