//! Shared code of the command-line tools in `examples/`.
