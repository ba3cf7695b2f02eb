// (feature `cm`) An rdma_cm event channel's descriptor is not handed to safe code (no
// `AsFd`, no `AsRawFd`; `EventChannel::raw_fd` is `unsafe`): an event read through a
// duplicate would never be acknowledged (`rdma_ack_cm_event`), and `rdma_destroy_id` would
// wait for it forever.
use rdma_verbs::cm::EventChannel;

fn steal(channel: EventChannel) {
    use std::os::fd::AsFd;
    let _fd = channel.as_fd().try_clone_to_owned();
}

fn main() {}
