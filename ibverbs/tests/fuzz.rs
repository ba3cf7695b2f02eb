//! Bounded fuzzing (proptest) of what a peer sends out of band: `Endpoint` and
//! `RemoteMemory` as JSON (the `serde` feature), from arbitrary text, bytes and JSON values
//! and from valid ones with one field changed, and the checked slicing of a peer's
//! `RemoteMemory`. Needs no device.
//!
//! Each property runs a bounded number of cases (`PROPTEST_CASES` overrides it) with a new
//! random seed per run; a failure prints its minimal input.

use proptest::prelude::*;
use proptest::test_runner::Config;
use rdma_verbs::RemoteMemory;

/// `cases` cases unless `PROPTEST_CASES` says otherwise; no failure files (the tests may
/// run in a VM whose file system is read-only outside the target directory).
fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

fn remote_memory() -> impl Strategy<Value = RemoteMemory> {
    (any::<u64>(), any::<u64>(), any::<u32>())
        .prop_map(|(addr, len, rkey)| RemoteMemory::new(addr, len, rkey))
}

/// Any `u64`, often a small one or near the top.
fn edgy_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        0u64..4096,
        (0u64..4096).prop_map(|v| u64::MAX - v)
    ]
}

proptest! {
    #![proptest_config(config(1024))]

    /// Slicing any range (a peer's numbers) by any offset and length gives the sub-range
    /// when it lies within the range and within the address space, else an error.
    #[test]
    fn slices_of_any_remote_memory(m in remote_memory(), offset in edgy_u64(), len in edgy_u64()) {
        let inside = offset.checked_add(len).is_some_and(|end| end <= m.len);
        let start = m.addr.checked_add(offset);
        match m.slice(offset, len) {
            Ok(s) => {
                prop_assert!(inside);
                prop_assert_eq!(s, RemoteMemory::new(start.unwrap(), len, m.rkey));
            }
            Err(_) => prop_assert!(!inside || start.is_none()),
        }
    }
}

#[cfg(feature = "serde")]
mod json {
    use std::net::Ipv6Addr;

    use proptest::collection::{btree_map, vec};
    use proptest::prelude::*;
    use rdma_verbs::{Endpoint, Gid, RemoteMemory};
    use serde_json::Value;

    use super::{config, remote_memory};

    const ENDPOINT_FIELDS: [(&str, u64); 4] = [
        ("qpn", u32::MAX as u64),
        ("psn", u32::MAX as u64),
        ("lid", u16::MAX as u64),
        ("gid", 0),
    ];
    const MEMORY_FIELDS: [(&str, u64); 3] = [
        ("addr", u64::MAX),
        ("len", u64::MAX),
        ("rkey", u32::MAX as u64),
    ];

    fn endpoint() -> impl Strategy<Value = Endpoint> {
        (any::<u32>(), any::<u32>(), any::<u16>(), any::<[u8; 16]>())
            .prop_map(|(qpn, psn, lid, gid)| Endpoint::new(qpn, psn, lid, Gid::from(gid)))
    }

