//! The safe API on a real device (run through `scripts/with-rdma`; rxe0 on `lo` in CI), one
//! module per area: `device` (devices, attributes, GIDs, asynchronous events), `transfers`
//! (moving data on every kind of QP), `errors` (misuse and failures), `first_program` (what
//! a newcomer's first program needs: GID indexes, endpoints, named limits, polling
//! helpers), `odp` (on-demand paging, where the kernel's rxe has it), `memory` (heap,
//! mmap'd, huge page and memfd memory, access rights, `ibv_rereg_mr`, dma-bufs), `files`
//! (file mappings against another holder of the file), `multicast` (UD groups),
//! `atomic_write` (where the kernel's rxe has it), `query` (`ibv_query_qp`), `srq` (SRQ
//! query, limit event, resize), `domains` (fork support, thread and parent domains), `cq_ex`
//! (extended CQs and poll sessions), `cq_resize` (resizing and moderating CQs), `path_mig`
//! (alternate paths and migration requests), `rate_limit` (packet pacing, checked against
//! the device's caps), `dispatch` (what reaches a provider function:
//! a batch's opcodes, missing provider functions, inline data from device memory),
//! `foreign_pd` (entries of another PD's region, refused at post and push),
//! `ah_from_wc` (address handles back to a datagram's sender, from its completion and GRH;
//! hostile headers); `common` holds what several share.
//!
//! The device is `$IBVERBS_TEST_DEVICE` (default `rxe0`); port 1 must be ACTIVE on Ethernet
//! with GID index 1 = `$IBVERBS_TEST_GID` (default `::ffff:127.0.0.1`) of type RoCE v2 on
//! netdev `$IBVERBS_TEST_NETDEV` (default `lo`) (see `rdma_verbs_test_kit::device`). A missing
//! device is a failure, not a skip. Every test checks at its end that no destroy call failed
//! in a destructor.

mod ah_from_wc;
mod atomic_write;
mod common;
mod cq_ex;
mod cq_resize;
mod device;
mod dispatch;
mod domains;
mod errors;
mod files;
mod first_program;
mod foreign_pd;
mod memory;
mod multicast;
mod odp;
mod path_mig;
mod query;
mod rate_limit;
mod srq;
mod transfers;
