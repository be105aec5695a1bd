//! Engine processes: each launched engine runs in its own process group, so that
//! one signal reaches the engine and every process it started (vLLM's engine core,
//! tokenizer workers, ...), and so that a Ctrl-C in the terminal reaches goodput
//! alone, which then stops the engines itself.
//!
//! Nothing is left running:
//! - [`EngineProcess::terminate`]: SIGTERM to the group, SIGKILL after the grace
//!   period, then wait until no live (non-zombie) process of the group remains;
//! - dropping an [`EngineProcess`] without terminating it SIGKILLs its group;
//! - every live group is registered in a fixed table of atomics, which
//!   [`kill_all_engines`] walks with nothing but atomic loads and `killpg(2)`: safe
//!   in a panic hook, an `atexit` handler, or after a signal
//!   ([`install_cleanup_hooks`] installs the first two);
//! - [`shutdown_signal`] resolves on SIGINT or SIGTERM so the caller can stop its
//!   engines and write what it has.
//!
//! A SIGKILL of goodput itself cannot be caught: the engine's leader still dies with
//! it (the parent-death signal, `PR_SET_PDEATHSIG`, set in the child before exec),
//! but grandchildren that an engine forks (vLLM's workers) are not covered.

use std::future::Future;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Once;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// Most engine process groups alive at once (more are still killed on drop).
const MAX_LIVE: usize = 64;
/// After SIGKILL, the longest wait for the group to vanish.
const KILL_WAIT: Duration = Duration::from_secs(10);
/// How often a stopping group is looked at.
const POLL: Duration = Duration::from_millis(50);

static LIVE: [AtomicI32; MAX_LIVE] = [const { AtomicI32::new(0) }; MAX_LIVE];

fn register(pgid: i32) {
    for slot in &LIVE {
        if slot
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

fn unregister(pgid: i32) {
    for slot in &LIVE {
        let _ = slot.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// SIGKILLs every registered engine process group. Uses only atomic loads and
/// `killpg(2)`, so it may run in a panic hook, an `atexit` handler or a fatal exit
/// path.
pub fn kill_all_engines() {
    for slot in &LIVE {
        let pgid = slot.swap(0, Ordering::SeqCst);
        if pgid > 0 {
            signal_group(pgid, Signal::SIGKILL);
        }
    }
}

extern "C" fn kill_all_at_exit() {
    kill_all_engines();
}

/// Installs, once, a panic hook that SIGKILLs every live engine process group and
/// then calls the previous hook, and an `atexit` handler that does the same when
/// the process exits (`std::process::exit` included) with engines still running.
pub fn install_cleanup_hooks() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            kill_all_engines();
            previous(info);
        }));
        // SAFETY: registers a plain extern "C" function with no captured state
        // (`nix` has no `atexit`).
        unsafe {
            libc::atexit(kill_all_at_exit);
        }
    });
}

