//! The bindings to `<rdma/rdma_cma.h>` and `<rdma/rdma_verbs.h>` (and AF_IB's `sockaddr_ib`
//! from `<infiniband/ib.h>`): the checked-in ones of the target (`src/generated/<target>.rs`),
//! or, with the feature `bindgen` or for another target, bindgen's from the installed headers,
//! with the configuration below; and the link lines.
//!
//! librdmacm is located with pkg-config (`librdmacm.pc`, shipped by rdma-core's development
//! package); without it the build stops with a message naming the package to install. The
//! verbs types the headers use are not generated again: they come from `rdma-verbs-sys`, so
//! values pass between the two crates as they are. The rest (the choice of bindings, their
//! regeneration, bindgen's common settings) is the three -sys crates' shared build helper's,
//! `rdma-sys-build`.

use rdma_sys_build::{BindgenConfig, SysCrate};

/// The verbs types (`ibv_*`) that `rdma-verbs-sys` defines. `infiniband/sa.h`'s `ibv_sa_*` are
/// not among them (rdma-verbs-sys binds `verbs.h` only), so they are generated here. bindgen
/// anchors the pattern (`^...$`); the regex engine has no look-ahead, hence the spelling.
const VERBS_TYPES: &str = r"ibv_([^s].*|s[^a].*|sa?)";

fn main() {
    let rdmacm = SysCrate::new(
        "librdmacm",
        "<rdma/rdma_cma.h> and <rdma/rdma_verbs.h>",
        "librdmacm-dev",
    )
    // bindgen's: the verbs headers may live elsewhere than librdmacm's (rdma-verbs-sys
    // exports their directory when it generates its bindings too, as the feature `bindgen`
    // makes it).
    .more_headers_from("DEP_RDMA_VERBS_IBVERBS_INCLUDE")
    // bindgen's `__BindgenUnionField`, for the unions of libc's socket types, has bare unsafe
    // calls.
    .allow(&["unsafe_op_in_unsafe_fn"]);
    rdmacm.build(
        BindgenConfig::new()
            .allowlist_function("rdma_.*")
            .allowlist_type("rdma_.*")
            // AF_IB's socket address (<infiniband/ib.h>), which rdma_cm takes and gives.
            .allowlist_type("sockaddr_ib")
            .allowlist_var("RDMA_.*|RAI_.*")
            .blocklist_type(VERBS_TYPES)
            // What verbs.h brings along, also rdma-verbs-sys's (or libc's, which it uses).
            .blocklist_type("_ibv_.*|_compat_ibv_.*|__u(16|32|64)|__be(16|32|64)")
            .blocklist_type("pthread_.*|__pthread_.*|__atomic_wide_counter.*|in6_addr__.*")
            // libc's socket types, as rdma-verbs-sys does.
            .blocklist_type("sockaddr|sockaddr_in6?|sockaddr_storage|sa_family_t|socklen_t|in_port_t|in_addr|in_addr_t|in6_addr")
            .bitfield_enum("rdma_cm_join_mc_attr_mask")
            // Anonymous enums (matched by their variant names) hold plain constants.
            .constified_enum("RDMA_MAX_.*|RDMA_OPTION_.*")
            .raw_line("#[allow(unused_imports)] use rdma_verbs_sys::*;")
            .raw_line("#[allow(unused_imports)] use libc::{sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage, socklen_t};"),
    );
}
