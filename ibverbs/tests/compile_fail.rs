//! Programs the compiler must reject: each file of `tests/compile_fail/` is one, with a
//! comment saying why it must not compile, and the compiler's output it must give in the
//! `.stderr` file beside it (the error and its code, checked by `trybuild`). They are the
//! borrow and type rules of the crate docs' soundness page (`docs::soundness`), checked on
//! every `cargo test`.
//!
//! The expected output is the stable toolchain's (rustc 1.95.0 when last written); a new
//! compiler that words an error differently fails the test. After checking that each
//! program is still rejected for its reason,
//! `TRYBUILD=overwrite cargo test -p rdma-verbs --all-features --test compile_fail`
//! rewrites the `.stderr` files.
//!
//! This binary links no RDMA library, so `scripts/with-rdma` runs it on the host; the cases
//! are only checked (`cargo check` of each, in `target/tests/trybuild/`), never run.

/// What each group checks; every case file is in exactly one group.
const GROUPS: &[(&str, &[&str])] = &[
    // Memory: a scatter/gather entry borrows its region, a request its entries and address
    // handle, so nothing posted points at freed or changed memory; borrowed memory cannot
    // be registered; registered memory is reached by copy, never through a reference.
    (
        "memory",
        &[
            "region_dropped_while_sge_alive",
            "region_written_while_sge_alive",
            "request_outlives_sge_list",
            "ud_request_outlives_address_handle",
            "borrowed_memory_not_registrable",
            "region_as_slice_needs_unsafe",
            "region_not_indexable",
        ],
    ),
    // Queue pair states: only a connected (or ready) QP sends, and the raw `modify` that
    // could move it anywhere is `unsafe`.
    (
        "states",
        &["prepared_qp_has_no_post_send", "modify_needs_unsafe"],
    ),
    // A `WrBatch` lives in its closure: no call returns one, and it cannot be moved out,
    // kept or swapped (the provider holds the send queue's lock while it is open); a
    // `BatchRequest` borrows it; what a pushed request refers to (address handle, the
    // regions of its entries) is borrowed until the batch is posted, after the closure.
    (
        "batch",
        &[
            "batch_without_closure",
            "batch_moved_out_of_closure",
            "batch_kept_past_closure",
            "batch_swapped_between_qps",
            "batch_request_kept_past_closure",
            "batch_request_outlives_address_handle",
            "batch_address_handle_dropped_after_push",
            "batch_address_handle_made_inside",
            "batch_region_dropped_after_push",
        ],
    ),
    // Polling: a `PollSession` lives in its closure as a batch does, its completions borrow
    // it, and the CQ has no other poll while it is open; a loop cannot return `poll`'s slice.
    (
        "polling",
        &[
            "poll_session_without_closure",
            "poll_session_moved_out_of_closure",
            "poll_session_kept_past_closure",
            "completion_kept_past_session",
            "completion_read_after_next",
            "cq_polled_during_session",
            "poll_loop_returns_its_slice",
        ],
    ),
    // Descriptors whose events the crate acknowledges: no safe accessor (`AsFd`, `AsRawFd`,
    // a public `async_fd`); the raw numbers only through `unsafe`.
    (
        "descriptors",
        &[
            "comp_channel_has_no_as_fd",
            "comp_channel_has_no_as_raw_fd",
            "context_async_fd_private",
            "raw_fds_need_unsafe",
        ],
    ),
    // Inputs that can grow: outside the crate no input is made by a struct literal, so a
    // new field is a minor version (the crate docs' Stability section).
    (
        "stability",
        &["settings_struct_literal", "record_struct_literal"],
    ),
    // Feature `cm`: the rdma_cm event channel's descriptor, as above; its inputs as
    // `stability`'s.
    (
        "cm",
        &["cm_event_channel_has_no_as_fd", "cm_input_struct_literal"],
    ),
    // Features `tokio` and `cm`: an `AsyncCmId`'s id is never handed out mutably.
    ("tokio+cm", &["async_cm_id_not_handed_out_mutably"]),
];

/// Whether the group's features are enabled in this build (trybuild builds the cases with
/// the features this test binary was built with).
fn enabled(group: &str) -> bool {
    match group {
        "cm" => cfg!(feature = "cm"),
        "tokio+cm" => cfg!(all(feature = "tokio", feature = "cm")),
        _ => true,
    }
}

#[test]
fn rejected_with_the_expected_errors() {
    let t = trybuild::TestCases::new();
    for (group, cases) in GROUPS {
        if enabled(group) {
            for case in *cases {
                t.compile_fail(format!("tests/compile_fail/{case}.rs"));
            }
        }
    }
}

/// Every case file is in a group (else it would never be checked), and every file of the
/// folder is a case's program or its expected output.
#[test]
fn every_case_is_listed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compile_fail");
    let listed: Vec<&str> = GROUPS
        .iter()
        .flat_map(|(_, cases)| cases.iter().copied())
        .collect();
    let mut programs = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        match name.rsplit_once('.') {
            Some((case, "rs")) => programs.push(case.to_owned()),
            Some((case, "stderr")) if listed.contains(&case) => {}
            _ => panic!(
                "{name} in {}: neither a listed case's program nor its output",
                dir.display()
            ),
        }
    }
    programs.sort();
    let mut listed: Vec<String> = listed.iter().map(|case| case.to_string()).collect();
    listed.sort();
    assert_eq!(programs, listed, "the case files against the groups' lists");
}
