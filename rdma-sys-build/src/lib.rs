//! The build scripts' shared half of the rdma-verbs -sys crates (`rdma-verbs-sys`,
//! `rdmacm-sys`, `ibumad-sys`): each describes its library in a [`SysCrate`] and hands its
//! bindgen allow and block lists to [`SysCrate::build`], which does the rest.
//!
//! A normal build locates the headers with pkg-config (the library's `.pc` file, shipped by
//! rdma-core's development package) and generates the bindings from `src/wrapper.h` with
//! bindgen into `$OUT_DIR/bindings.rs`; without the headers, or without libclang, it stops
//! with a message naming the packages to install (Debian and RPM).
//!
//! Every build also writes [`MODULE`], the crate's glue to the bindings: a private `bindings`
//! module that includes them, exempt from the lints C's names and layouts break
//! ([`ALLOWED_LINTS`] and the crate's [`SysCrate::allow`]), re-exported at the root. The
//! crate's `lib.rs` includes it at its root:
//!
//! ```ignore
//! include!(concat!(env!("OUT_DIR"), "/bindings_module.rs"));
//! ```
//!
//! Two other modes, both set by environment variables:
//! - `DOCS_RS` (set by docs.rs, whose build image may lack rdma-core's headers): the bindings
//!   checked in at [`CHECKED_IN`] are used as they are. Neither pkg-config nor bindgen runs and
//!   nothing is linked (documentation needs no linking).
//! - `RDMA_VERBS_REGENERATE_BINDINGS=<dir>` ([`REGENERATE`], used by `scripts/check-bindings`):
//!   a normal build that also writes the bindings, with a header naming what they were
//!   generated from, to `<dir>/<package>.rs`, the would-be content of [`CHECKED_IN`].
//!
//! Both the build and the regeneration use one bindgen configuration: the crate's, then the
//! settings common to the three crates.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process;

/// The bindgen the -sys crates configure (re-exported, so that theirs is this crate's).
pub use bindgen;

/// The header each -sys crate binds, which includes the library's headers.
pub const WRAPPER: &str = "src/wrapper.h";
/// The bindings generated ahead of time, for docs.rs (relative to the crate's directory).
pub const CHECKED_IN: &str = "src/generated/x86_64-unknown-linux-gnu.rs";
/// The target they were generated for: their layouts and layout checks are this target's.
pub const CHECKED_IN_TARGET: &str = "x86_64-unknown-linux-gnu";
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

