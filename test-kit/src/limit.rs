//! A process out of a resource, on purpose: its address space (no room for a large
//! allocation) or its file descriptors (none left), until the guard is dropped. The limit
//! is the whole process's: lower it only in a test re-run alone in a child process
//! ([`child_test_with`](crate::child_test_with)), where no other test allocates or opens
//! files at the time.

use std::fs::File;
use std::io;

/// What to run out of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exhaust {
    /// Address space: `RLIMIT_AS` lowered to what is mapped now plus `room` bytes, so
    /// that a larger allocation fails with `ENOMEM` (small ones still fit).
    Memory {
        /// Bytes still allowed beyond what is mapped.
        room: u64,
    },
    /// File descriptors: every free descriptor below the `RLIMIT_NOFILE` lowered to the
    /// highest open descriptor + 1 is taken (by `/dev/null`), so that the next open fails
    /// with `EMFILE`.
    Files,
}

/// The resource taken away while it lives; the limit (and the descriptors) given back on
/// drop.
#[derive(Debug)]
pub struct Exhausted {
    resource: libc::__rlimit_resource_t,
    before: libc::rlimit,
    _fillers: Vec<File>,
}

/// Takes `what` away from this process (see [`Exhaust`]).
pub fn exhaust(what: Exhaust) -> Exhausted {
    let (resource, soft) = match what {
        Exhaust::Memory { room } => (libc::RLIMIT_AS, mapped() + room),
        Exhaust::Files => (libc::RLIMIT_NOFILE, highest_fd() + 1),
    };
    let before = limit(resource);
    set_limit(
        resource,
        libc::rlimit {
            rlim_cur: soft.min(before.rlim_max),
            rlim_max: before.rlim_max,
        },
    );
    let mut fillers = Vec::new();
    if what == Exhaust::Files {
        loop {
            match File::open("/dev/null") {
                Ok(file) => fillers.push(file),
                Err(e) if e.raw_os_error() == Some(libc::EMFILE) => break,
                Err(e) => panic!("opening /dev/null: {e}"),
            }
        }
    }
    Exhausted {
        resource,
        before,
        _fillers: fillers,
    }
}

impl Drop for Exhausted {
    fn drop(&mut self) {
        set_limit(self.resource, self.before);
    }
}

fn limit(resource: libc::__rlimit_resource_t) -> libc::rlimit {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to write.
    let rc = unsafe { libc::getrlimit(resource, &mut lim) };
    assert_eq!(rc, 0, "getrlimit: {}", io::Error::last_os_error());
    lim
}

fn set_limit(resource: libc::__rlimit_resource_t, lim: libc::rlimit) {
    // SAFETY: `lim` is a valid rlimit to read.
    let rc = unsafe { libc::setrlimit(resource, &lim) };
    assert_eq!(rc, 0, "setrlimit: {}", io::Error::last_os_error());
}

/// Bytes of address space the process maps (`VmSize` of `/proc/self/status`).
fn mapped() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmSize in /proc/self/status");
    kib << 10
}

/// The highest open file descriptor of the process.
fn highest_fd() -> u64 {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .max()
        .expect("open descriptors")
}

/// The errno under `err`: its own, or that of the crate's error it carries.
pub fn errno(err: &io::Error) -> Option<i32> {
    err.raw_os_error().or_else(|| {
        err.get_ref()?
            .downcast_ref::<rdma_verbs::Error>()?
            .raw_os_error()
    })
}
