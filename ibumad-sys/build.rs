//! Generates the bindings to `<infiniband/umad.h>` with bindgen.
//!
//! The header is located with pkg-config (`libibumad.pc`, shipped by rdma-core's development
//! package); without it the build stops with a message naming the package to install.

use std::env;
use std::path::PathBuf;
use std::process;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/wrapper.h");

    let lib = match pkg_config::Config::new().probe("libibumad") {
        Ok(lib) => lib,
        Err(err) => {
            eprintln!(
                "error: libibumad was not found by pkg-config ({err}).\n\
                 ibumad-sys needs rdma-core's libibumad development header and library:\n\
                 \x20 Debian/Ubuntu:       apt-get install libibumad-dev\n\
                 \x20 Fedora/RHEL/SUSE:    dnf install rdma-core-devel  (zypper: rdma-core-devel)\n\
                 bindgen also needs libclang (Debian: libclang-dev; RPM: clang-devel)."
            );
            process::exit(1);
        }
    };

    for dir in &lib.include_paths {
        println!("cargo:include={}", dir.display());
    }

    let bindings = bindgen::Builder::default()
        .header("src/wrapper.h")
        .clang_args(
            lib.include_paths
                .iter()
                .map(|dir| format!("-I{}", dir.display())),
        )
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .allowlist_function("umad_.*")
        .allowlist_type("ib_user_mad|ib_mad_addr|umad_.*")
        .allowlist_var("UMAD_.*|IB_UMAD_.*")
        // `umad_alloc`/`umad_free` are static inline (calloc/free): no symbol to link.
        .blocklist_function("umad_alloc|umad_free")
        .default_enum_style(bindgen::EnumVariation::NewType {
            is_bitfield: false,
            is_global: false,
        })
        .constified_enum("UMAD_.*")
        .prepend_enum_name(false)
        .derive_default(true)
        .impl_debug(true)
        .layout_tests(true)
        .generate_comments(true)
        // The helpers of `ib_user_mad`'s flexible array member pass the workspace's
        // `unsafe_op_in_unsafe_fn`.
        .wrap_unsafe_ops(true)
        .use_core()
        .generate()
        .unwrap_or_else(|err| {
            eprintln!(
                "error: bindgen could not generate bindings for <infiniband/umad.h>: {err}\n\
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
