// Nor through `AsRawFd`: the number is given only by the `unsafe` `raw_fd`, whose caller
// promises to poll it and never read it.
use rdma_verbs::CompletionChannel;

fn steal(channel: CompletionChannel) {
    let _fd = std::os::fd::AsRawFd::as_raw_fd(&channel);
}

fn main() {}
