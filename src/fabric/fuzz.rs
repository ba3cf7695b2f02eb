//! Bounded fuzzing (proptest) of what the fabric tools parse from their command lines:
//! getopt_long over infiniband-diags' option table, destinations (LIDs, directed routes)
//! and the C number readers of the common options. None may panic; the results follow C.

use proptest::prelude::*;

use super::dest::{dr_path, lid};
use crate::cli::{getopt_long, optstring_of, HasArg, Item, LongOpt};
use crate::fuzz::{argv, config, junk_text, number_text};

/// The common options' letters (with a value: `z`, `C`, `P`, `t`, `s`, `y`) and names.
const SHORTS: &str = "zCPDLGtsKyevdhVx";
const LONGS: &[&str] = &[
    "config",
    "Ca",
    "Port",
    "Direct",
    "Lid",
    "Guid",
    "timeout",
    "sm_port",
    "show_keys",
    "m_key",
    "errors",
    "verbose",
    "debug",
    "help",
    "version",
    "extended",
];
const WORDS: &[&str] = &["1", "0,1,3", "0x100001", "ibsim0", "-D", "--", "nodeinfo"];

/// The option table of [`SHORTS`] and [`LONGS`].
fn table() -> Vec<LongOpt> {
    LONGS
        .iter()
        .zip(SHORTS.chars())
        .map(|(&name, val)| LongOpt {
            name,
            has_arg: if "zCPtsy".contains(val) {
                HasArg::Required
            } else {
                HasArg::No
            },
            val,
        })
        .collect()
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn getopt_takes_any_argv(args in argv("smpquery", SHORTS, LONGS, WORDS)) {
        let args = crate::cli::arg_strings(&args);
        let table = table();
        let parsed = getopt_long(&args, &optstring_of(&table), &table);
        let (items, operands) = (parsed.items, parsed.operands);
        let errors = items.iter().filter(|i| matches!(i, Item::Error(_))).count();
        prop_assert!(errors <= 1);
        if errors == 1 {
            prop_assert!(matches!(items.last(), Some(Item::Error(_))));
        }
        for item in &items {
            if let Item::Opt(letter, value) = item {
                prop_assert!(SHORTS.contains(*letter));
                prop_assert_eq!(value.is_some(), "zCPtsy".contains(*letter));
            }
        }
        prop_assert!(operands.len() <= args.len());
    }

    #[test]
    fn destinations_parse_like_c(text in prop_oneof![number_text(), junk_text()]) {
        if let Some(l) = lid(&text) {
            prop_assert!((1..=0xbfff).contains(&l));
        }
        let path = dr_path(&text);
        prop_assert_eq!(path.is_none(), text.is_empty());
    }

    #[test]
    fn dr_paths_keep_their_ports(ports in proptest::collection::vec(any::<u8>(), 0..70)) {
        let text = std::iter::once("0".to_owned())
            .chain(ports.iter().map(u8::to_string))
            .collect::<Vec<_>>()
            .join(",");
        let mut want = vec![0];
        want.extend(&ports);
        prop_assert_eq!(dr_path(&text), Some(want));
    }
}