/// How long after the first signal a second one means "stop now".
pub const INSIST_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Resolves with `"SIGINT"` or `"SIGTERM"` when goodput receives either.
///
/// Call it (inside a tokio runtime) before starting any engine and keep the future:
/// the handlers are installed by the call, so a signal arriving before the future
/// is first polled is not lost. From then on the default action no longer applies
/// (terminating goodput, whose death the parent-death signal passes on to each
/// engine's leader only, not to the workers a leader forked): the caller stops its
/// engines, whole groups, writes what it has and exits.
/// Should a second SIGINT or SIGTERM arrive [`INSIST_AFTER`] or more after the
/// first (the user insists), every engine is SIGKILLed and goodput exits at once
/// with status 128 + the signal number; one sooner is taken for the same request
/// (`timeout` signals the child, then its group) and ignored.
pub fn shutdown_signal() -> impl Future<Output = &'static str> + Send + 'static {
    use tokio::signal::unix::{signal, Signal as Stream, SignalKind};
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut term = signal(SignalKind::terminate()).ok();
    async fn recv(s: &mut Option<Stream>) {
        match s {
            Some(s) => {
                if s.recv().await.is_none() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
    async move {
        let first = tokio::select! {
            _ = recv(&mut int) => "SIGINT",
            _ = recv(&mut term) => "SIGTERM",
        };
        let at = std::time::Instant::now();
        tokio::spawn(async move {
            let second = loop {
                let s = tokio::select! {
                    _ = recv(&mut int) => Signal::SIGINT,
                    _ = recv(&mut term) => Signal::SIGTERM,
                };
                // coreutils `timeout` (and some process managers) send one signal
                // to the child and then to its group: a second signal that soon is
                // the same request, not an insistence.
                if at.elapsed() >= INSIST_AFTER {
                    break s;
                }
            };
            let (name, code) = (second.as_str(), 128 + second as i32);
            kill_all_engines();
            eprintln!("goodput: second signal ({name}): engines killed, exiting");
            std::process::exit(code);
        });
        first
    }
}

/// Sends `sig` to process group `pgid` (`None`: only asks whether it exists);
/// false when the group no longer exists.
fn signal_group(pgid: i32, sig: impl Into<Option<Signal>>) -> bool {
    killpg(Pid::from_raw(pgid), sig).is_ok()
}

/// Whether any live (not zombie) process is in group `pgid`. Reads `/proc` on
/// Linux; elsewhere asks `kill(-pgid, 0)` (which also counts zombies).
pub fn group_alive(pgid: i32) -> bool {
    match group_members(pgid) {
        Some(members) => !members.is_empty(),
        None => signal_group(pgid, None),
    }
}

/// The pids of the live (not zombie) processes in group `pgid`, from `/proc`;
/// `None` where `/proc` cannot be read.
pub fn group_members(pgid: i32) -> Option<Vec<i32>> {
    let pids = processes()?
        .filter(|p| {
            p.stat()
                .is_some_and(|(state, pgrp)| pgrp == pgid && is_live(state))
        })
        .map(|p| p.pid)
        .collect();
    Some(pids)
}

/// Every process `/proc` lists (the one scan of `/proc`; the tests find their
/// engines with it too); `None` where `/proc` cannot be read.
pub fn processes() -> Option<impl Iterator<Item = ProcEntry>> {
    let dir = std::fs::read_dir("/proc").ok()?;
    Some(dir.flatten().filter_map(|entry| {
        let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
        Some(ProcEntry {
            pid,
            dir: entry.path(),
        })
    }))
}

/// One process under `/proc`; each accessor reads its file when called and
/// answers `None` (or nothing) once the process is gone.
#[derive(Debug, Clone)]
pub struct ProcEntry {
    /// The process id.
    pub pid: i32,
    dir: std::path::PathBuf,
}

impl ProcEntry {
    /// State (`R`, `S`, `Z`...) and process group, from `/proc/PID/stat`.
    pub fn stat(&self) -> Option<(char, i32)> {
        parse_stat(&std::fs::read_to_string(self.dir.join("stat")).ok()?)
    }

    /// Running or sleeping: neither a zombie nor dead.
    pub fn is_live(&self) -> bool {
        self.stat().is_some_and(|(state, _)| is_live(state))
    }

    /// The arguments, `argv[0]` first (empty for a zombie or a kernel thread).
    pub fn cmdline(&self) -> Vec<String> {
        nul_separated(&self.dir.join("cmdline"))
    }

    /// Whether its environment holds `entry` (`NAME=value`), exactly.
    pub fn has_env(&self, entry: &str) -> bool {
        nul_separated(&self.dir.join("environ"))
            .iter()
            .any(|kv| kv == entry)
    }

    /// The executable's path.
    pub fn exe(&self) -> Option<std::path::PathBuf> {
        std::fs::read_link(self.dir.join("exe")).ok()
    }
}

fn is_live(state: char) -> bool {
    state != 'Z' && state != 'X'
}

fn nul_separated(path: &Path) -> Vec<String> {
    std::fs::read(path)
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// State and process group of a `/proc/PID/stat` line (`pid (comm) S ppid pgrp ...`;
/// `comm` may hold spaces and parentheses).
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// `exit code 1`, `killed by signal 9 (SIGKILL)`.
pub fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    match status.signal() {
        Some(sig) => match Signal::try_from(sig) {
            Ok(name) => format!("killed by signal {sig} ({name})"),
            Err(_) => format!("killed by signal {sig}"),
        },
        None => status.to_string(),
    }
}

/// The last `lines` lines of a whole log file (of its last 256 KiB); a line redrawn
/// with carriage returns (progress bars) reads as its last drawing. One launch's
/// part only: [`super::logs::LogSection::tail`].
pub fn log_tail(path: &Path, lines: usize) -> Vec<String> {
    super::logs::LogSection::whole(path).tail(lines)
}

/// A launched engine: the leader of its own process group.
#[derive(Debug)]
pub struct EngineProcess {
    child: Child,
    pgid: i32,
    exit: Option<ExitStatus>,
    done: bool,
}

impl EngineProcess {
    /// Starts `argv` in a new process group with stdout and stderr appended to
    /// `log` (one file, both streams), extra `env` (after `PYTHONUNBUFFERED=1`, so a
    /// Python engine's prints reach the log at once) and working directory `cwd`.
    pub fn spawn(
        argv: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: Option<&Path>,
        log: &Path,
        header: &str,
    ) -> std::io::Result<EngineProcess> {
        let (program, args) = argv.split_first().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command")
        })?;
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        writeln!(out, "{header}")?;
        let err = out.try_clone()?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("PYTHONUNBUFFERED", "1")
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .process_group(0)
            .kill_on_drop(true);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        // If goodput itself is SIGKILLed (nothing can be cleaned up then), the kernel
        // kills the engine's leader with it. Should goodput have died before the
        // signal was set, the child is no longer ours: the spawn fails.
        let parent = nix::unistd::getpid();
        // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
                if nix::unistd::getppid() != parent {
                    return Err(std::io::Error::other("goodput exited during the launch"));
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| std::io::Error::other("the engine exited at once"))?;
        register(pgid);
        Ok(EngineProcess {
            child,
            pgid,
            exit: None,
            done: false,
        })
    }

    /// The process group id (the leader's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// How the leader exited, if it has.
    pub fn try_exit(&mut self) -> Option<String> {
        if self.exit.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.exit = Some(status);
            }
        }
        self.exit.map(describe_exit)
    }

    /// Stops the whole group: SIGTERM, up to `grace` for it to exit, then SIGKILL
    /// and up to 10 s more. Errs when a live process of the group remains.
    pub async fn terminate(&mut self, grace: Duration) -> Result<(), String> {
        if self.done {
            return Ok(());
        }
        signal_group(self.pgid, Signal::SIGTERM);
        if !self.wait_gone(grace).await {
            signal_group(self.pgid, Signal::SIGKILL);
            self.wait_gone(KILL_WAIT).await;
        }
        let _ = self.try_exit();
        if group_alive(self.pgid) {
            return Err(format!(
                "engine process group {} still has live processes after SIGKILL",
                self.pgid
            ));
        }
        self.done = true;
        unregister(self.pgid);
        Ok(())
    }

    /// Waits up to `limit` until no live process of the group remains, reaping the
    /// leader meanwhile; true when none remains.
    async fn wait_gone(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let _ = self.try_exit();
            if !group_alive(self.pgid) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Drop for EngineProcess {
    fn drop(&mut self) {
        if !self.done {
            signal_group(self.pgid, Signal::SIGKILL);
            let _ = self.child.try_wait();
            unregister(self.pgid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines() {
        assert_eq!(parse_stat("42 (sleep) S 1 42 42 0 -1"), Some(('S', 42)));
        assert_eq!(parse_stat("7 (a (weird) name) Z 1 99 99"), Some(('Z', 99)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn tail_of_a_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.log");
        std::fs::write(&path, "a\nb\n\nloading 10%\rloading 100%\nc\n").unwrap();
        assert_eq!(log_tail(&path, 2), ["loading 100%", "c"]);
        assert_eq!(log_tail(&path, 10), ["a", "b", "loading 100%", "c"]);
        assert!(log_tail(&dir.path().join("none"), 3).is_empty());
    }

    #[test]
    fn exit_descriptions() {
        assert_eq!(describe_exit(ExitStatus::from_raw(1 << 8)), "exit code 1");
        assert_eq!(
            describe_exit(ExitStatus::from_raw(9)),
            "killed by signal 9 (SIGKILL)"
        );
    }
}
