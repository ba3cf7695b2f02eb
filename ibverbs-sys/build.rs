//! Generates the bindings to `<infiniband/verbs.h>` with bindgen.
//!
//! The headers are located with pkg-config (`libibverbs.pc`, shipped by rdma-core's development
//! package); without them the build stops with a message naming the package to install.

use std::env;
use std::path::PathBuf;
use std::process;

/// Enums whose values are bit masks: generated as newtypes with `|`, `&` and friends.
const FLAG_ENUMS: &str = r"ibv_.*(_flags|_flags2|_mask|_caps|_cap_bits|_fields)";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/wrapper.h");

    let lib = match pkg_config::Config::new()
        .atleast_version("1.8")
        .probe("libibverbs")
    {
        Ok(lib) => lib,
        Err(err) => {
            eprintln!(
                "error: libibverbs was not found by pkg-config ({err}).\n\
                 ibverbs-sys needs rdma-core's development headers and library:\n\
                 \x20 Debian/Ubuntu:       apt-get install libibverbs-dev\n\
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
        .allowlist_function("ibv_.*")
        .allowlist_function("_ibv_query_gid_(ex|table)")
        .allowlist_type("ibv_.*")
        .allowlist_type("verbs_context")
        .allowlist_type("_compat_ibv_port_attr")
        .allowlist_var("IBV_.*")
        // `ibv_query_port` is a macro over an inline function in C; the Rust port in
        // `inline.rs` takes its place and calls the exported symbol where needed.
        .blocklist_function("ibv_query_port")
        // Use libc's definitions of the types verbs.h borrows from the system headers, so
        // that values pass between the two crates without casts.
        .blocklist_type("pthread_(mutex|cond)_t|__pthread_.*|__atomic_wide_counter.*|timespec|__time_t|__syscall_slong_t")
        .blocklist_type("in6_addr|sockaddr|sockaddr_in6?|sa_family_t|socklen_t|in_port_t|in_addr|in_addr_t")
        .default_enum_style(bindgen::EnumVariation::NewType {
            is_bitfield: false,
            is_global: false,
        })
        .bitfield_enum(FLAG_ENUMS)
        // Anonymous enums (matched by their variant names) hold plain constants.
        .constified_enum("IBV_.*")
        .prepend_enum_name(false)
        .derive_default(true)
        .impl_debug(true)
        .layout_tests(true)
        .generate_comments(true)
        .use_core()
        .raw_line("use libc::{pthread_cond_t, pthread_mutex_t, timespec};")
        .generate()
        .unwrap_or_else(|err| {
            eprintln!(
                "error: bindgen could not generate bindings for <infiniband/verbs.h>: {err}\n\
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
