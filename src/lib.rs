//! Shared code of the command-line tools in `examples/`.

pub mod cli;
pub mod devinfo;
#[cfg(test)]
mod fuzz;
pub mod ibstat;
pub mod perftest;

pub use perftest::{
    ib_atomic_bw, ib_atomic_lat, ib_read_bw, ib_read_lat, ib_send_bw, ib_send_lat, ib_write_bw,
    ib_write_lat,
};
