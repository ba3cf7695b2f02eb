//! The build scripts' shared half of the rdma-verbs -sys crates (`rdma-verbs-sys`,
//! `rdmacm-sys`, `ibumad-sys`): each describes its library in a [`SysCrate`] and its part of
//! bindgen's configuration (allow and block lists) in a [`BindgenConfig`], and hands both to
//! [`SysCrate::build`], which does the rest.
//!
//! # Where the bindings come from
//! Each crate carries its bindings generated ahead of time for the targets of
//! [`CHECKED_IN_TARGETS`] (x86_64 and aarch64 Linux with glibc), as
//! `src/generated/<target>.rs` ([`CHECKED_IN_DIR`]). A build for one of them uses that file: it
//! reads no header and needs no libclang, and bindgen is not even compiled (it is an optional
//! dependency of this crate, behind its feature `bindgen`). No C is compiled either: the
//! crates port the headers' `static inline` functions to Rust. Such a build needs the
//! libraries to link, nothing more (see [Linking](#linking)).
//!
//! bindgen generates the bindings from the installed headers instead, from `src/wrapper.h`
//! into `$OUT_DIR/bindings.rs`, with the include directories pkg-config names:
//! - when the crate's feature `bindgen` is on (it turns on this crate's): the bindings then
//!   are those of the installed rdma-core, declarations newer than the checked-in ones
//!   included;
//! - for a target without checked-in bindings, with a `cargo:warning` saying so. The -sys
//!   crates turn on this crate's `bindgen` when the *host* is not one of those targets (Cargo
//!   matches a build-dependency's `cfg` against the host, which runs the build script), so a
//!   native build anywhere else generates its bindings; a cross build from x86_64 or aarch64
//!   Linux to another target stops with a message asking for the crate's feature `bindgen`.
//!
//! Without the headers, or without libclang, such a build stops with a message naming the
//! packages to install (Debian and RPM).
//!
//! # Linking
//! Every build but docs.rs's probes pkg-config for the library (its `.pc` file, which
//! rdma-core's development package ships with the unversioned `.so` the linker needs): it
//! checks the library's version ([`SysCrate::min_version`]: the `.pc` file holds it, no header
//! is read) and emits the link lines. Without the library the build stops with a message
//! naming the packages to install. When cross-compiling, pkg-config must be pointed at the
//! target's libraries (`PKG_CONFIG_SYSROOT_DIR`, `PKG_CONFIG_PATH_<target>`: see the
//! pkg-config crate).
//!
//! A build that generates its bindings also exports pkg-config's include directories as
//! `cargo:include`, which the build scripts of the crates depending on it read as
//! `DEP_<LINKS>_INCLUDE` ([`SysCrate::more_headers_from`]): rdmacm-sys's bindgen needs the
//! verbs headers' directory.
//!
//! # The bindings module
//! Every build also writes [`MODULE`], the crate's glue to the bindings: a private `bindings`
//! module that includes them, exempt from the lints C's names and layouts break
//! ([`ALLOWED_LINTS`] and the crate's [`SysCrate::allow`]), re-exported at the root. The
//! crate's `lib.rs` includes it at its root:
//!
//! ```ignore
//! include!(concat!(env!("OUT_DIR"), "/bindings_module.rs"));
//! ```
//!
//! # Environment variables
//! - `DOCS_RS` (set by docs.rs, whose build image may lack rdma-core): the checked-in
//!   bindings are used even with the feature `bindgen` (docs.rs turns every feature on),
//!   pkg-config does not run and nothing is linked (documentation needs no linking). For a
//!   target without checked-in bindings, the first of [`CHECKED_IN_TARGETS`]'s are
//!   documented, with a warning.
//! - `RDMA_VERBS_REGENERATE_BINDINGS=<dir>` ([`REGENERATE`], used by `scripts/check-bindings`):
//!   the build generates its bindings with bindgen (which this crate's `bindgen` must have
//!   compiled in) and writes, for each of [`CHECKED_IN_TARGETS`], the bindings with a header
//!   naming what they were generated from to `<dir>/<package>/<target>.rs`: the would-be
//!   content of the checked-in file. The targets other than the build's are generated with
//!   clang's `--target`, which needs that target's C library headers where clang finds them
//!   (for aarch64 on a Debian x86_64 host: `gcc-aarch64-linux-gnu` and
//!   `libc6-dev-arm64-cross`); rdma-core's headers are the same for every target.
//!
//! The build and the regeneration use one bindgen configuration: the crate's, then the
//! settings common to the three crates.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process;

mod config;
#[cfg(feature = "bindgen")]
mod generate;

pub use config::BindgenConfig;