    /// Text that is sometimes an IPv6 address.
    fn gid_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<[u8; 16]>().prop_map(|b| Ipv6Addr::from(b).to_string()),
            "[0-9a-f:.]{0,20}",
            Just("::ffff:127.0.0.1".to_owned()),
            Just("127.0.0.1".to_owned()),
        ]
    }

    /// Any JSON value, with keys that are often the fields', nested a few levels.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (0u64..70_000).prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,12}".prop_map(Value::String),
            gid_text().prop_map(Value::String),
        ];
        let key = prop_oneof![
            prop::sample::select(vec!["qpn", "psn", "lid", "gid", "addr", "len", "rkey"])
                .prop_map(str::to_owned),
            ".{0,6}",
        ];
        leaf.prop_recursive(4, 48, 8, move |inner| {
            prop_oneof![
                vec(inner.clone(), 0..8).prop_map(Value::Array),
                btree_map(key.clone(), inner, 0..10)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Whether serde takes `v` as the field `name` whose largest value is `max`.
    fn field_ok(name: &str, max: u64, v: &Value) -> bool {
        match (name, v) {
            ("gid", Value::String(s)) => s.parse::<Ipv6Addr>().is_ok(),
            ("gid", _) => false,
            _ => v.as_u64().is_some_and(|n| n <= max),
        }
    }

    /// A valid object with one field replaced, removed, or an unknown one added: it
    /// deserialises exactly when every field is there with a value of its type.
    fn check_mutated<T>(
        valid: Value,
        fields: &[(&str, u64)],
        which: prop::sample::Index,
        change: u8,
        value: Value,
    ) -> Result<(), TestCaseError>
    where
        T: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug,
    {
        let Value::Object(mut map) = valid else {
            unreachable!()
        };
        let (name, max) = fields[which.index(fields.len())];
        let expected = match change {
            0 => {
                let ok = field_ok(name, max, &value);
                map.insert(name.to_owned(), value);
                ok
            }
            1 => {
                map.remove(name);
                false
            }
            // Unknown fields are ignored.
            _ => {
                map.insert(format!("{name}_extra"), value);
                true
            }
        };
        let v = Value::Object(map);
        let parsed = serde_json::from_value::<T>(v.clone());
        prop_assert_eq!(
            parsed.is_ok(),
            expected,
            "{} {:?}",
            v,
            parsed.as_ref().err()
        );
        let text = v.to_string();
        let from_text = serde_json::from_str::<T>(&text);
        prop_assert_eq!(from_text.as_ref().ok(), parsed.as_ref().ok());
        if let Ok(t) = parsed {
            // What parsed re-serialises to the fields it was given.
            let Value::Object(back) = serde_json::to_value(&t).unwrap() else {
                unreachable!()
            };
            let Value::Object(given) = v else {
                unreachable!()
            };
            for (k, b) in &back {
                prop_assert!(
                    k == "gid" || given.get(k) == Some(b),
                    "{}: {:?} {:?}",
                    k,
                    given.get(k),
                    b
                );
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(config(256))]

        /// Any text is an endpoint, a memory range or an error.
        #[test]
        fn any_text(text in prop_oneof![".{0,64}", "[\\[\\]{}:,\"0-9a-z ]{0,64}"]) {
            let _ = serde_json::from_str::<Endpoint>(&text);
            let _ = serde_json::from_str::<RemoteMemory>(&text);
        }

        /// Any bytes are an endpoint, a memory range or an error.
        #[test]
        fn any_bytes(bytes in vec(any::<u8>(), 0..128)) {
            let _ = serde_json::from_slice::<Endpoint>(&bytes);
            let _ = serde_json::from_slice::<RemoteMemory>(&bytes);
        }

        /// Any JSON value is an endpoint, a memory range or an error; as a value and as
        /// text, the same.
        #[test]
        fn any_json(v in json()) {
            let text = v.to_string();
            let e = serde_json::from_value::<Endpoint>(v.clone()).ok();
            prop_assert_eq!(serde_json::from_str::<Endpoint>(&text).ok(), e);
            let m = serde_json::from_value::<RemoteMemory>(v).ok();
            prop_assert_eq!(serde_json::from_str::<RemoteMemory>(&text).ok(), m);
        }

        /// An endpoint with one field changed, missing or added.
        #[test]
        fn endpoints_with_a_field_changed(
            ep in endpoint(),
            which in any::<prop::sample::Index>(),
            change in 0..3u8,
            value in json(),
        ) {
            let valid = serde_json::to_value(ep).unwrap();
            check_mutated::<Endpoint>(valid, &ENDPOINT_FIELDS, which, change, value)?;
        }

        /// A memory range with one field changed, missing or added.
        #[test]
        fn remote_memory_with_a_field_changed(
            m in remote_memory(),
            which in any::<prop::sample::Index>(),
            change in 0..3u8,
            value in json(),
        ) {
            let valid = serde_json::to_value(m).unwrap();
            check_mutated::<RemoteMemory>(valid, &MEMORY_FIELDS, which, change, value)?;
        }

        /// A field given twice is an error.
        #[test]
        fn duplicate_fields(ep in endpoint(), which in any::<prop::sample::Index>()) {
            let (name, _) = ENDPOINT_FIELDS[which.index(ENDPOINT_FIELDS.len())];
            let text = serde_json::to_string(&ep).unwrap();
            let again = serde_json::to_value(ep).unwrap()[name].to_string();
            let doubled = format!("{{\"{name}\":{again},{}", &text[1..]);
            prop_assert!(serde_json::from_str::<Endpoint>(&doubled).is_err(), "{}", doubled);
        }

        /// Every endpoint and memory range survives JSON.
        #[test]
        fn round_trips(ep in endpoint(), m in remote_memory()) {
            let text = serde_json::to_string(&ep).unwrap();
            prop_assert_eq!(serde_json::from_str::<Endpoint>(&text).unwrap(), ep);
            let text = serde_json::to_string(&m).unwrap();
            prop_assert_eq!(serde_json::from_str::<RemoteMemory>(&text).unwrap(), m);
            // The sequence form serde also accepts for a struct.
            let obj = serde_json::to_value(ep).unwrap();
            let seq = Value::Array(ENDPOINT_FIELDS.iter().map(|(k, _)| obj[*k].clone()).collect());
            prop_assert_eq!(serde_json::from_value::<Endpoint>(seq).unwrap(), ep);
        }
    }

    /// Deep nesting is an error (serde_json's recursion limit), not a stack overflow.
    #[test]
    fn deep_nesting_is_an_error() {
        for open in ["[", "{\"qpn\":", "{\"gid\":["] {
            let text = open.repeat(100_000);
            assert!(serde_json::from_str::<Endpoint>(&text).is_err(), "{open}");
            assert!(
                serde_json::from_str::<RemoteMemory>(&text).is_err(),
                "{open}"
            );
        }
    }

    /// A JSON object with every field is no endpoint when one is of another type.
    #[test]
    fn field_types() {
        let ok = r#"{"qpn":17,"psn":1,"lid":0,"gid":"::ffff:127.0.0.1"}"#;
        assert!(serde_json::from_str::<Endpoint>(ok).is_ok());
        for bad in [
            ok.replace("17", "-17"),
            ok.replace("17", "17.0"),
            ok.replace("17", "4294967296"),
            ok.replace("\"lid\":0", "\"lid\":65536"),
            ok.replace("::ffff:127.0.0.1", "127.0.0.1"),
            ok.replace(
                "\"::ffff:127.0.0.1\"",
                "[0,0,0,0,0,0,0,0,0,0,255,255,127,0,0,1]",
            ),
        ] {
            assert!(serde_json::from_str::<Endpoint>(&bad).is_err(), "{bad}");
        }
    }
}
