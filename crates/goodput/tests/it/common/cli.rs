//! Running the goodput binary, the one way the tests do (as hyperfine's
//! `tests/common.rs`): [`goodput`] is an `assert_cmd` command, so a test reads
//!
//! ```ignore
//! goodput().args(["run", p, "-o", out]).assert().code(2).stderr(contains("line 12"));
//! ```
//!
//! and a failed assertion prints the command, its exit status, stdout and stderr.
//! [`Scratch`] is the test's directory for profiles, reports and engine logs.

use std::path::{Path, PathBuf};

pub use predicates::prelude::PredicateBooleanExt;
pub use predicates::str::contains;

/// The goodput binary, with stdin closed (empty), ready for `.args(..).assert()`
/// or `.output()`.
pub fn goodput() -> assert_cmd::Command {
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_goodput"))
}

/// `goodput run PROFILE -o OUT`, ready for more flags and `.output()` or
/// `.assert()`.
pub fn goodput_run(profile: &Path, out: &Path) -> assert_cmd::Command {
    let mut cmd = goodput();
    cmd.arg("run").arg(profile).arg("-o").arg(out);
    cmd
}

/// Runs the goodput binary with `args` to completion and returns what it wrote, for
/// a test that inspects the output itself (the same command as [`goodput`]).
pub fn goodput_output(args: &[&str]) -> std::process::Output {
    goodput()
        .args(args)
        .output()
        .expect("the goodput binary runs")
}

/// The goodput binary as a plain `std` command, for a test that starts it and
/// signals it while it runs (stdin closed).
pub fn goodput_child() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"));
    cmd.stdin(std::process::Stdio::null());
    cmd
}

/// Asserts that a finished command (`what`, for the message) succeeded, showing
/// its exit status, stdout and stderr otherwise; its stdout.
pub fn succeeded(out: &std::process::Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} ({}): {}{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Text of a captured stream (stdout or stderr).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A test's scratch directory, removed when dropped.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("a scratch directory"),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `name` inside the directory (not created).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `name` inside the directory, as the string a command line takes.
    pub fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// `goodput run` of `profile` (written to `p.toml`) into `r.json` in this
    /// directory, with `extra` flags; ready for `.assert()`.
    pub fn run(&self, profile: &str, extra: &[&str]) -> assert_cmd::Command {
        let mut cmd = goodput_run(&self.write("p.toml", profile), &self.path("r.json"));
        cmd.args(extra);
        cmd
    }

    /// The report a [`Scratch::run`] wrote.
    pub fn report(&self) -> goodput::report::Report {
        goodput::report::read_report(&self.path("r.json")).expect("the run wrote its report")
    }

    /// Writes `text` to `name` inside the directory; its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
        p
    }
}
