//! Generates the bindings to `<infiniband/verbs.h>` with bindgen.
//!
//! The headers are located with pkg-config (`libibverbs.pc`, shipped by rdma-core's development
//! package); without them the build stops with a message naming the package to install.
//!
//! Two other modes, both set by environment variables:
//! - `DOCS_RS` (set by docs.rs, whose build image may lack rdma-core's headers): the bindings
//!   checked in at [`CHECKED_IN`] are used as they are. Neither pkg-config nor bindgen runs and
//!   nothing is linked (documentation needs no linking).
//! - `RDMA_VERBS_REGENERATE_BINDINGS=<dir>` (`scripts/check-bindings`): a normal build that also
//!   writes the bindings, with a header naming what they were generated from, to
//!   `<dir>/rdma-verbs-sys.rs`, the would-be content of [`CHECKED_IN`].
//!
//! Both the build and the regeneration go through [`generate`], bindgen's one configuration.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process;

/// The bindings generated ahead of time, for docs.rs.
const CHECKED_IN: &str = "src/generated/x86_64-unknown-linux-gnu.rs";
/// The target they were generated for: their layouts and layout checks are this target's.
const CHECKED_IN_TARGET: &str = "x86_64-unknown-linux-gnu";
/// The environment variable naming the directory to regenerate the checked-in bindings into.
const REGENERATE: &str = "RDMA_VERBS_REGENERATE_BINDINGS";
/// What is bound, for the messages and the checked-in file's header.
const HEADERS: &str = "<infiniband/verbs.h>";
/// The pkg-config module (and library) of the headers.
const LIBRARY: &str = "libibverbs";

/// Enums whose values are bit masks: generated as newtypes with `|`, `&` and friends.
const FLAG_ENUMS: &str = r"ibv_.*(_flags|_flags2|_mask|_caps|_cap_bits|_fields)";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/wrapper.h");
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    println!("cargo:rerun-if-env-changed={REGENERATE}");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));

    if env::var_os("DOCS_RS").is_some() {
        use_checked_in(&out.join("bindings.rs"));
        return;
    }

    let lib = match pkg_config::Config::new()
        .atleast_version("1.8")
        .probe(LIBRARY)
    {
        Ok(lib) => lib,
        Err(err) => {
            eprintln!(
                "error: libibverbs was not found by pkg-config ({err}).\n\
                 rdma-verbs-sys needs rdma-core's development headers and library:\n\
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

    let bindings = generate(&lib.include_paths);
    write(&out.join("bindings.rs"), &bindings.to_string());
    if let Some(dir) = env::var_os(REGENERATE) {
        regenerate(Path::new(&dir), &bindings, &lib.version);
    }
}

/// bindgen's configuration, shared by the build and the regeneration of [`CHECKED_IN`].
fn generate(include_paths: &[PathBuf]) -> bindgen::Bindings {
    let builder = bindgen::Builder::default()
        .header("src/wrapper.h")
        .clang_args(include_paths.iter().map(|dir| format!("-I{}", dir.display())))
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
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
        // The same text whichever rustfmt is installed, so the checked-in copy compares.
        .formatter(bindgen::Formatter::Prettyplease)
        .raw_line("use libc::{pthread_cond_t, pthread_mutex_t, timespec};");
    run(builder)
}

// What follows is the same in the three -sys crates' build scripts.

/// Runs bindgen, or exits with a message saying what is missing.
fn run(builder: bindgen::Builder) -> bindgen::Bindings {
    // bindgen panics when it cannot load libclang: its message (without a backtrace), then
    // what to install.
    std::panic::set_hook(Box::new(|info| eprintln!("{info}")));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || builder.generate()));
    drop(std::panic::take_hook());
    match result {
        Ok(Ok(bindings)) => bindings,
        Ok(Err(err)) => {
            eprintln!("error: bindgen could not generate the bindings to {HEADERS}: {err}");
            process::exit(1);
        }
        Err(_) => {
            eprintln!(
                "error: bindgen failed (see above); it needs libclang:\n\
                 \x20 Debian/Ubuntu:       apt-get install libclang-dev\n\
                 \x20 Fedora/RHEL/SUSE:    dnf install clang-devel  (zypper: clang-devel)\n\
                 (or LIBCLANG_PATH naming the directory that holds libclang.so)."
            );
            process::exit(1);
        }
    }
}

/// docs.rs: the checked-in bindings take the generated ones' place.
fn use_checked_in(to: &Path) {
    println!("cargo:rerun-if-changed={CHECKED_IN}");
    let target = env::var("TARGET").unwrap_or_default();
    if target != CHECKED_IN_TARGET {
        println!("cargo:warning=the checked-in bindings are {CHECKED_IN_TARGET}'s, not {target}'s");
    }
    if let Err(err) = fs::copy(CHECKED_IN, to) {
        eprintln!("error: cannot copy {CHECKED_IN} to {}: {err}", to.display());
        process::exit(1);
    }
}

/// Writes what [`CHECKED_IN`] should hold into `dir`, with the header naming its origin.
fn regenerate(dir: &Path, bindings: &bindgen::Bindings, pc_version: &str) {
    let target = env::var("TARGET").unwrap_or_default();
    if target != CHECKED_IN_TARGET {
        eprintln!("error: {REGENERATE}: the checked-in bindings are {CHECKED_IN_TARGET}'s; this build is for {target}");
        process::exit(1);
    }
    // rdma-core versions its libraries' pkg-config modules as <ABI version>.<rdma-core version>
    // (libibverbs 1.14.44.0 is rdma-core 44.0's).
    let rdma_core = pc_version.splitn(3, '.').nth(2).unwrap_or(pc_version);
    let header = format!(
        "// Bindings to {HEADERS}, generated ahead of time by build.rs.\n\
         //\n\
         // This is what docs.rs shows: its builds set DOCS_RS, and build.rs then uses this file\n\
         // instead of running bindgen on the system's headers (which docs.rs may lack). Every\n\
         // other build generates the bindings from the installed rdma-core at build time.\n\
         //\n\
         // rdma-core:  {rdma_core} ({LIBRARY} {pc_version}, found by pkg-config)\n\
         // target:     {target} (the layouts and their compile-time checks are this target's)\n\
         // libclang:   {clang}\n\
         //\n\
         // Do not edit: `scripts/check-bindings --update` regenerates it from the system's headers,\n\
         // and `scripts/check-bindings` (CI) fails when it differs from them.\n\n",
        clang = bindgen::clang_version().full,
    );
    let path = dir.join(format!(
        "{}.rs",
        env::var("CARGO_PKG_NAME").unwrap_or_default()
    ));
    write(&path, &(header + &bindings.to_string()));
}

fn write(path: &Path, text: &str) {
    if let Err(err) = fs::write(path, text) {
        eprintln!("error: cannot write {}: {err}", path.display());
        process::exit(1);
    }
}
