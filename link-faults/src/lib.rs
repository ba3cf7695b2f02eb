//! The link-fault tests of the `rdma-verbs` crate, in `tests/link_faults/`: RC queue pairs
//! between a process on this host and one on a peer host while the link between the two
//! loses packets or goes down. This library is empty; the package exists so that the
//! tests, which need two hosts, can be run (and left out) on their own.
//!
//! Run them with `WITH_RDMA_TOPOLOGY=pair cargo test -p link-faults`: `scripts/with-rdma`
//! then runs the test binary in the first of two VMs joined by a virtual link (see
//! docs/testing.md, "Link faults: two hosts").
