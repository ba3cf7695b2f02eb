//! infiniband-diags' fabric tools, over libibumad (the `ibumad` crate).

pub mod sminfo;

pub use sminfo::sminfo;
