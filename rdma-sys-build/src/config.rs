//! [`BindgenConfig`]: one -sys crate's part of bindgen's configuration, as data.

/// One -sys crate's part of bindgen's configuration: what to bind, which enums are bit flags
/// or plain constants, lines to put first. It is data rather than calls on a
/// `bindgen::Builder`, so that the build script is the same whether bindgen is compiled in or
/// not (it is an optional dependency of this crate); [`SysCrate::build`] hands it to bindgen
/// only where it generates the bindings, followed by the settings common to the crates.
///
/// Each setter does what the `bindgen::Builder` method of its name does, and adds to what was
/// set before:
///
/// ```
/// # use rdma_sys_build::BindgenConfig;
/// let config = BindgenConfig::new()
///     .allowlist_function("umad_.*")
///     .allowlist_type("ib_user_mad|ib_mad_addr|umad_.*")
///     .blocklist_function("umad_alloc|umad_free")
///     .constified_enum("UMAD_.*");
/// ```
///
/// [`SysCrate::build`]: crate::SysCrate::build
#[derive(Debug, Clone, Default)]
// Read by bindgen's half of the crate only, which a build without the feature `bindgen` lacks
// (the build script sets them all the same).
#[cfg_attr(not(feature = "bindgen"), allow(dead_code))]
pub struct BindgenConfig<'a> {
    pub(crate) allowlist_functions: Vec<&'a str>,
    pub(crate) allowlist_types: Vec<&'a str>,
    pub(crate) allowlist_vars: Vec<&'a str>,
    pub(crate) blocklist_functions: Vec<&'a str>,
    pub(crate) blocklist_types: Vec<&'a str>,
    pub(crate) bitfield_enums: Vec<&'a str>,
    pub(crate) constified_enums: Vec<&'a str>,
    pub(crate) raw_lines: Vec<&'a str>,
    pub(crate) wrap_unsafe_ops: bool,
}

impl<'a> BindgenConfig<'a> {
    /// Nothing bound, nothing blocked: bindgen's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds the functions whose names match the regular expression `pattern`.
    pub fn allowlist_function(mut self, pattern: &'a str) -> Self {
        self.allowlist_functions.push(pattern);
        self
    }

    /// Binds the types whose names match `pattern`.
    pub fn allowlist_type(mut self, pattern: &'a str) -> Self {
        self.allowlist_types.push(pattern);
        self
    }

    /// Binds the variables and macro constants whose names match `pattern`.
    pub fn allowlist_var(mut self, pattern: &'a str) -> Self {
        self.allowlist_vars.push(pattern);
        self
    }

    /// Leaves out the functions whose names match `pattern`, allowed or not.
    pub fn blocklist_function(mut self, pattern: &'a str) -> Self {
        self.blocklist_functions.push(pattern);
        self
    }

    /// Leaves out the types whose names match `pattern` (the bindings then use a type of that
    /// name from elsewhere: a [`raw_line`](Self::raw_line) imports it).
    pub fn blocklist_type(mut self, pattern: &'a str) -> Self {
        self.blocklist_types.push(pattern);
        self
    }

    /// Generates the enums whose names match `pattern` as bit flags: newtypes with `|`, `&`
    /// and friends.
    pub fn bitfield_enum(mut self, pattern: &'a str) -> Self {
        self.bitfield_enums.push(pattern);
        self
    }

    /// Generates the enums whose names (or, for anonymous ones, variant names) match
    /// `pattern` as plain constants.
    pub fn constified_enum(mut self, pattern: &'a str) -> Self {
        self.constified_enums.push(pattern);
        self
    }

    /// Puts `line` at the top of the bindings, after the lines set before it.
    pub fn raw_line(mut self, line: &'a str) -> Self {
        self.raw_lines.push(line);
        self
    }

    /// Whether bindgen wraps the unsafe operations of the functions it writes in `unsafe`
    /// blocks (for the workspace's `unsafe_op_in_unsafe_fn`); bindgen's default is not to.
    pub fn wrap_unsafe_ops(mut self, wrap: bool) -> Self {
        self.wrap_unsafe_ops = wrap;
        self
    }
}
