// A completion channel's descriptor is not reachable from safe code through `AsFd`: a
// borrowed fd can be duplicated and read, taking an event the crate must acknowledge, and
// the CQ's drop (`ibv_destroy_cq`) would then wait forever for its acknowledgement.
use rdma_verbs::CompletionChannel;

fn steal(channel: CompletionChannel) {
    use std::os::fd::AsFd;
    let _fd = channel.as_fd().try_clone_to_owned();
}

fn main() {}
