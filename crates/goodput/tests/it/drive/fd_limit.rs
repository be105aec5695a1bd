//! File descriptors (issue #37, item 11): goodput raises its soft `RLIMIT_NOFILE`
//! to the hard limit, and refuses up front a load that cannot fit under the hard
//! one, instead of failing requests as the server's `connect` failures.

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::cli::goodput_child;
use common::fake_engine::{self, Behaviour};

/// Runs `goodput run` on a closed loop of `concurrency` against `url` with its
/// descriptor limits set to `soft` and `hard` before it starts.
async fn run_limited(url: &str, dir: &Path, concurrency: u32, soft: u64, hard: u64) -> Output {
    let profile = fake_engine::profile(url, concurrency, 1, "", "")
        .replace("points = [1]", &format!("points = [{concurrency}]"));
    let p = dir.join("p.toml");
    std::fs::write(&p, profile).unwrap();
    let mut cmd = goodput_child();
    cmd.arg("run")
        .arg(&p)
        .arg("-o")
        .arg(dir.join("r.json"))
        .arg("--no-html");
    // SAFETY: setrlimit is async-signal-safe, and the closure touches nothing else.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, soft, hard)
                .map_err(std::io::Error::from)
        });
    }
    let run = tokio::task::spawn_blocking(move || cmd.output().unwrap());
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("goodput ended")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_above_the_hard_descriptor_limit_is_refused_up_front() {
    let fake = fake_engine::start(Behaviour::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let o = run_limited(&fake.url, dir.path(), 300, 256, 256).await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("only 256") && err.contains("ulimit -n"),
        "the limit and how to raise it: {err}"
    );
    assert_eq!(fake.hits("/v1/completions"), 0, "nothing was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_low_soft_descriptor_limit_is_raised_to_the_hard_one() {
    let fake = fake_engine::start(Behaviour::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let (_, hard) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    let hard = hard.min(4096);
    assert!(
        hard >= 512,
        "the test needs a hard limit of 512 or more, not {hard}"
    );
    let o = run_limited(&fake.url, dir.path(), 300, 256, hard).await;
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let r = report::read_report(&dir.path().join("r.json")).unwrap();
    let point = &r.load["e"].points[0];
    assert_eq!(point.completed, vec![300], "{:?}", point.errors);
}
