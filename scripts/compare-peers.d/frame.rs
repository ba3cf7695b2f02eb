// The frame that scripts/compare-peers' Rust programs (ours.rs, rib.rs, sideway.rs) share:
// the arguments (`PROGRAM OP N`), the rows, the loop that runs a row N times on a library's
// `Pair`, and the output (a failure's message, the count of short polls). Each program holds
// what is its library's: how it opens the device, connects the pair, registers, posts and
// polls, with the `measured_*` functions, the only code callgrind counts
// (`--toggle-collect='*measured_*'`; nothing here is named so). peers.c, the C baseline, has
// the same structure in C.
//
// Each program includes this file at its root (`include!`), not as a module: the rows' loop,
// which calls the measured functions, is then in their module and so in their codegen unit,
// where LLVM sees every call of them, as it did when each program had the loop of its own
// (in a module of its own, the loop moved ours' `measured_poll_ex` to take the CQ by
// reference instead of its promoted fields, and counted the loads). Its items are `pub`: a
// program that does not use one (`ours` takes no GID index) does not warn of it.

use std::hint::black_box;
use std::process::ExitCode;
use std::str::FromStr;
use std::thread;
use std::time::Duration;

/// A result whose error is the message the program fails with.
pub type R<T> = Result<T, String>;

/// An error's message.
pub fn e(err: impl std::fmt::Display) -> String {
    err.to_string()
}

/// What a row of the script runs, whichever API it goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `poll_empty`: one poll of the empty CQ.
    PollEmpty,
    /// `poll_16`: 16 signaled requests posted (not counted), then polls until they are reaped.
    Poll16,
    /// `write`, `write_inline`, `list_16`: RDMA writes, the last signaled, then the wait for
    /// its completion.
    Write {
        /// 16 writes in one post (`list_16`), else 1.
        list: bool,
        /// Whether the data goes inline.
        inline: bool,
    },
    /// `send_recv`: a receive posted on the second QP and a signaled send on the first, then
    /// the wait for both completions.
    SendRecv,
    /// `reg_4k`, `reg_1m`: the registration of a buffer of `len` bytes and its
    /// deregistration.
    Reg {
        /// The buffer's length.
        len: usize,
    },
}

/// A row of the script: an operation, and whether it goes through the extended API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The operation.
    pub op: Op,
    /// `ex_` (a poll through the extended CQ) or `wr_` (posts through `ibv_wr_*`).
    pub extended: bool,
}

impl Row {
    /// The row the script names `name`, if there is one.
    pub fn parse(name: &str) -> Option<Row> {
        let (prefix, base) = match name.split_once('_') {
            Some((prefix @ ("ex" | "wr"), base)) => (Some(prefix), base),
            _ => (None, name),
        };
        let op = match base {
            "poll_empty" => Op::PollEmpty,
            "poll_16" => Op::Poll16,
            "write" => Op::Write {
                list: false,
                inline: false,
            },
            "write_inline" => Op::Write {
                list: false,
                inline: true,
            },
            "list_16" => Op::Write {
                list: true,
                inline: false,
            },
            "send_recv" => Op::SendRecv,
            "reg_4k" => Op::Reg { len: 4096 },
            "reg_1m" => Op::Reg { len: 1 << 20 },
            _ => return None,
        };
        let poll = matches!(op, Op::PollEmpty | Op::Poll16);
        let post = matches!(op, Op::Write { .. } | Op::SendRecv);
        match prefix {
            None => Some(Row {
                op,
                extended: false,
            }),
            Some("ex") if poll => Some(Row { op, extended: true }),
            Some("wr") if post => Some(Row { op, extended: true }),
            _ => None,
        }
    }
}

/// A library's loopback pair on the test device: two RC QPs connected to each other, each
/// with a CQ of its own (the first's is the one polled), and two registered 64-byte buffers,
/// the source and the destination. Each method but [`wait`](Pair::wait) is one `measured_*`
/// call (or, for [`post_16`](Pair::post_16), what a row does before them); what the library
/// has no API for keeps the default, a failure.
pub trait Pair {
    /// One measured poll of the first CQ for at most `max` completions (1 or 16; sideway sets
    /// its batch when it makes the CQ): how many it found.
    fn poll(&mut self, max: usize) -> R<usize>;

    /// One measured poll session of the first, extended, CQ that reads every ready
    /// completion: how many succeeded.
    fn poll_ex(&mut self) -> R<usize> {
        no_api("the ex_ rows (an extended CQ)")
    }

