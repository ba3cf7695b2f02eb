//! Raw FFI bindings to libibumad, the user-space MAD (management datagram) library of
//! [rdma-core](https://github.com/linux-rdma/rdma-core).
//!
//! The declarations are bindgen's, from rdma-core's `<infiniband/umad.h>`: generated ahead of
//! time and checked in for x86_64 and aarch64 Linux, or at build time from the installed
//! header (see [below](#builds-without-rdma-cores-headers-or-libclang)). Everything named
//! `umad_*` / `UMAD_*` is bound, with the buffer layout `ib_user_mad` and its address
//! `ib_mad_addr`; struct layouts are checked against the C compiler's at build time.
//! `umad_alloc` and `umad_free` are `static inline` wrappers of `calloc`/`free` in C and are
//! not bound: allocate `umad_size() + 256` bytes yourself.
//!
//! The safe layer is the `ibumad` crate.
//!
//! # Builds without rdma-core's headers or libclang
//! The bindings are generated ahead of time for x86_64 and aarch64 Linux (glibc), each for
//! its target's layouts, and checked in (`src/generated/<target>.rs`, which names the
//! rdma-core version it was generated from). A build for those targets uses them: it reads no
//! header and neither runs nor compiles bindgen, so it needs no libclang, and it compiles no C.
//! All it needs is libibumad to link, found with pkg-config: Debian's `libibumad-dev` (which
//! has `libibumad.so` and `libibumad.pc`) and `pkg-config`, or `rdma-core-devel` on the RPM
//! distributions. The workspace's `scripts/check-bindings` keeps the checked-in files equal to
//! what the header gives, for both targets.
//!
//! With the feature `bindgen` (which `ibumad`'s feature `bindgen` turns on), the build
//! generates the bindings from the installed `<infiniband/umad.h>` instead, so that they are
//! the installed rdma-core's, declarations newer than the checked-in ones included; that needs
//! the header and libclang (Debian: `clang libclang-dev`; RPM: `clang-devel`). A native build
//! for another target does the same by itself, with a warning; a cross build to one needs the
//! feature. Either stops with a message naming the package to install when something is
//! missing. docs.rs's builds (`DOCS_RS`) use the checked-in bindings, feature or not.
//!
//! # Linking
//! The crate links `libibumad` (`links = "rdma-verbs-ibumad"`, a key no other crate uses);
//! docs.rs's builds link nothing. When it generates its bindings, it exposes pkg-config's
//! header directories to dependent build scripts as `DEP_RDMA_VERBS_IBUMAD_INCLUDE`.
#![no_std]

// The generated bindings, in a module exempt from the lints C's names and layouts break,
// re-exported here: the build script (rdma-sys-build's `SysCrate::build`) writes it.
include!(concat!(env!("OUT_DIR"), "/bindings_module.rs"));
