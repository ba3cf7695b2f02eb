//! Raw FFI bindings to libibverbs, the RDMA verbs library of
//! [rdma-core](https://github.com/linux-rdma/rdma-core).
//!
//! The declarations are bindgen's, from rdma-core's `<infiniband/verbs.h>`: generated ahead of
//! time and checked in for x86_64 and aarch64 Linux, or at build time from the installed
//! headers (see [below](#builds-without-rdma-cores-headers-or-libclang)). Everything named
//! `ibv_*` / `IBV_*` is bound:
//! - C enums are `#[repr(transparent)]` newtypes with associated constants
//!   (`ibv_wc_status::IBV_WC_SUCCESS`), so any value the library or a newer provider returns is
//!   representable; enums of bit flags (`ibv_access_flags`, `ibv_send_flags`, ...) also have
//!   `|` and `&`. Anonymous enums are plain constants (`IBV_LINK_LAYER_ETHERNET`).
//! - Struct layouts are checked against the C compiler's at build time.
//!
//! # The `static inline` verbs
//! Much of the verbs API (`ibv_post_send`, `ibv_poll_cq`, `ibv_req_notify_cq`,
//! `ibv_query_port`, the `ibv_wr_*` family, `ibv_create_qp_ex`, `ibv_create_cq_ex`,
//! `ibv_start_poll`, `ibv_alloc_mw`, `ibv_bind_mw`, `ibv_query_gid_ex`, ...) is `static inline`
//! in `verbs.h` and has no symbol in the shared library. This crate ports each of them to Rust
//! in [`inline`](crate#functions) (re-exported at the root), calling through the same provider
//! function pointers as the C header does.
//!
//! The alternative, bindgen's generated C wrappers, adds an out-of-line call per verb that
//! cannot be inlined into Rust callers without cross-language LTO. The ports compile to the
//! same code as the C inline functions: one load of the ops table and an indirect call into the
//! provider, plus, where the call returns a status, a test that the provider set the pointer
//! (`EOPNOTSUPP` if not, where C would call null: see [`inline`](crate#functions)). The benches (`benches/`) measure the hot-path verbs against the C tools.
//!
//! # Builds without rdma-core's headers or libclang
//! The bindings are generated ahead of time for x86_64 and aarch64 Linux (glibc), each for
//! its target's layouts, and checked in (`src/generated/<target>.rs`, which names the
//! rdma-core version it was generated from). A build for those targets uses them: it reads no
//! header and neither runs nor compiles bindgen, so it needs no libclang; and it compiles no C
//! (the `static inline` verbs are the Rust ports above). All it needs is libibverbs to link,
//! found with pkg-config: Debian's `libibverbs-dev` (which has `libibverbs.so` and
//! `libibverbs.pc`) and `pkg-config`, or `rdma-core-devel` on the RPM distributions. The
//! workspace's `scripts/check-bindings` keeps the checked-in files equal to what the headers
//! give, for both targets.
//!
//! With the feature `bindgen` (which `rdma-verbs`'s feature `bindgen` turns on), the build
//! generates the bindings from the installed `<infiniband/verbs.h>` instead, so that they are
//! the installed rdma-core's, declarations newer than the checked-in ones included; that needs
//! the headers and libclang (Debian: `clang libclang-dev`; RPM: `clang-devel`). A native build
//! for another target does the same by itself, with a warning; a cross build to one needs the
//! feature. Either stops with a message naming the package to install when something is
//! missing. docs.rs's builds (`DOCS_RS`) use the checked-in bindings, feature or not.
//!
//! # Linking
//! The crate links `libibverbs` (`links = "rdma-verbs-ibverbs"`, a key no other crate uses, so
//! that this crate and rust-ibverbs can share a build), of at least version 1.8 of its
//! pkg-config module (read from `libibverbs.pc`); docs.rs's builds link nothing. When it
//! generates its bindings, it exposes pkg-config's header directories to dependent build
//! scripts as `DEP_RDMA_VERBS_IBVERBS_INCLUDE`, which `rdmacm-sys`'s bindgen reads.
#![no_std]

// The generated bindings, in a module exempt from the lints C's names and layouts break,
// re-exported here: the build script (rdma-sys-build's `SysCrate::build`) writes it.
include!(concat!(env!("OUT_DIR"), "/bindings_module.rs"));

mod inline;
pub use inline::*;