/// The header each -sys crate binds, which includes the library's headers.
pub const WRAPPER: &str = "src/wrapper.h";
/// The directory of the bindings generated ahead of time (relative to the crate's
/// directory): `<target>.rs` for each of [`CHECKED_IN_TARGETS`].
pub const CHECKED_IN_DIR: &str = "src/generated";
/// The targets whose bindings are checked in, each generated for that target (the layouts
/// and their compile-time checks are the target's). The -sys crates' `Cargo.toml` give
/// hosts other than these the feature `bindgen` of this crate: the two lists go together.
pub const CHECKED_IN_TARGETS: &[&str] = &["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];
/// The environment variable naming the directory to regenerate the checked-in bindings into.
pub const REGENERATE: &str = "RDMA_VERBS_REGENERATE_BINDINGS";
/// The file in `$OUT_DIR` that the -sys crate's `lib.rs` includes: the `bindings` module over
/// `$OUT_DIR/bindings.rs`, with its lint exemptions, and its re-export.
pub const MODULE: &str = "bindings_module.rs";
/// The lints the bindings of every -sys crate are exempt from: C's names, undocumented
/// items, bindgen's unsafe blocks without comments and C's doc comments, which are not
/// rustdoc's Markdown.
pub const ALLOWED_LINTS: &[&str] = &[
    "non_camel_case_types",
    "non_snake_case",
    "non_upper_case_globals",
    "missing_docs",
    "clippy::all",
    "clippy::undocumented_unsafe_blocks",
    "rustdoc::broken_intra_doc_links",
    "rustdoc::invalid_html_tags",
];

/// The file in `$OUT_DIR` that holds the bindings (bindgen's output or the checked-in copy).
const BINDINGS: &str = "bindings.rs";

/// One -sys crate's library: what to probe and what to say when it is missing. Made with
/// [`SysCrate::new`] (what every crate gives) and chained setters for the rest, so that a
/// setting added later breaks no build script.
#[derive(Debug, Clone, Copy)]
pub struct SysCrate<'a> {
    library: &'a str,
    min_version: Option<&'a str>,
    headers: &'a str,
    needs: &'a str,
    debian_package: &'a str,
    more_headers_from: Option<&'a str>,
    allow: &'a [&'a str],
}

impl<'a> SysCrate<'a> {
    /// The library of pkg-config module `library` (`libibverbs`), binding `headers` (for the
    /// messages and the checked-in file's header: `<infiniband/verbs.h>`), whose development
    /// files (headers, pkg-config file, the `.so` to link) the Debian package
    /// `debian_package` holds (`libibverbs-dev`; on the RPM distributions, rdma-core-devel
    /// holds all of them). Any version; the crate needs "rdma-core's development package"; no
    /// more headers; no lints allowed but [`ALLOWED_LINTS`].
    pub fn new(library: &'a str, headers: &'a str, debian_package: &'a str) -> Self {
        SysCrate {
            library,
            min_version: None,
            headers,
            needs: "rdma-core's development package",
            debian_package,
            more_headers_from: None,
            allow: &[],
        }
    }

    /// The oldest version of the pkg-config module accepted.
    pub fn min_version(mut self, version: &'a str) -> Self {
        self.min_version = Some(version);
        self
    }

    /// What the crate needs, for the message when the library is missing.
    pub fn needs(mut self, needs: &'a str) -> Self {
        self.needs = needs;
        self
    }

    /// An environment variable naming one more directory of headers for bindgen, searched
    /// after the library's (a dependency's `cargo:include`, as `DEP_<LINKS>_INCLUDE`).
    pub fn more_headers_from(mut self, var: &'a str) -> Self {
        self.more_headers_from = Some(var);
        self
    }

    /// Lints the crate's bindings are exempt from besides [`ALLOWED_LINTS`], for what its
    /// bindgen configuration makes them contain.
    pub fn allow(mut self, lints: &'a [&'a str]) -> Self {
        self.allow = lints;
        self
    }
}