    /// Posts, not measured, the 16 signaled requests from the first QP that `poll_16` reaps:
    /// how many completions they also make on the second CQ (waited for after the 16).
    fn post_16(&mut self) -> R<usize>;

    /// The measured post of `count` RDMA writes of the source to the destination, inline if
    /// `inline`, the last one signaled.
    fn write(&mut self, _count: u64, _inline: bool) -> R<()> {
        no_api("RDMA writes")
    }

    /// [`write`](Pair::write) through the library's `ibv_wr_*` API.
    fn batch_write(&mut self, _count: u64, _inline: bool) -> R<()> {
        no_api("the wr_ rows (a second way to post)")
    }

    /// The measured posts of a receive into the destination on the second QP, then of a
    /// signaled send of the source from the first.
    fn send_recv(&mut self) -> R<()>;

    /// [`send_recv`](Pair::send_recv), the send through the library's `ibv_wr_*` API.
    fn batch_send_recv(&mut self) -> R<()> {
        no_api("the wr_ rows (a second way to post)")
    }

    /// The measured registration of `buf` (zeroed, 4 KiB or 1 MiB) and its deregistration.
    fn reg(&mut self, buf: &mut Vec<u8>) -> R<()>;

    /// Waits for `first` completions on the first CQ and `second` on the second, failing on
    /// an error status.
    fn wait(&mut self, first: usize, second: usize) -> R<()>;
}

/// A method of [`Pair`] the library has no API for.
fn no_api<T>(what: &str) -> R<T> {
    Err(format!("no API for {what}"))
}

/// A measured call's outcome: `what failed` unless `done`.
pub fn check(done: bool, what: &str) -> R<()> {
    if done {
        Ok(())
    } else {
        Err(format!("{what} failed"))
    }
}

/// The device to open: `IBVERBS_TEST_DEVICE`, by default `rxe0`.
pub fn device() -> String {
    std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned())
}

/// The GID index the script found (an IPv4-mapped RoCE v2 entry), else 0.
pub fn gid_index<T: FromStr + Default>() -> T {
    std::env::var("PEERS_GID_INDEX")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_default()
}

/// Runs `row` `n` times on `pair`, then says how many polls of `poll_16` found fewer than
/// 16 completions ready (each then sleeps 2 ms before the next).
pub fn repeat(pair: &mut impl Pair, row: Row, n: u64) -> R<()> {
    let mut buf = match row.op {
        Op::Reg { len } => vec![0u8; len],
        _ => Vec::new(),
    };
    let mut short_polls = 0;
    for _ in 0..n {
        match row.op {
            Op::PollEmpty => {
                black_box(if row.extended {
                    pair.poll_ex()?
                } else {
                    pair.poll(1)?
                });
            }
            Op::Poll16 => {
                let second = pair.post_16()?;
                thread::sleep(Duration::from_millis(2));
                let mut got = 0;
                while got < 16 {
                    let r = black_box(if row.extended {
                        pair.poll_ex()?
                    } else {
                        pair.poll(16)?
                    });
                    if r < 16 {
                        short_polls += 1;
                        thread::sleep(Duration::from_millis(2));
                    }
                    got += r;
                }
                pair.wait(0, second)?;
            }
            Op::Write { list, inline } => {
                // Chosen here, so that LLVM sees a count of 1 or 16 (never 0) in the calls of
                // the measured functions, as before the frame: it drops their test of 0.
                let count = if list { 16 } else { 1 };
                if row.extended {
                    pair.batch_write(count, inline)?;
                } else {
                    pair.write(count, inline)?;
                }
                pair.wait(1, 0)?;
            }
            Op::SendRecv => {
                if row.extended {
                    pair.batch_send_recv()?;
                } else {
                    pair.send_recv()?;
                }
                pair.wait(1, 1)?;
            }
            Op::Reg { .. } => pair.reg(&mut buf)?,
        }
    }
    if short_polls > 0 {
        eprintln!("short polls: {short_polls}");
    }
    Ok(())
}

/// The program's `main`: `program OP N`. `run` is the library's: it opens the device, sets
/// up its pair for the row and hands it to [`repeat`]. A failure prints its message.
pub fn frame_main(program: &str, run: fn(Row, u64) -> R<()>) -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let result = match args.as_slice() {
        [_, op, n] => match (Row::parse(op), n.parse()) {
            (Some(row), Ok(n)) => run(row, n),
            (None, _) => Err(format!("unknown operation {op:?}")),
            (_, Err(err)) => Err(format!("N: {err}")),
        },
        _ => Err(format!("usage: {program} OP N")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("{program}: {msg}");
            ExitCode::FAILURE
        }
    }
}
