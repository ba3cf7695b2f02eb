//! AF_IB addresses ([`IbAddr`]): `rdma_getaddrinfo` turning a GID into one, their C form
//! read back from an id, and what a device without InfiniBand's connection manager (rxe,
//! siw: RoCE and iWARP) does with them. Nothing here connects over AF_IB: that needs an
//! InfiniBand port, which no machine of this project has.

use rdma_verbs::cm::{
    getaddrinfo, AddrFamily, AddrHints, CmEventKind, EventChannel, IbAddr, PortSpace,
};
use rdma_verbs::{Error, Gid};
use rdma_verbs_test_kit::{open_cm, provider_has, Need};

use super::{next_event, TIMEOUT};

/// A GID of InfiniBand's form (a link-local prefix and a port GUID).
const GID: &str = "fe80::2:c903:a:b0c1";

#[test]
fn getaddrinfo_turns_a_gid_into_an_af_ib_address() {
    let gid: Gid = GID.parse().unwrap();
    let hints = AddrHints::new()
        .family(AddrFamily::Ib)
        .port_space(PortSpace::Tcp);
    // librdmacm sets the port space's and the port's bits of the mask (all of them).
    let want = IbAddr::new(gid, PortSpace::Tcp, 7471).with_service_id_mask(!0);
    let found = getaddrinfo(Some(GID), Some("7471"), &hints).expect("rdma_getaddrinfo");
    let entry = found.first().unwrap_or_else(|| panic!("no result"));
    assert_eq!(entry.dst_ib, Some(want), "{found:?}");
    assert_eq!(entry.dst, None, "an AF_IB destination is no IP address");
    assert_eq!(entry.port_space, Some(PortSpace::Tcp));

    let passive = hints.passive(true);
    let found = getaddrinfo(Some(GID), Some("7471"), &passive).expect("rdma_getaddrinfo");
    assert_eq!(found[0].src_ib, Some(want), "{found:?}");
    assert_eq!(want.port(), 7471);
    assert_eq!(want.port_space(), Some(PortSpace::Tcp));
}

/// librdmacm reads the address getaddrinfo found as an IPv6 one: an IPv4 address or a
/// name with AF_IB would be read past its end, so the crate refuses them before the call.
#[test]
fn af_ib_lookups_of_what_is_not_a_gid_are_refused_before_the_call() {
    let hints = AddrHints::new().family(AddrFamily::Ib);
    for node in [Some("10.0.0.1"), Some("localhost"), None] {
        let err = getaddrinfo(node, Some("7471"), &hints).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { what: "node", .. }),
            "{node:?}: {err}"
        );
        assert!(err.to_string().contains("GID"), "{err}");
    }
}

/// An id of the IB port space binds to any port on port 0 (the CM picks a service ID of
/// that space), reads its address back as AF_IB (and as no IP address), and listens.
#[test]
fn an_af_ib_wildcard_binds_reads_back_and_listens() {
    let _ctx = open_cm();
    let channel = EventChannel::new().unwrap();
    for ps in [PortSpace::Ib, PortSpace::Tcp] {
        let id = channel.create_id(ps).unwrap();
        id.bind_ib(&IbAddr::new(Gid::ZERO, ps, 0))
            .expect("rdma_bind_addr");
        let local = id.local_ib_addr().expect("an AF_IB local address");
        assert_eq!(local.gid, Gid::ZERO);
        assert_eq!(local.pkey, IbAddr::DEFAULT_PKEY);
        assert_eq!(local.port_space(), Some(ps), "{local:?}");
        assert_ne!(local.port(), 0, "the CM picks a port: {local:?}");
        assert_eq!(local.service_id_mask, !0);
        assert_eq!(id.local_addr(), None, "no IP address");
        id.listen(4).expect("rdma_listen");
    }
}

/// The GID of a RoCE port (the CM device's; rxe or siw) is no AF_IB source: the bind is
/// refused naming the GID. As a destination it resolves (by GID), and the route, which
/// only InfiniBand has, is the kernel's `ENODEV`.
#[test]
fn a_roce_or_iwarp_port_is_no_af_ib_endpoint() {
    let ctx = open_cm();
    let gid = ctx.gid_table(1).unwrap()[0].gid;
    let channel = EventChannel::new().unwrap();
    let id = channel.create_id(PortSpace::Ib).unwrap();
    let err = id.bind_ib(&IbAddr::new(gid, PortSpace::Ib, 0)).unwrap_err();
    match &err {
        Error::InvalidArgument { what, reason } => {
            assert_eq!(*what, "AF_IB address");
            assert!(
                reason.contains(&gid.to_string()) && reason.contains("ENODEV"),
                "{reason}"
            );
        }
        other => panic!("not the typed refusal: {other}"),
    }

    if !provider_has(Need::IbTransport) {
        return;
    }
    let dst = IbAddr::new(gid, PortSpace::Ib, 7471);
    let client = channel.create_id(PortSpace::Ib).unwrap();
    client
        .resolve_ib_addr(None, &dst, TIMEOUT)
        .expect("rdma_resolve_addr");
    assert!(matches!(
        next_event(&channel).kind,
        CmEventKind::AddrResolved
    ));
    assert_eq!(client.peer_ib_addr(), Some(dst));
    let err = client.resolve_route(TIMEOUT).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENODEV), "{err}");
}
