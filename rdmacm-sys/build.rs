//! Generates the bindings to `<rdma/rdma_cma.h>` and `<rdma/rdma_verbs.h>` with bindgen.
//!
//! The headers are located with pkg-config (`librdmacm.pc`, shipped by rdma-core's development
//! package); without them the build stops with a message naming the package to install. The
//! verbs types they use are not generated again: they come from `ibverbs-sys`, so values pass
//! between the two crates as they are.

use std::env;
use std::path::PathBuf;
use std::process;

/// The verbs types (`ibv_*`) that `ibverbs-sys` defines. `infiniband/sa.h`'s `ibv_sa_*` are not
/// among them (ibverbs-sys binds `verbs.h` only), so they are generated here. bindgen anchors
/// the pattern (`^...$`); the regex engine has no look-ahead, hence the spelling.
const VERBS_TYPES: &str = r"ibv_([^s].*|s[^a].*|sa?)";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/wrapper.h");

    let lib = match pkg_config::Config::new().probe("librdmacm") {
        Ok(lib) => lib,
        Err(err) => {
            eprintln!(
                "error: librdmacm was not found by pkg-config ({err}).\n\
                 rdmacm-sys needs rdma-core's development headers and library:\n\
                 \x20 Debian/Ubuntu:       apt-get install librdmacm-dev\n\
                 \x20 Fedora/RHEL/SUSE:    dnf install rdma-core-devel  (zypper: rdma-core-devel)\n\
                 bindgen also needs libclang (Debian: libclang-dev; RPM: clang-devel)."
            );
            process::exit(1);
        }
    };

    // The verbs headers may live elsewhere than librdmacm's (ibverbs-sys exports its path).
    let mut include_paths = lib.include_paths.clone();
    if let Some(dir) = env::var_os("DEP_RDMA_VERBS_IBVERBS_INCLUDE") {
        include_paths.push(PathBuf::from(dir));
    }
    for dir in &lib.include_paths {
        println!("cargo:include={}", dir.display());
    }

    let bindings = bindgen::Builder::default()
        .header("src/wrapper.h")
        .clang_args(include_paths.iter().map(|dir| format!("-I{}", dir.display())))
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .allowlist_function("rdma_.*")
        .allowlist_type("rdma_.*")
        .allowlist_var("RDMA_.*|RAI_.*")
        .blocklist_type(VERBS_TYPES)
        // What verbs.h brings along, also ibverbs-sys's (or libc's, which it uses).
        .blocklist_type("_ibv_.*|_compat_ibv_.*|__u(8|16|32|64)|__be(16|32|64)")
        .blocklist_type("pthread_.*|__pthread_.*|__atomic_wide_counter.*|in6_addr__.*")
        // libc's socket types, as ibverbs-sys does.
        .blocklist_type("sockaddr|sockaddr_in6?|sockaddr_storage|sa_family_t|socklen_t|in_port_t|in_addr|in_addr_t|in6_addr")
        .default_enum_style(bindgen::EnumVariation::NewType {
            is_bitfield: false,
            is_global: false,
        })
        .bitfield_enum("rdma_cm_join_mc_attr_mask")
        // Anonymous enums (matched by their variant names) hold plain constants.
        .constified_enum("RDMA_MAX_.*|RDMA_OPTION_.*")
        .prepend_enum_name(false)
        .derive_default(true)
        .impl_debug(true)
        .layout_tests(true)
        .generate_comments(true)
        .use_core()
        .raw_line("#[allow(unused_imports)] use rdma_verbs_sys::*;")
        .raw_line("#[allow(unused_imports)] use libc::{sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage, socklen_t};")
        .generate()
        .unwrap_or_else(|err| {
            eprintln!(
                "error: bindgen could not generate bindings for <rdma/rdma_cma.h>: {err}\n\
                 (is libclang installed? Debian: apt-get install libclang-dev clang)"
            );
            process::exit(1);
        });

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Err(err) = bindings.write_to_file(out.join("bindings.rs")) {
        eprintln!("error: cannot write bindings.rs: {err}");
        process::exit(1);
    }
}
