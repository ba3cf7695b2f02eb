// The context's async event descriptor has no safe accessor: `async_fd` is private to the
// crate (an async event read and never acknowledged makes a destroy verb wait forever);
// `Context::async_raw_fd` is `unsafe`.
use rdma_verbs::Context;

fn steal(ctx: Context) {
    let _fd = ctx.async_fd();
}

fn main() {}
