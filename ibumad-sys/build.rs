//! The bindings to `<infiniband/umad.h>`: the checked-in ones of the target
//! (`src/generated/<target>.rs`), or, with the feature `bindgen` or for another target,
//! bindgen's from the installed header, with the configuration below; and the link lines.
//!
//! libibumad is located with pkg-config (`libibumad.pc`, shipped by rdma-core's development
//! package); without it the build stops with a message naming the package to install. The rest
//! (the choice of bindings, their regeneration, bindgen's common settings) is the three -sys
//! crates' shared build helper's, `rdma-sys-build`.

use rdma_sys_build::{BindgenConfig, SysCrate};

fn main() {
    let ibumad = SysCrate::new("libibumad", "<infiniband/umad.h>", "libibumad-dev")
        .needs("rdma-core's libibumad development package");
    ibumad.build(
        BindgenConfig::new()
            .allowlist_function("umad_.*")
            .allowlist_type("ib_user_mad|ib_mad_addr|umad_.*")
            .allowlist_var("UMAD_.*|IB_UMAD_.*")
            // `umad_alloc`/`umad_free` are static inline (calloc/free): no symbol to link.
            .blocklist_function("umad_alloc|umad_free")
            .constified_enum("UMAD_.*")
            // The helpers of `ib_user_mad`'s flexible array member pass the workspace's
            // `unsafe_op_in_unsafe_fn`.
            .wrap_unsafe_ops(true),
    );
}
