//! No engine outlives goodput: a helper process (this test binary, re-run with
//! `GOODPUT_ENGINE_HOLDER=<mode>`) starts an engine whose process group holds a
//! grandchild, then panics, exits, or is sent SIGTERM or SIGINT; the test checks
//! that every process of the engine's group is gone afterwards.
//!
//! In the `stuck` mode the helper never finishes stopping after the first signal;
//! a second signal must kill the engine and end the helper.
//!
//! In the `panic-forgotten` and `exit` modes the helper leaks its engine handle
//! first, so only the panic hook or the `atexit` handler of
//! `engine::install_cleanup_hooks` can be what kills the engine.
//!
//! The tests run the fake vLLM under python3: without it they fail, unless
//! `GOODPUT_SKIP_PYTHON=1` (see `common/require.rs`).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::procs::{self, group, Signal};
use common::require;
use goodput::define::profile::{EngineKind, EngineSpec};
use goodput::drive::engine::{self, EngineContext};

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_engine.py");
const MODE_VAR: &str = "GOODPUT_ENGINE_HOLDER";

/// Not a test: the helper process the tests below start, by name, with
/// `--ignored` and `GOODPUT_ENGINE_HOLDER` set (so a plain run lists it as ignored
/// rather than as a pass).
#[test]
#[ignore = "the helper process of this file's tests, started by them"]
fn engine_holder_helper() {
    let mode = std::env::var(MODE_VAR).unwrap_or_else(|_| {
        panic!("engine_holder_helper is the helper of this file's tests, not a test: {MODE_VAR} is unset")
    });
    engine::install_cleanup_hooks();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let log_dir = std::env::var("GOODPUT_HOLDER_LOGS").unwrap();
        let ctx = EngineContext {
            log_dir: log_dir.into(),
            goodput_exe: env!("CARGO_BIN_EXE_goodput").into(),
            client: reqwest::Client::new(),
        };
        let spec = EngineSpec {
            kind: Some(EngineKind::Command),
            shell: Some(format!(
                "sleep 1000 & exec python3 {FAKE} --port {{port}} --health-delay 0"
            )),
            ready_timeout_s: Some(30.0),
            stop_grace_s: Some(5.0),
            ..Default::default()
        };
        let signal = engine::shutdown_signal();
        let handle = engine::start("held", &spec, &ctx).await.unwrap();
        println!("PGID={}", handle.pid().unwrap());
        // Wait for the parent to have seen the engine's processes alive.
        let mut go = String::new();
        std::io::stdin().read_line(&mut go).unwrap();
        match mode.as_str() {
            "panic" => panic!("helper panics while holding an engine"),
            "panic-forgotten" => {
                std::mem::forget(handle);
                panic!("helper panics after leaking its engine handle");
            }
            "exit" => {
                std::mem::forget(handle);
                std::process::exit(2);
            }
            "stuck" => {
                println!("READY");
                let name = signal.await;
                println!("STOPPING after {name}");
                // A stop that hangs: only the second signal ends this.
                std::future::pending::<()>().await;
                drop(handle);
            }
            _ => {
                println!("READY");
                let name = signal.await;
                handle.stop().await.unwrap();
                println!("STOPPED by {name}");
                std::process::exit(130);
            }
        }
    });
}

/// Starts the helper in `mode`; returns it with its stdout lines on a channel.
fn spawn_helper(mode: &str, logs: &std::path::Path) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "engines::engine_cleanup::engine_holder_helper",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE_VAR, mode)
        .env("GOODPUT_HOLDER_LOGS", logs)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// The text from `marker` on, of the first line holding it (libtest may print
/// `test engine_holder_helper ... ` before it on the same line).
fn wait_line(rx: &mpsc::Receiver<String>, marker: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            if let Some(at) = line.find(marker) {
                return line[at..].to_string();
            }
        }
    }
    panic!("the helper never printed {marker}");
}

/// Kills the helper, and the engine group it reported, if a check fails half-way.
struct Cleanup {
    helper: u32,
    pgid: Option<u32>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        procs::signal(self.helper, Signal::SIGKILL);
        if let Some(pgid) = self.pgid {
            procs::signal_group(pgid, Signal::SIGKILL);
        }
    }
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the helper did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the helper in `mode`, optionally signals it once its engine is ready, and
/// checks the engine's whole group is gone after the helper ends.
fn check(mode: &str, signal: Option<Signal>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, rx) = spawn_helper(mode, dir.path());
    let mut cleanup = Cleanup {
        helper: child.id(),
        pgid: None,
    };
    let pgid: u32 = wait_line(&rx, "PGID=")["PGID=".len()..]
        .trim()
        .parse()
        .unwrap();
    cleanup.pgid = Some(pgid);
    let before = group(pgid);
    assert_eq!(before.len(), 2, "engine and grandchild alive: {before:?}");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "go").unwrap();
    let mut last = String::new();
    if let Some(sig) = signal {
        wait_line(&rx, "READY");
        procs::signal(child.id(), sig);
        if mode == "stuck" {
            last = wait_line(&rx, "STOPPING");
            // A second signal sooner than INSIST_AFTER is the same request
            // (`timeout` signals the child, then its group); later, it insists.
            std::thread::sleep(
                goodput::drive::engine::process::INSIST_AFTER + Duration::from_millis(200),
            );
            procs::signal(child.id(), Signal::SIGINT);
        } else {
            last = wait_line(&rx, "STOPPED");
        }
    }
    let status = wait_exit(&mut child);
    assert!(
        !status.success(),
        "the helper must exit non-zero ({status})"
    );
    if mode == "stuck" {
        assert_eq!(status.code(), Some(130), "{status}");
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while !group(pgid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        group(pgid).is_empty(),
        "{mode}: left behind {:?}",
        group(pgid)
    );
    last
}

#[test]
fn panic_while_holding_an_engine() {
    if !require::python() {
        return;
    }
    check("panic", None);
}

#[test]
fn panic_hook_kills_a_leaked_engine() {
    if !require::python() {
        return;
    }
    check("panic-forgotten", None);
}

#[test]
fn exit_kills_a_leaked_engine() {
    if !require::python() {
        return;
    }
    check("exit", None);
}

#[test]
fn sigterm_stops_the_engine() {
    if !require::python() {
        return;
    }
    assert_eq!(check("signal", Some(Signal::SIGTERM)), "STOPPED by SIGTERM");
}

#[test]
fn sigint_stops_the_engine() {
    if !require::python() {
        return;
    }
    assert_eq!(check("signal", Some(Signal::SIGINT)), "STOPPED by SIGINT");
}

#[test]
fn a_second_signal_kills_engines_and_exits() {
    if !require::python() {
        return;
    }
    assert_eq!(
        check("stuck", Some(Signal::SIGTERM)),
        "STOPPING after SIGTERM"
    );
}