impl SysCrate<'_> {
    /// The build script: writes `$OUT_DIR/bindings.rs` (the checked-in bindings, or bindgen's
    /// from `config` and the settings common to the crates) and [`MODULE`], and the link lines,
    /// or exits with a message saying what is missing.
    pub fn build(&self, config: BindgenConfig<'_>) {
        println!("cargo:rerun-if-changed=build.rs");
        println!("cargo:rerun-if-changed={WRAPPER}");
        println!("cargo:rerun-if-env-changed=DOCS_RS");
        println!("cargo:rerun-if-env-changed={REGENERATE}");
        let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        write(&out.join(MODULE), &self.module());
        let target = env::var("TARGET").expect("cargo sets TARGET");
        let checked_in = CHECKED_IN_TARGETS.contains(&target.as_str());

        if env::var_os("DOCS_RS").is_some() {
            let documented = if checked_in {
                &target
            } else {
                let first = CHECKED_IN_TARGETS[0];
                println!(
                    "cargo:warning=no bindings are checked in for {target}: documenting {first}'s"
                );
                first
            };
            use_checked_in(documented, &out.join(BINDINGS));
            return;
        }

        let lib = self.probe();
        // The crate's own feature (the build script's environment is the crate's), not this
        // crate's, which another -sys crate may have turned on.
        let feature = env::var_os("CARGO_FEATURE_BINDGEN").is_some();
        if checked_in && !feature && env::var_os(REGENERATE).is_none() {
            use_checked_in(&target, &out.join(BINDINGS));
            return;
        }
        // Said when bindgen is there to do it; `generate` says how to get it otherwise.
        if !checked_in && !feature && cfg!(feature = "bindgen") {
            println!(
                "cargo:warning=no bindings are checked in for {target} (only for {}): bindgen generates them from the installed headers",
                CHECKED_IN_TARGETS.join(", ")
            );
        }
        self.generate(&lib, config, &target, &out.join(BINDINGS));
    }

    /// The text of [`MODULE`]: the `bindings` module with its lint exemptions, re-exported.
    fn module(&self) -> String {
        let lints: String = ALLOWED_LINTS
            .iter()
            .chain(self.allow)
            .map(|lint| format!("    {lint},\n"))
            .collect();
        format!(
            "// Written by rdma-sys-build's SysCrate::build and included by the crate's lib.rs.\n\n\
             // What bindgen generated from {headers}:\n\
             // C's names, layouts and doc comments, which the workspace lints do not apply to.\n\
             #[allow(\n{lints})]\n\
             mod bindings {{\n\
             \x20   include!(concat!(env!(\"OUT_DIR\"), \"/{BINDINGS}\"));\n\
             }}\n\
             pub use bindings::*;\n",
            headers = self.headers,
        )
    }

    /// pkg-config's answer (having emitted the link lines), or exits with a message naming
    /// the packages to install.
    fn probe(&self) -> pkg_config::Library {
        let mut config = pkg_config::Config::new();
        if let Some(version) = self.min_version {
            config.atleast_version(version);
        }
        match config.probe(self.library) {
            Ok(lib) => lib,
            // The packages below would be the host's.
            Err(err @ pkg_config::Error::CrossCompilation) => {
                eprintln!(
                    "error: {package} links {library}, which pkg-config must find for the target: {err}",
                    package = package(),
                    library = self.library,
                );
                process::exit(1);
            }
            Err(err) => {
                eprintln!(
                    "error: {library} was not found by pkg-config ({err}).\n\
                     {package} needs {needs}:\n\
                     \x20 Debian/Ubuntu:       apt-get install {debian} pkg-config\n\
                     \x20 Fedora/RHEL/SUSE:    dnf install rdma-core-devel  (zypper: rdma-core-devel)",
                    library = self.library,
                    package = package(),
                    needs = self.needs,
                    debian = self.debian_package,
                );
                process::exit(1);
            }
        }
    }

    /// Without bindgen compiled in: says how to get it, and exits.
    #[cfg(not(feature = "bindgen"))]
    fn generate(&self, _: &pkg_config::Library, _: BindgenConfig<'_>, target: &str, _: &Path) {
        let why = if CHECKED_IN_TARGETS.contains(&target) {
            format!("{REGENERATE} is set")
        } else {
            format!(
                "no bindings are checked in for {target} (only for {})",
                CHECKED_IN_TARGETS.join(", ")
            )
        };
        eprintln!(
            "error: {why}: {package} must generate its bindings to {headers}, and rdma-sys-build was \
             built without bindgen.\n\
             Turn on {package}'s feature `bindgen` (`cargo build -F {package}/bindgen`; rdma-verbs and \
             ibumad forward their feature `bindgen` to their -sys crates); bindgen needs libclang.",
            package = package(),
            headers = self.headers,
        );
        process::exit(1);
    }
}

/// The package whose build script this is.
fn package() -> String {
    env::var("CARGO_PKG_NAME").unwrap_or_default()
}

/// The checked-in bindings of `target`, relative to the crate's directory.
fn checked_in(target: &str) -> PathBuf {
    Path::new(CHECKED_IN_DIR).join(format!("{target}.rs"))
}

/// Copies the checked-in bindings of `target` to `to`.
fn use_checked_in(target: &str, to: &Path) {
    let from = checked_in(target);
    println!("cargo:rerun-if-changed={}", from.display());
    if let Err(err) = fs::copy(&from, to) {
        eprintln!(
            "error: cannot copy {} to {}: {err}",
            from.display(),
            to.display()
        );
        process::exit(1);
    }
}

/// Writes `text` to `path`, or exits saying why it could not.
fn write(path: &Path, text: &str) {
    if let Err(err) = fs::write(path, text) {
        eprintln!("error: cannot write {}: {err}", path.display());
        process::exit(1);
    }
}
