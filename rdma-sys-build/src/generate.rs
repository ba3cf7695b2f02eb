//! bindgen's half (the feature `bindgen`): generates the bindings from the installed headers
//! for the build, and regenerates the checked-in ones for [`REGENERATE`].

use std::env;
use std::path::{Path, PathBuf};
use std::process;

use crate::{package, write, BindgenConfig, SysCrate, CHECKED_IN_TARGETS, REGENERATE, WRAPPER};

impl SysCrate<'_> {
    /// Generates the bindings for `target` into `to` with the include directories of `lib`
    /// (which it exports as `cargo:include`) and [`SysCrate::more_headers_from`]'s; with
    /// [`REGENERATE`] set, also those of every checked-in target, into that directory.
    pub(crate) fn generate(
        &self,
        lib: &pkg_config::Library,
        config: BindgenConfig<'_>,
        target: &str,
        to: &Path,
    ) {
        for dir in &lib.include_paths {
            println!("cargo:include={}", dir.display());
        }
        let mut include_paths = lib.include_paths.clone();
        if let Some(dir) = self.more_headers_from.and_then(env::var_os) {
            include_paths.push(PathBuf::from(dir));
        }

        // The build's own target: bindgen gives clang the target cargo builds for.
        let bindings = self.bindings(&config, &include_paths, None);
        write(to, &bindings);
        let Some(dir) = env::var_os(REGENERATE) else {
            return;
        };
        let dir = Path::new(&dir).join(package());
        if let Err(err) = std::fs::create_dir_all(&dir) {
            eprintln!("error: cannot create {}: {err}", dir.display());
            process::exit(1);
        }
        for &checked_in in CHECKED_IN_TARGETS {
            let text = if checked_in == target {
                bindings.clone()
            } else {
                self.bindings(&config, &include_paths, Some(checked_in))
            };
            let header = self.checked_in_header(checked_in, &lib.version);
            write(&dir.join(format!("{checked_in}.rs")), &(header + &text));
        }
    }

    /// bindgen's output from `config`, then the settings common to the crates, for
    /// `clang_target` (clang's `--target`), or the build's target.
    fn bindings(
        &self,
        config: &BindgenConfig<'_>,
        include_paths: &[PathBuf],
        clang_target: Option<&str>,
    ) -> String {
        let builder = bindgen::Builder::default()
            .header(WRAPPER)
            .clang_args(
                include_paths
                    .iter()
                    .map(|dir| format!("-I{}", dir.display())),
            )
            .clang_args(clang_target.map(|target| format!("--target={target}")))
            .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
        let builder = apply(config, builder)
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
        self.run(builder).to_string()
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
                    "error: bindgen could not generate the bindings to {}: {err}\n\
                     It reads rdma-core's headers, and the target's C library headers:\n\
                     \x20 Debian/Ubuntu:       apt-get install {}\n\
                     \x20 Fedora/RHEL/SUSE:    dnf install rdma-core-devel  (zypper: rdma-core-devel)",
                    self.headers, self.debian_package,
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

    /// The header of the checked-in bindings of `target`, naming their origin.
    fn checked_in_header(&self, target: &str, pc_version: &str) -> String {
        // rdma-core versions its libraries' pkg-config modules as <ABI version>.<rdma-core
        // version> (libibverbs 1.14.44.0 is rdma-core 44.0's).
        let rdma_core = pc_version.splitn(3, '.').nth(2).unwrap_or(pc_version);
        format!(
            "// Bindings to {headers}, generated ahead of time by build.rs.\n\
             //\n\
             // Builds for this target use this file: they need neither rdma-core's headers nor\n\
             // libclang. With the crate's feature `bindgen`, build.rs generates the bindings from\n\
             // the installed headers instead.\n\
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
        )
    }
}

/// The crate's part of the configuration, on `builder`.
fn apply(config: &BindgenConfig<'_>, builder: bindgen::Builder) -> bindgen::Builder {
    let mut builder = builder.wrap_unsafe_ops(config.wrap_unsafe_ops);
    for pattern in &config.allowlist_functions {
        builder = builder.allowlist_function(pattern);
    }
    for pattern in &config.allowlist_types {
        builder = builder.allowlist_type(pattern);
    }
    for pattern in &config.allowlist_vars {
        builder = builder.allowlist_var(pattern);
    }
    for pattern in &config.blocklist_functions {
        builder = builder.blocklist_function(pattern);
    }
    for pattern in &config.blocklist_types {
        builder = builder.blocklist_type(pattern);
    }
    for pattern in &config.bitfield_enums {
        builder = builder.bitfield_enum(pattern);
    }
    for pattern in &config.constified_enums {
        builder = builder.constified_enum(pattern);
    }
    for line in &config.raw_lines {
        builder = builder.raw_line(*line);
    }
    builder
}
