//! infiniband-diags' fabric tools, over libibumad (the `ibumad` crate), and what they share:
//! their option loop ([`options`], on [`getopt`](crate::cli::getopt)), destination operands ([`dest`]) and the
//! port their requests go through ([`rpc`]).

pub mod addr;
pub mod dest;
pub mod dump;
#[cfg(test)]
mod fuzz;
pub mod getpass;
pub mod ibnetdiscover;
pub mod ibportstate;
pub mod mlnx_ext;
pub mod netdisc;
pub mod node_names;
pub mod options;
pub mod perfquery;
pub mod portinfo_text;
pub mod rpc;
pub mod sminfo;
pub mod smpquery;

pub use ibnetdiscover::ibnetdiscover;
pub use ibportstate::ibportstate;
pub use perfquery::perfquery;
pub use sminfo::sminfo;
pub use smpquery::smpquery;
