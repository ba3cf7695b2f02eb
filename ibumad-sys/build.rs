//! Generates the bindings to `<infiniband/umad.h>` with bindgen.
//!
//! The header is located with pkg-config (`libibumad.pc`, shipped by rdma-core's development
//! package); without it the build stops with a message naming the package to install. The rest
//! (docs.rs's checked-in bindings, their regeneration, bindgen's common settings) is the three
//! -sys crates' shared build helper's, `rdma-sys-build`.

use rdma_sys_build::{bindgen, SysCrate};

fn main() {
    let ibumad = SysCrate::new("libibumad", "<infiniband/umad.h>", "libibumad-dev")
        .needs("rdma-core's libibumad development header and library");
    ibumad.build(|builder: bindgen::Builder| {
        builder
            .allowlist_function("umad_.*")
            .allowlist_type("ib_user_mad|ib_mad_addr|umad_.*")
            .allowlist_var("UMAD_.*|IB_UMAD_.*")
            // `umad_alloc`/`umad_free` are static inline (calloc/free): no symbol to link.
            .blocklist_function("umad_alloc|umad_free")
            .constified_enum("UMAD_.*")
            // The helpers of `ib_user_mad`'s flexible array member pass the workspace's
            // `unsafe_op_in_unsafe_fn`.
            .wrap_unsafe_ops(true)
    });
}
