//! perftest's core benchmarks (`ib_send_bw`, `ib_write_bw`, `ib_read_bw`, `ib_atomic_bw`,
//! `ib_send_lat`, `ib_write_lat`, `ib_read_lat`, `ib_atomic_lat`) on the safe `rdma-verbs`
//! API, interoperable with perftest as Debian packages it (4.5+0.17, which announces
//! version 6.06): a C client runs against our server and ours against a C server.
//!
//! The examples of the same names are each one call of the function of the same name
//! ([`ib_write_bw`] and so on).
//!
//! # Rooms
//! From the ground floor up, each module using only those above it in this list:
//! - `types`: the tests, verbs, transports and the error type;
//! - `clock`: tick timestamps; `wire`: the out-of-band messages, encoded and decoded;
//!   `peer`: the connection that carries them, over TCP or (`-R`) `comm`'s rdma_cm QP;
//! - `stats`: perftest's statistics; `report`: everything printed;
//! - `options`: the command line, as typed (`Args`), then as perftest's options with their
//!   defaults and dependencies (`Options`, by concern);
//! - `rdma`: the device (`device`); the options resolved once, against the device and the
//!   peer, into the `Run` that the rooms below read (`run`: GID index, MTU, inline size,
//!   outstanding reads, the message sizes); the verbs resources (with `credit`, the memory
//!   of the receive credits);
//!   `cm_qps`: the test's QPs connected through rdma_cm (`-R`);
//! - `engine`: the measured loops (`post`, `cq`, `timer`, `watchdog`, `credit`, `bw`, `lat`);
//! - `session`: one run, the exchange sequence of the test's program around the loops;
//! - `tools`: the eight entry points; `command`: `perftest`, the guide's one command, which
//!   runs `ib_write_bw` and then `ib_send_lat` through `session`.
//!
//! # Use
//! As perftest: without an address a program is the server and waits for one client on TCP
//! port `-p` (default 18515); with an address it is the client. Both sides take the same
//! options: `-d` device, `-i` port, `-x` GID index, `-s` size (K/M suffixes), `-a` all sizes
//! 2..2^23, `-n` iterations, `-D` seconds instead (`-f` margin), `-t` TX depth, `-r` RX
//! depth, `-q` QPs (BW), `-m` MTU, `-I` inline size, `-b` bidirectional (BW), `-c RC|UC|UD`
//! (UC for send and write, UD for send), `-e` sleep on completion events (not write),
//! `-l` post list (BW), `-Q` completion moderation, `-N` no peak, `-o` outstanding reads,
//! `-A` atomic type, `-u` ACK timeout, `-S` service level, `-H`/`-U` latency samples,
//! `--report_gbits`, `--out_json [--out_json_file F]`, `--perform_warm_up`, `--ipv6`,
//! `--report-both`, `--disable_pcie_relaxed`, `-R` (rdma_cm, below), `-F` (accepted,
//! nothing to do), `-V`, `-h`.
//! Defaults and the dependencies between options are perftest's (`options`): for example
//! large messages (> 8 KiB) turn completion moderation off, post lists set it to the list
//! size, more than 20000 iterations or `-D` turn the peak off, depths are capped by the
//! iterations. Not implemented: `-z` (rdma_cm for the exchange only), `--retry_count`,
//! `--tos`, `--source_ip`, XRC/DC/SRD, multicast, dual port,
//! rate limiting, CPU utilisation, CUDA/ROCm.
//!
//! # Output
//! The banner, address lines, tables and `--out_json` file are perftest's, byte for byte
//! on the same device and parameters (`report`), including its quirks: the GID printed in
//! decimal (`255:255:127:00:00:01`), `%#0Nx` fields that drop the `0x` for 0 (`LID 0000`),
//! `MB/sec` meaning MiB/s, tabs inside the result lines. Two things are device-dependent in
//! perftest and follow a rule here instead of its device table: inline data defaults to
//! perftest's sizes (220 write, 236 send, 188 UD send) in latency tests, except on the
//! software devices rxe and siw where perftest does not know the device and turns inline
//! off (printing its "Device not recognized" note, as perftest does there); the
//! relaxed-ordering line says ON unless `--disable_pcie_relaxed` or `ib_write_lat`, without
//! perftest's PCI compliance warning.
//!
//! # Out-of-band exchange (`wire`, `peer`)
//! TCP, IPv4, client writes first in every exchange, each message in one `write` (perftest
//! reads each with one `read`):
//! 1. 16-byte version, NUL-padded: `6.06`. Peers below 5.70 are refused, as perftest does.
//!    perftest 6.28 and later also swap a raw C parameter struct with peers announcing
//!    ≥ 6.28, whose layout depends on the C build; announcing 6.06 keeps them on this
//!    protocol. After the NUL our side adds a summary of the parameters both sides must
//!    share (test, transport, `-b`, `-a`, `-s`, `-q`, and `-n`/`-D` where the server takes
//!    part in the data path); perftest ignores those bytes (`atof`) and sends zeros, so
//!    only two of our tools compare them and fail fast on a mismatch. Against perftest a
//!    mismatch shows as a failed completion, a closed connection or a timeout.
//! 2. Page size, then cache line size, each a 4-byte big-endian int; both sides keep the
//!    larger (they size and step the buffers).
//! 3. MTU as the ASCII decimal `enum ibv_mtu` (`"5"` for 4096) in 2 bytes; both keep the
//!    smaller.
//! 4. Per QP a NUL-terminated record
//!    `LID:OUT:QPN:PSN:RKEY:VADDR:[16 × GID byte:]SRQN[:]` with `%04x:%04x:%06x:%06x:%08x:
//!    %016llx:` (108 bytes with a GID, used on RoCE or with `-x`; 59 without), swapped
//!    again as a barrier at the points each perftest program does (the order differs per
//!    program and is followed per test in `session`).
//! 5. Bandwidth tests end with the results: size and iterations as big-endian u64, peak,
//!    average and message rate as byte-swapped doubles, each in its own exchange. The
//!    passive server prints the client's numbers.
//! 6. Closing: one more record swap, then `done\0`, then the socket closes
//!    (`ib_write_lat` closes without it, as perftest).
//!
//! # rdma_cm (`-R`; `comm`, `cm_qps`)
//! As perftest 6.06: the exchange then runs over an RC QP connected through rdma_cm on the
//! port `-p` (TCP port space, to the server's address on the rdma_cm device; no TCP at
//! all), one SEND per message into the peer's one posted 56-byte receive, and the records
//! are perftest's `struct pingpong_dest` in binary (big-endian fields, always with a GID),
//! with no `done` at the end; the address lines then show no `OUT`, `RKey` or `VAddr`
//! (perftest prints them through the exchange's parameters, whose verb is a send). After step 3 both sides swap an empty record, the server
//! listening on the same port again (the UDP port space for UD; before that swap, where
//! perftest listens after it, so that perftest's client, which crashes when it retries, finds
//! it at once), and accepts one connection per QP while the client resolves and connects
//! each (the whole connection retried up to 10 times, 100 ms apart), then another empty
//! record; the PD, region and CQs are made on the
//! CM id's device and the QPs on the ids (librdmacm moves them to RTS). The records are
//! swapped as without `-R` (not connecting in between, no GID family check). UD: the
//! client's address handle and the server's Q_Key come from the CM; where the server sends
//! (latency, `-b`), the client first sends it its QP number as immediate data, and the
//! server addresses the client from its record. UC is refused, as perftest does.
//!
//! # iWARP
//! iWARP devices (such as soft-iWARP) connect through rdma_cm only, so `-R` is needed, and
//! have RC only. Without RNR retry a send that finds no receive posted breaks the
//! connection, so `ib_send_bw` runs perftest's receive credits there (`engine::credit`):
//! each side's records announce, instead of its buffer, a small region where the receiver
//! RDMA-writes its receive count per QP (a 4-byte integer in host byte order) at every third
//! of the RX depth, and the sender stays less than the RX depth ahead of that count.
//! `ib_send_lat` needs none (each side posts its receives before the exchange that starts a
//! round trip). `ib_read_*` registers its buffer with remote write as well (an iWARP read
//! response is a write into it). The atomic tools fail at their first post, on the client,
//! as perftest's do (iWARP has no atomics), and the server then fails with the exchange.
//!
//! # Connection
//! QPs are connected with perftest's attributes: min RNR timer 12, ACK timeout 14 (`-u`),
//! retry and RNR retry 7, hop limit 255, path MTU the smaller of both ports', outstanding
//! reads the peer's `OUT`. Without `-x`, the GID index is perftest 6.06's pick: walking the
//! table, an IPv4-mapped GID beats a non-mapped one (the reverse with `--ipv6`), otherwise
//! a higher RoCE version wins (newer perftest scores family +100, non-link-local +10,
//! RoCE v2 +2; on usual tables, such as rxe's, both pick the same index).
//!
//! # Measurement (`clock`, `engine`, `stats`)
//! Timestamps are the time-stamp counter (x86_64; a monotonic nanosecond clock elsewhere),
//! its frequency measured against the monotonic clock over the whole run. The loops are
//! perftest's `run_iter_*`: a send window of TX depth per QP, one signaled request per
//! `-Q` (and the last), completions polled 16 at a time and each counted as `-Q` requests;
//! addresses step through the page-sized cycle buffer in cache-line-rounded steps for
//! messages up to half a page. `--perform_warm_up` posts one TX-depth burst first (every
//! request signaled, unlike perftest, whose burst waits for completions that moderation may
//! never produce). `-D` runs for the duration with the margins at both ends left out of
//! the count, as perftest's alarm states. With `-e`, a side sleeps on its CQ's completion
//! channel whenever a poll finds nothing (bidirectional send tests poll).
//!
//! The statistics are perftest's definitions:
//! - BW average = bytes / (last completion − first post), in MiB/s (`[MB/sec]`) or, with
//!   `--report_gbits`, 10^9 bit/s, where perftest prints six decimals below 0.1. Message
//!   rate = messages / that time, in millions per second.
//! - BW peak = message size over the smallest average time per message of any window from
//!   a post to a later completion (perftest divides integer cycles; this divides exactly).
//!   It is 0.00 where perftest disables it: `-N`, `-D`, more than 20000 iterations, and
//!   the server of a unidirectional send test, whose interval runs from its first receive
//!   to its last.
//! - Latency samples are the gaps between consecutive post timestamps (so they include
//!   polling), halved for send and write (a ping-pong round trip) but not for read and
//!   atomic. The two largest are dropped. Then, as perftest: `t_min` is the smallest;
//!   `t_max` is the element just past the kept ones, i.e. the **second-largest** sample;
//!   `t_typical` is the median of the kept ones (the mean of the middle two for an even
//!   count, in integer ticks); `t_avg` their mean; `t_stdev` the root mean square of each
//!   deviation from the mean **truncated to whole microseconds** (perftest stores it in an
//!   `int`, so sub-microsecond jitter reads 0); the 99% and 99.9% percentiles are the
//!   sorted samples at index `ceil(0.99·n)` and `ceil(0.999·n)` of the n kept ones, which
//!   for small n is again the second-largest sample.
//!
//! # Failures
//! Bad options, devices, ports, sizes beyond the port's largest message or the UD MTU fail
//! before connecting. Every exchange is bounded: connecting by 20 s, each setup exchange
//! by 60 s, waits for the peer to finish its measured part by the duration or a generous
//! per-message allowance; the data path fails after 20 s without a completion and notices
//! within a fraction of a second when the peer's connection closes. Records, versions and MTUs
//! that do not parse are errors. Every failure prints a message on stderr and exits with
//! status 1.

mod clock;
mod cm_qps;
mod comm;
mod command;
mod engine;
#[cfg(test)]
mod fuzz;
mod options;
mod peer;
mod rdma;
mod report;
mod session;
mod stats;
mod tools;
mod types;
mod wire;

pub use command::perftest;
pub use tools::{
    ib_atomic_bw, ib_atomic_lat, ib_read_bw, ib_read_lat, ib_send_bw, ib_send_lat, ib_write_bw,
    ib_write_lat,
};