/// The file in `$OUT_DIR` that holds bindgen's output (or the checked-in copy of it).
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
    /// messages and the checked-in file's header: `<infiniband/verbs.h>`), whose headers the
    /// Debian package `debian_package` holds (`libibverbs-dev`; on the RPM distributions,
    /// rdma-core-devel holds all of them). Any version; the crate needs "rdma-core's
    /// development headers and library"; no more headers; no lints allowed but
    /// [`ALLOWED_LINTS`].
    pub fn new(library: &'a str, headers: &'a str, debian_package: &'a str) -> Self {
        SysCrate {
            library,
            min_version: None,
            headers,
            needs: "rdma-core's development headers and library",
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

    /// An environment variable naming one more directory of headers, searched after the
    /// library's (a dependency's `cargo:include`, as `DEP_<LINKS>_INCLUDE`).
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
    /// The build script: writes `$OUT_DIR/bindings.rs` and [`MODULE`], or exits with a
    /// message saying what is missing. `configure` adds the crate's part of bindgen's
    /// configuration (its allow and block lists, enums, raw lines) to a builder that has the
    /// header and the include paths; the settings common to the crates follow it.
    pub fn build(&self, configure: impl FnOnce(bindgen::Builder) -> bindgen::Builder) {
        println!("cargo:rerun-if-changed=build.rs");
        println!("cargo:rerun-if-changed={WRAPPER}");
        println!("cargo:rerun-if-env-changed=DOCS_RS");
        println!("cargo:rerun-if-env-changed={REGENERATE}");
        let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        write(&out.join(MODULE), &self.module());

        if env::var_os("DOCS_RS").is_some() {
            use_checked_in(&out.join(BINDINGS));
            return;
        }

        let lib = self.probe();
        let mut include_paths = lib.include_paths.clone();
        if let Some(dir) = self.more_headers_from.and_then(env::var_os) {
            include_paths.push(PathBuf::from(dir));
        }
        for dir in &lib.include_paths {
            println!("cargo:include={}", dir.display());
        }

        let bindings = self.generate(&include_paths, configure);
        write(&out.join(BINDINGS), &bindings.to_string());
        if let Some(dir) = env::var_os(REGENERATE) {
            self.regenerate(Path::new(&dir), &bindings, &lib.version);
        }
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

    /// pkg-config's answer, or exits with a message naming the packages to install.
    fn probe(&self) -> pkg_config::Library {
        let mut config = pkg_config::Config::new();
        if let Some(version) = self.min_version {
            config.atleast_version(version);
        }
        match config.probe(self.library) {
            Ok(lib) => lib,
            Err(err) => {
                eprintln!(
                    "error: {library} was not found by pkg-config ({err}).\n\
                     {package} needs {needs}:\n\
                     \x20 Debian/Ubuntu:       apt-get install {debian}\n\
                     \x20 Fedora/RHEL/SUSE:    dnf install rdma-core-devel  (zypper: rdma-core-devel)\n\
                     bindgen also needs libclang (Debian: libclang-dev; RPM: clang-devel).",
                    library = self.library,
                    package = env::var("CARGO_PKG_NAME").unwrap_or_default(),
                    needs = self.needs,
                    debian = self.debian_package,
                );
                process::exit(1);
            }
        }
    }

    /// bindgen's configuration, shared by the build and the regeneration of [`CHECKED_IN`].
    fn generate(
        &self,
        include_paths: &[PathBuf],
        configure: impl FnOnce(bindgen::Builder) -> bindgen::Builder,
    ) -> bindgen::Bindings {
        let builder = bindgen::Builder::default()
            .header(WRAPPER)
            .clang_args(
                include_paths
                    .iter()
                    .map(|dir| format!("-I{}", dir.display())),
            )
            .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
        let builder = configure(builder)
            .default_enum_style(bindgen::EnumVariation::NewType {
                is_bitfield: false,
                is_global: false,
            })
            .prepend_enum_name(false)
            .derive_default(true)
            .impl_debug(true)
            .layout_tests(true)
            .generate_comments(true)
            .use_core()
            // The same text whichever rustfmt is installed, so the checked-in copy compares.
            .formatter(bindgen::Formatter::Prettyplease);
        self.run(builder)
    }

    /// Runs bindgen, or exits with a message saying what is missing.
    fn run(&self, builder: bindgen::Builder) -> bindgen::Bindings {
        // bindgen panics when it cannot load libclang: its message (without a backtrace), then
        // what to install.
        std::panic::set_hook(Box::new(|info| eprintln!("{info}")));
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || builder.generate()));
        drop(std::panic::take_hook());
        match result {
            Ok(Ok(bindings)) => bindings,
            Ok(Err(err)) => {
                eprintln!(
                    "error: bindgen could not generate the bindings to {}: {err}",
                    self.headers
                );
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

    /// Writes what [`CHECKED_IN`] should hold into `dir`, with the header naming its origin.
    fn regenerate(&self, dir: &Path, bindings: &bindgen::Bindings, pc_version: &str) {
        let target = env::var("TARGET").unwrap_or_default();
        if target != CHECKED_IN_TARGET {
            eprintln!("error: {REGENERATE}: the checked-in bindings are {CHECKED_IN_TARGET}'s; this build is for {target}");
            process::exit(1);
        }
        // rdma-core versions its libraries' pkg-config modules as <ABI version>.<rdma-core
        // version> (libibverbs 1.14.44.0 is rdma-core 44.0's).
        let rdma_core = pc_version.splitn(3, '.').nth(2).unwrap_or(pc_version);
        let header = format!(
            "// Bindings to {headers}, generated ahead of time by build.rs.\n\
             //\n\
             // This is what docs.rs shows: its builds set DOCS_RS, and build.rs then uses this file\n\
             // instead of running bindgen on the system's headers (which docs.rs may lack). Every\n\
             // other build generates the bindings from the installed rdma-core at build time.\n\
             //\n\
             // rdma-core:  {rdma_core} ({library} {pc_version}, found by pkg-config)\n\
             // target:     {target} (the layouts and their compile-time checks are this target's)\n\
             // libclang:   {clang}\n\
             //\n\
             // Do not edit: `scripts/check-bindings --update` regenerates it from the system's headers,\n\
             // and `scripts/check-bindings` (CI) fails when it differs from them.\n\n",
            headers = self.headers,
            library = self.library,
            clang = bindgen::clang_version().full,
        );
        let path = dir.join(format!(
            "{}.rs",
            env::var("CARGO_PKG_NAME").unwrap_or_default()
        ));
        write(&path, &(header + &bindings.to_string()));
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

fn write(path: &Path, text: &str) {
    if let Err(err) = fs::write(path, text) {
        eprintln!("error: cannot write {}: {err}", path.display());
        process::exit(1);
    }
}
