//! [`FailoverListener`]: one stream listener per address, each with a thread that accepts
//! its paths, reads their hellos and hands each to a new stream or to its group's stream.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::frame::{self, Frame, Token};
use super::stream::FailoverStream;
use super::FailoverConfig;
use crate::stream::{RdmaListener, RdmaStream, BACKLOG, HANDSHAKES};

/// How often an accepting thread looks whether its listener was dropped.
const TICK: Duration = Duration::from_millis(100);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The listening side's part of a group: the path its listener handed over last, with the
/// bytes the peer said it received, until the stream takes it.
#[derive(Default)]
pub(super) struct Group {
    next: Mutex<Option<(RdmaStream, u64)>>,
    ready: Condvar,
}

impl Group {
    /// The path handed over, if one was.
    pub(super) fn take(&self) -> Option<(RdmaStream, u64)> {
        lock(&self.next).take()
    }

    /// Waits until a path is handed over, or `deadline` passes (`None`).
    pub(super) fn wait(&self, deadline: Instant) -> Option<(RdmaStream, u64)> {
        let mut next = lock(&self.next);
        loop {
            if let Some(path) = next.take() {
                return Some(path);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            next = self
                .ready
                .wait_timeout(next, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Hands `path` over (a path handed over before and not taken is dropped: the peer
    /// gave up on it).
    fn hand_over(&self, path: RdmaStream, received: u64) {
        *lock(&self.next) = Some((path, received));
        self.ready.notify_all();
    }
}

/// What the accepting threads share with the listener.
struct Shared {
    config: FailoverConfig,
    closed: AtomicBool,
    /// Streams of new groups, for `accept` (at most the backlog), or an error of this side's.
    queue: Mutex<VecDeque<io::Result<FailoverStream>>>,
    ready: Condvar,
    groups: Mutex<HashMap<Token, Weak<Group>>>,
    /// Hellos being read (each on a thread of its own), at most 64.
    hellos: AtomicUsize,
}

/// A listener of failover streams (blocking) on one or more addresses: the peer's paths
/// connect to them, and [`accept`](Self::accept) returns a stream for each new group; a
/// path that joins a group goes to that group's stream. Each address has a
/// [`RdmaListener`] and a thread that accepts on it; each path's hello is read on a thread
/// of its own within the paths' handshake timeout (at most 64 at once: more are dropped).
/// Dropping the listener stops its threads (within 100 ms); the streams it accepted go on,
/// and a path that joins one of them later is refused.
pub struct FailoverListener {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    addrs: Vec<SocketAddr>,
}

impl FailoverListener {
    /// Listens on each of `addrs` (port 0: one the CM picks) with `config` for every stream
    /// it accepts.
    pub fn bind(addrs: &[SocketAddr], config: &FailoverConfig) -> io::Result<FailoverListener> {
        let config = config.checked()?;
        if addrs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a failover listener needs at least one address",
            ));
        }
        let listeners = addrs
            .iter()
            .map(|addr| RdmaListener::bind_with(*addr, &config.stream))
            .collect::<io::Result<Vec<_>>>()?;
        let shared = Arc::new(Shared {
            config,
            closed: AtomicBool::new(false),
            queue: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
            groups: Mutex::new(HashMap::new()),
            hellos: AtomicUsize::new(0),
        });
        let addrs = listeners
            .iter()
            .zip(addrs)
            .map(|(l, a)| l.local_addr().unwrap_or(*a))
            .collect();
        let mut listener = FailoverListener {
            shared,
            threads: Vec::new(),
            addrs,
        };
        for rdma in listeners {
            let shared = Arc::clone(&listener.shared);
            // On an error, dropping `listener` stops the threads started.
            let thread = std::thread::Builder::new()
                .name("failover-accept".into())
                .spawn(move || accept_paths(&rdma, &shared))?;
            listener.threads.push(thread);
        }
        Ok(listener)
    }

    /// The addresses listened on (with the ports the CM picked).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Waits for the next new stream (its first path up and its hello answered). An error
    /// is this side's (a path's set-up: its memory, its file descriptors).
    pub fn accept(&self) -> io::Result<FailoverStream> {
        let mut queue = lock(&self.shared.queue);
        loop {
            if let Some(next) = queue.pop_front() {
                return next;
            }
            queue = self
                .shared
                .ready
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for FailoverListener {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for FailoverListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailoverListener")
            .field("addrs", &self.addrs)
            .finish()
    }
}

/// An accepting thread: takes `rdma`'s paths until the listener is dropped, and reads
/// each one's hello on a thread of its own.
fn accept_paths(rdma: &RdmaListener, shared: &Arc<Shared>) {
    while !shared.closed.load(Ordering::Relaxed) {
        let path = match rdma.accept_until(Some(Instant::now() + TICK)) {
            Ok(Some(path)) => path,
            Ok(None) => continue,
            Err(e) => {
                queue(shared, Err(e));
                std::thread::sleep(TICK);
                continue;
            }
        };
        if shared.hellos.fetch_add(1, Ordering::Relaxed) >= HANDSHAKES {
            shared.hellos.fetch_sub(1, Ordering::Relaxed);
            continue;
        }
        let hello_shared = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name("failover-hello".into())
            .spawn(move || {
                take_hello(path, &hello_shared);
                hello_shared.hellos.fetch_sub(1, Ordering::Relaxed);
            });
        if let Err(e) = spawned {
            shared.hellos.fetch_sub(1, Ordering::Relaxed);
            queue(shared, Err(e));
        }
    }
}

/// Queues a new stream (or an error) for `accept`; dropped beyond the backlog.
fn queue(shared: &Shared, next: io::Result<FailoverStream>) {
    let mut queue = lock(&shared.queue);
    if queue.len() < BACKLOG as usize {
        queue.push_back(next);
        shared.ready.notify_one();
    }
}

/// Reads `path`'s hello (within the handshake timeout) and hands the path on; a path whose
/// hello is not one, or comes late, is dropped (its peer sees the disconnect).
fn take_hello(mut path: RdmaStream, shared: &Shared) {
    let Ok(timeout) = shared.config.stream.handshake_deadline() else {
        return;
    };
    path.set_deadline(Some(Instant::now() + timeout));
    let mut bytes = [0; frame::HEADER + frame::TOKEN + 1 + 8];
    if path.read_exact(&mut bytes).is_err() {
        return;
    }
    if frame::frame_len(&bytes, 0).ok().flatten() != Some(bytes.len()) {
        return;
    }
    let Frame::Hello {
        token,
        join,
        received,
    } = frame::decode(&bytes)
    else {
        return;
    };
    let mut groups = lock(&shared.groups);
    groups.retain(|_, group| group.strong_count() > 0);
    let known = groups.get(&token).and_then(Weak::upgrade);
    match (join, known) {
        (true, Some(group)) => {
            drop(groups);
            path.set_deadline(None);
            group.hand_over(path, received);
        }
        (false, None) if received == 0 => {
            let group = Arc::new(Group::default());
            groups.insert(token, Arc::downgrade(&group));
            drop(groups);
            if path.write_all(&frame::encode(&Frame::Resume(0))).is_err() {
                return;
            }
            if path.flush().is_err() {
                return;
            }
            path.set_deadline(None);
            let stream = FailoverStream::accepted(shared.config, group, path);
            queue(shared, Ok(stream));
        }
        (true, None) => {
            drop(groups);
            // Best effort: the peer's stream ends with InvalidData, or its wait times out.
            if path.write_all(&frame::encode(&Frame::Unknown)).is_ok() {
                // Returns once the frame's send completed: the drop then loses nothing.
                let _ = path.shutdown();
            }
        }
        // A new group with a token in use, or one that says it received bytes: dropped.
        _ => {}
    }
}
