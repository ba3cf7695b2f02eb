//! Raw FFI bindings to librdmacm, the RDMA connection manager of
//! [rdma-core](https://github.com/linux-rdma/rdma-core).
//!
//! The declarations are bindgen's, from rdma-core's `<rdma/rdma_cma.h>` and
//! `<rdma/rdma_verbs.h>`: generated ahead of time and checked in for x86_64 and aarch64 Linux,
//! or at build time from the installed headers (see
//! [below](#builds-without-rdma-cores-headers-or-libclang)). Everything named `rdma_*` /
//! `RDMA_*` / `RAI_*`
//! is bound, in the style of `rdma-verbs-sys`: C enums are `#[repr(transparent)]` newtypes with
//! associated constants (`rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED`), anonymous enums are
//! plain constants (`RDMA_MAX_INIT_DEPTH`), struct layouts are checked against the C
//! compiler's.
//!
//! The verbs types these headers use (`ibv_context`, `ibv_pd`, `ibv_qp`, `ibv_qp_init_attr`,
//! ...) are `rdma-verbs-sys`'s own, not copies, so pointers pass between the two crates without
//! casts; the socket types are `libc`'s. `infiniband/sa.h`'s path record types (`ibv_sa_*`),
//! which `rdma-verbs-sys` does not bind, are generated here.
//!
//! # The `static inline` helpers
//! `rdma_get_local_addr`, `rdma_get_peer_addr` and the whole of `rdma_verbs.h`'s helpers
//! (`rdma_reg_msgs`, `rdma_post_send`, `rdma_get_recv_comp`, ...) are `static inline` and have
//! no symbol in the library: [`inline`](crate#functions) ports each of them to Rust
//! (re-exported at the root) over `rdma-verbs-sys`'s verbs.
//!
//! # Builds without rdma-core's headers or libclang
//! The bindings are generated ahead of time for x86_64 and aarch64 Linux (glibc), each for
//! its target's layouts, and checked in (`src/generated/<target>.rs`, which names the
//! rdma-core version it was generated from). A build for those targets uses them: it reads no
//! header and neither runs nor compiles bindgen, so it needs no libclang; and it compiles no C
//! (the `static inline` helpers are the Rust ports above). All it needs is librdmacm and
//! libibverbs to link, found with pkg-config: Debian's `librdmacm-dev` and `libibverbs-dev`
//! (which have the `.so` and `.pc` files) and `pkg-config`, or `rdma-core-devel` on the RPM
//! distributions. The workspace's `scripts/check-bindings` keeps the checked-in files equal to
//! what the headers give, for both targets.
//!
//! With the feature `bindgen` (which `rdma-verbs`'s features `cm` and `bindgen` together turn
//! on), the build generates the bindings from the installed headers instead, and so does
//! `rdma-verbs-sys`, whose verbs types they use: they are then the installed rdma-core's,
//! declarations newer than the checked-in ones included; that needs the headers and libclang
//! (Debian: `clang libclang-dev`; RPM: `clang-devel`). A native build for another target does
//! the same by itself, with a warning; a cross build to one needs the feature. Either stops
//! with a message naming the package to install when something is missing. docs.rs's builds
//! (`DOCS_RS`) use the checked-in bindings, feature or not.
//!
//! # Linking
//! The crate links `librdmacm` (`links = "rdma-verbs-rdmacm"`, a key no other crate uses);
//! docs.rs's builds link nothing. When it generates its bindings, it exposes pkg-config's
//! header directories to dependent build scripts as `DEP_RDMA_VERBS_RDMACM_INCLUDE`.
#![no_std]

// The generated bindings, in a module exempt from the lints C's names and layouts break,
// re-exported here: the build script (rdma-sys-build's `SysCrate::build`) writes it.
include!(concat!(env!("OUT_DIR"), "/bindings_module.rs"));

mod inline;
pub use inline::*;
