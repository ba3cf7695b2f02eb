//! Packet pacing (`ibv_modify_qp_rate_limit`): checked against the device's
//! `packet_pacing_caps` before the call. rxe reports none, so every limit, 0 (no limit)
//! included, is the typed `Unsupported`; a device with pacing takes its bounds and refuses
//! a rate past them by name.

use rdma_verbs_test_kit::{assert_clean_drops, open};

use rdma_verbs::{Error, QpType, RateLimit};

use crate::common::Pair;

#[test]
fn a_rate_limit_is_checked_against_the_devices_packet_pacing_caps() {
    let caps = open().query_device().unwrap().packet_pacing_caps;
    let p = Pair::new(QpType::Rc);
    if caps.qp_rate_limit_max == 0 {
        // rxe, siw: no pacing. Refused before the call, whatever the rate.
        for kbps in [0, 1_000_000] {
            let limit = RateLimit::new().rate_limit(kbps).max_burst_sz(4096);
            let err = p.a.modify_rate_limit(&limit).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Unsupported {
                        missing: "qp_rate_limit_max in packet_pacing_caps",
                        ..
                    }
                ),
                "{kbps} kbps: {err:?}"
            );
            assert!(
                err.to_string().contains("ibv_modify_qp_rate_limit"),
                "{err}"
            );
        }
    } else if caps.supported_qpts & 1 << 2 != 0 {
        // A device that paces RC QPs (bit IBV_QPT_RC): its bounds are taken, a rate past
        // the highest is refused naming both, and 0 lifts the limit.
        let max = caps.qp_rate_limit_max;
        p.a.modify_rate_limit(&RateLimit::new().rate_limit(caps.qp_rate_limit_min))
            .unwrap();
        p.a.modify_rate_limit(&RateLimit::new().rate_limit(max))
            .unwrap();
        if let Some(over) = max.checked_add(1) {
            let err =
                p.a.modify_rate_limit(&RateLimit::new().rate_limit(over))
                    .unwrap_err();
            assert!(
                matches!(err, Error::OutOfRange { value, max: m, .. }
                    if value == u64::from(over) && m == u64::from(max)),
                "{err:?}"
            );
        }
        p.a.modify_rate_limit(&RateLimit::new()).unwrap();
    }
    drop(p);
    assert_clean_drops();
}
