//! The bindings to `<infiniband/verbs.h>`: the checked-in ones of the target
//! (`src/generated/<target>.rs`), or, with the feature `bindgen` or for another target,
//! bindgen's from the installed headers, with the configuration below; and the link lines.
//!
//! libibverbs is located with pkg-config (`libibverbs.pc`, shipped by rdma-core's development
//! package); without it the build stops with a message naming the package to install. The
//! rest (the choice of bindings, their regeneration, bindgen's common settings) is the three
//! -sys crates' shared build helper's, `rdma-sys-build`.

use rdma_sys_build::{BindgenConfig, SysCrate};

/// Enums whose values are bit masks: generated as newtypes with `|`, `&` and friends.
const FLAG_ENUMS: &str = r"ibv_.*(_flags|_flags2|_mask|_caps|_cap_bits|_fields)";

fn main() {
    let ibverbs =
        SysCrate::new("libibverbs", "<infiniband/verbs.h>", "libibverbs-dev").min_version("1.8");
    ibverbs.build(
        BindgenConfig::new()
            .allowlist_function("ibv_.*")
            .allowlist_function("_ibv_query_gid_(ex|table)")
            .allowlist_type("ibv_.*")
            .allowlist_type("verbs_context")
            .allowlist_type("_compat_ibv_port_attr")
            .allowlist_var("IBV_.*")
            // `ibv_query_port` is a macro over an inline function in C; the Rust port in
            // `src/inline/` takes its place and calls the exported symbol where needed.
            .blocklist_function("ibv_query_port")
            // Use libc's definitions of the types verbs.h borrows from the system headers, so
            // that values pass between the two crates without casts.
            .blocklist_type("pthread_(mutex|cond)_t|__pthread_.*|__atomic_wide_counter.*|timespec|__time_t|__syscall_slong_t")
            .blocklist_type("in6_addr|sockaddr|sockaddr_in6?|sa_family_t|socklen_t|in_port_t|in_addr|in_addr_t")
            .bitfield_enum(FLAG_ENUMS)
            // Anonymous enums (matched by their variant names) hold plain constants.
            .constified_enum("IBV_.*")
            .raw_line("use libc::{pthread_cond_t, pthread_mutex_t, timespec};"),
    );
}
