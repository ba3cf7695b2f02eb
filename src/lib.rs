//! The command-line tools (`src/bin/`, installed by `cargo install --path .`): each tool is a
//! function named after its binary, taking the whole `argv` and returning the exit code,
//! re-exported here. The device listing and perftest tools are also examples over the same
//! functions (`examples/`).

pub mod cli;
pub mod devinfo;
pub mod fabric;
#[cfg(test)]
mod fuzz;
pub mod ibdevices;
pub mod ibdiag;
pub mod ibstat;
pub mod perftest;
pub mod rping;
pub mod sysfs;

pub use devinfo::{ibv_devices, ibv_devinfo};
pub use fabric::{ibnetdiscover, ibportstate, perfquery, sminfo, smpquery};
pub use ibdevices::ibdevices;
pub use ibstat::ibstat;
pub use perftest::{
    ib_atomic_bw, ib_atomic_lat, ib_read_bw, ib_read_lat, ib_send_bw, ib_send_lat, ib_write_bw,
    ib_write_lat,
};
pub use rping::rping;
