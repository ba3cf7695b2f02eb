// The raw numbers of the descriptors whose events the crate acknowledges are given only
// through `unsafe` (`CompletionChannel::raw_fd`, `Context::async_raw_fd`): their contract is
// to poll the descriptor for readiness and never read it.
use rdma_verbs::{CompletionChannel, Context};

fn numbers(ctx: Context, channel: CompletionChannel) {
    let _fds = (channel.raw_fd(), ctx.async_raw_fd());
}

fn main() {}
