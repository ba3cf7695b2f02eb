//! Shared code of the command-line tools in `examples/`.

pub mod cli;
pub mod devinfo;
#[cfg(test)]
mod fuzz;
pub mod ibstat;
pub mod perftest;
pub mod sysfs;
