//! The command-line tools (`src/bin/`, installed by `cargo install --path .`): each tool is a
//! function named after its binary, taking the whole `argv` and returning the exit code,
//! re-exported here. The device listing and perftest tools are also examples over the same
//! functions (`examples/`).

// The C programs' command-line plumbing (getopt_long, perror, exit codes, strtoull, ...),
// shared with the examples that port librdmacm's and perftest's programs: public only so
// that they can reach it, hidden from the docs and not part of the API (it may change in
// any version).
#[doc(hidden)]
pub mod cli;
mod devinfo;
mod fabric;
#[cfg(test)]
mod fuzz;
mod ibdevices;
mod ibdiag;
mod ibstat;
mod perftest;
mod rping;
mod sysfs;

pub use devinfo::{ibv_devices, ibv_devinfo};
pub use fabric::{ibnetdiscover, ibportstate, perfquery, sminfo, smpquery};
pub use ibdevices::ibdevices;
pub use ibstat::ibstat;
pub use perftest::{
    ib_atomic_bw, ib_atomic_lat, ib_read_bw, ib_read_lat, ib_send_bw, ib_send_lat, ib_write_bw,
    ib_write_lat, perftest,
};
pub use rping::rping;
