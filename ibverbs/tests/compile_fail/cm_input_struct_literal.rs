// As `input_struct_literal`, for the inputs of feature `cm`: the connection parameters and
// the address hints are set through chained setters, never by a struct literal.
use rdma_verbs::cm::{AddrHints, ConnParam};

fn main() {
    let _param = ConnParam {
        private_data: b"hello",
        ..ConnParam::new()
    };
    let _hints = AddrHints {
        passive: true,
        ..AddrHints::new()
    };
}
