//! A program a test runs in the background: its output read by two threads, waited for
//! until a deadline, killed when dropped (so that none outlives a failed test). Also a test
//! re-run in a child process ([`child_test`]), for what would take the test process down
//! with it (a hang, an abort).

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running program.
pub struct Running {
    name: String,
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

/// What a program printed and how it ended.
pub struct Outcome {
    /// Its exit status.
    pub status: ExitStatus,
    /// All it wrote to stdout.
    pub stdout: String,
    /// All it wrote to stderr.
    pub stderr: String,
}

impl Outcome {
    /// Both outputs, labelled, for a failure message.
    pub fn context(&self) -> String {
        format!("stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr)
    }

    /// Asserts that the program ended with status 0 after printing exactly `lines`, with
    /// nothing on stderr and no "error" or "fail" anywhere (`what` names the run).
    pub fn assert_clean(&self, what: &str, lines: &[impl AsRef<str>]) {
        let mut want = lines
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join("\n");
        want.push('\n');
        assert!(
            self.status.success() && self.stdout == want && self.stderr.is_empty(),
            "{what}: status {}, expected stdout:\n{want}{}",
            self.status,
            self.context()
        );
        let text = format!("{}{}", self.stdout, self.stderr).to_lowercase();
        assert!(
            !text.contains("error") && !text.contains("fail"),
            "{what}: {}",
            self.context()
        );
    }
}

/// `args` as the owned strings [`Running::spawn`] takes.
pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// Runs `program` with `args` to its end (by `timeout`): its exit status, stdout and stderr,
/// with its path written as `name` in both, so that ours and C's compare.
pub fn run_alone(
    program: &Path,
    name: &str,
    args: &[&str],
    timeout: Duration,
) -> (Option<i32>, String, String) {
    let out = Running::spawn(name, program, &strings(args)).finish(Instant::now() + timeout);
    let shown = program.display().to_string();
    (
        out.status.code(),
        out.stdout.replace(&shown, name),
        out.stderr.replace(&shown, name),
    )
}

fn read_all(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

impl Running {
    /// Starts `program` with `args` (stdin empty, stdout and stderr captured); `name` (the
    /// role, such as `server`) and the command line name it in failure messages.
    pub fn spawn(name: &str, program: &Path, args: &[String]) -> Running {
        Running::start(name, Command::new(program).args(args))
    }

    /// Starts `command` as [`spawn`](Self::spawn) does (for one with an environment of its
    /// own, say).
    pub fn start(name: &str, command: &mut Command) -> Running {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {command:?}: {e}"));
        let stdout = child.stdout.take().map(read_all);
        let stderr = child.stderr.take().map(read_all);
        Running {
            name: format!("{name} ({command:?})"),
            child,
            stdout,
            stderr,
        }
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `ready()` holds, polling every 20 ms; fails if the program exits first
    /// or `timeout` passes. `what` names the awaited state in the failure message.
    pub fn wait_until(&mut self, what: &str, timeout: Duration, ready: impl Fn() -> bool) {
        let deadline = Instant::now() + timeout;
        loop {
            if ready() {
                return;
            }
            if let Some(status) = self.child.try_wait().expect("waiting for a child") {
                panic!("{} exited with {status} before it {what}", self.name);
            }
            assert!(Instant::now() < deadline, "{} never {what}", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the exit until `deadline`; kills the program and fails after it.
    pub fn finish(self, deadline: Instant) -> Outcome {
        let name = self.name.clone();
        self.finish_by(deadline)
            .unwrap_or_else(|output| panic!("{name} did not finish by its deadline\n{output}"))
    }

    /// Waits for the exit until `deadline`; after it, kills the program and returns `Err`
    /// with what it printed (both outputs, labelled).
    pub fn finish_by(mut self, deadline: Instant) -> Result<Outcome, String> {
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for a child") {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let text = |h: Option<JoinHandle<String>>| h.map(|h| h.join().unwrap()).unwrap_or_default();
        let (stdout, stderr) = (text(self.stdout.take()), text(self.stderr.take()));
        let Some(status) = status else {
            return Err(format!("stdout:\n{stdout}\nstderr:\n{stderr}"));
        };
        Ok(Outcome {
            status,
            stdout,
            stderr,
        })
    }

    /// Kills the program (SIGKILL) and waits for it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A program left running by a failed test must not outlive it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the test `name` of this test binary again, alone, in a child process with `$var`
/// set (the test tells by it that it is the child, and does the dangerous part), its
/// output captured (`--nocapture`).
pub fn child_test(name: &str, var: &str) -> Running {
    child_test_with(name, var, "1")
}

/// [`child_test`] with `$var` set to `value` (what the child needs of the parent, such as
/// a port).
pub fn child_test_with(name: &str, var: &str, value: &str) -> Running {
    let exe = std::env::current_exe().expect("the path of the test executable");
    let mut command = Command::new(exe);
    command
        .args(["--exact", name, "--nocapture"])
        .env(var, value);
    Running::start(name, &mut command)
}
