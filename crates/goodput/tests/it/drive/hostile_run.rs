//! Whole runs of the goodput binary against misbehaving engines on loopback
//! ([`common::fake_engine`]), one finding of the hardening review per test: a bad
//! value in `/metrics` must not lose the report, an endless answer must not take
//! memory without bound, a server that hangs must not cost minutes, what a server
//! sends must not reach the terminal as control sequences, and two runs must not
//! share one output.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::cli::{goodput, goodput_child};
use common::fake_engine::{self, run_measured, Behaviour, Completions, Metrics, Models};

/// Runs `goodput run PROFILE -o OUT extra...` off the test's runtime (which serves
/// the fake engine) and returns its output.
async fn run(profile: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut cmd = goodput();
    cmd.arg("run")
        .arg(profile)
        .arg("-o")
        .arg(out)
        .args(extra)
        .timeout(Duration::from_secs(120));
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write_profile(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("p.toml");
    std::fs::write(&p, text).unwrap();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_finite_and_overflowing_metrics_do_not_lose_the_report() {
    let metrics = "# TYPE my_gauge gauge\nmy_gauge +Inf\n# TYPE my_nan gauge\nmy_nan NaN\n\
                   # TYPE big gauge\nbig{a=\"1\"} 1.5e308\nbig{a=\"2\"} 1.5e308\n\
                   # TYPE ok_total counter\nok_total 3\n";
    let fake = fake_engine::start(Behaviour {
        metrics: Metrics::Text(metrics.into()),
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let p = write_profile(dir.path(), &fake_engine::profile(&fake.url, 3, 2, "", ""));
    let out = dir.path().join("r.json");
    let o = run(&p, &out, &["--no-html"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = report::read_report(&out).unwrap();
    assert_eq!(r.run.as_ref().unwrap().status, report::RunStatus::Complete);
    assert_eq!(r.load["e"].points[0].completed, vec![3, 3]);
    let notices: Vec<String> = r
        .run
        .unwrap()
        .notices
        .iter()
        .map(|n| n.to_string())
        .collect();
    let notices = notices.join("\n");
    assert!(notices.contains("not finite"), "{notices}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_model_list_fails_at_once_with_bounded_memory() {
    let fake = fake_engine::start(Behaviour {
        models: Models::Endless,
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let p = write_profile(dir.path(), &fake_engine::profile(&fake.url, 2, 1, "", ""));
    let out = dir.path().join("r.json");
    let mut cmd = goodput_child();
    cmd.arg("run").arg(&p).arg("-o").arg(&out).arg("--no-html");
    let (code, rss) = run_measured(cmd).await;
    // Every engine failed: exit 4, the report written.
    assert_eq!(code, Some(4));
    let r = report::read_report(&out).unwrap();
    let err = r.load["e"].error.clone().expect("the engine failed");
    assert!(
        err.message.contains("/v1/models") && err.message.contains("longer than"),
        "{err:?}"
    );
    // Once, not again every 5 s until the ready timeout.
    assert!(fake.hits("/v1/models") <= 2, "{}", fake.hits("/v1/models"));
    // The server offered 512 MiB; goodput reads 4 MiB of it at most.
    eprintln!(
        "goodput's peak RSS against an endless /v1/models: {} MiB",
        rss >> 20
    );
    assert!(rss < 96 << 20, "goodput reached {} MiB", rss >> 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_metrics_endpoint_is_not_asked_when_disabled_and_given_up_when_not() {
    let fake = fake_engine::start(Behaviour {
        metrics: Metrics::Hang,
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let off = "[server_metrics]\nenabled = false\n";
    let p = write_profile(dir.path(), &fake_engine::profile(&fake.url, 2, 3, "", off));
    let o = run(&p, &dir.path().join("off.json"), &["--no-html"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Only the engine's start-up look for a KV pool asks.
    assert!(fake.hits("/metrics") <= 1, "{}", fake.hits("/metrics"));

    let before = fake.hits("/metrics");
    let p = write_profile(dir.path(), &fake_engine::profile(&fake.url, 2, 3, "", ""));
    let o = run(&p, &dir.path().join("on.json"), &["--no-html"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Start-up, then the first trial's first scrape and its counters: then never.
    let asked = fake.hits("/metrics") - before;
    assert!(asked <= 3, "/metrics asked {asked} times over 3 trials");
    let r = report::read_report(&dir.path().join("on.json")).unwrap();
    let notices: Vec<String> = r
        .run
        .unwrap()
        .notices
        .iter()
        .map(|n| n.to_string())
        .collect();
    let notices = notices.join("\n");
    assert!(notices.contains("not asked again"), "{notices}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_abandons_the_trial_after_three_timeouts() {
    let fake = fake_engine::start(Behaviour {
        completions: Completions::Never,
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let p = write_profile(
        dir.path(),
        &fake_engine::profile(&fake.url, 20, 1, "request_timeout_s = 0.5", ""),
    );
    let out = dir.path().join("r.json");
    let o = run(&p, &out, &["--no-html"]).await;
    assert!(o.status.code().is_some(), "{}", text(&o.stderr));
    assert_eq!(
        fake.hits("/v1/completions"),
        3,
        "one after another until three"
    );
    let r = report::read_report(&out).unwrap();
    let p0 = &r.load["e"].points[0];
    assert_eq!(p0.errors.get("timeout"), Some(&3), "{:?}", p0.errors);
    let notices: Vec<String> = r
        .run
        .unwrap()
        .notices
        .iter()
        .map(|n| n.to_string())
        .collect();
    let notices = notices.join("\n");
    assert!(notices.contains("abandoned after 3 requests"), "{notices}");
    assert!(notices.contains("17 requests were not sent"), "{notices}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_usage_block_without_max_tokens_is_bad_usage() {
    let fake = fake_engine::start(Behaviour {
        completions: Completions::Ok {
            completion_tokens: 1_000_000,
        },
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    // A JSONL prompt without max_tokens: the request sets no limit.
    std::fs::write(
        dir.path().join("w.jsonl"),
        "{\"prompt\": \"hello there\"}\n",
    )
    .unwrap();
    let profile = fake_engine::profile(&fake.url, 3, 1, "", "").replace(
        "input_tokens = 8\noutput_tokens = 4",
        "kind = \"jsonl\"\npath = \"w.jsonl\"",
    );
    let p = write_profile(dir.path(), &profile);
    let out = dir.path().join("r.json");
    let o = run(&p, &out, &["--no-html"]).await;
    let r = report::read_report(&out).unwrap_or_else(|e| panic!("{e}\n{}", text(&o.stderr)));
    let p0 = &r.load["e"].points[0];
    assert_eq!(p0.errors.get("bad_usage"), Some(&3), "{:?}", p0.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_escapes_from_a_server_are_shown_not_obeyed() {
    let body = "oops \x1b]0;pwned\x07\x1b[2J\x1b[31mred".to_string();
    let fake = fake_engine::start(Behaviour {
        completions: Completions::Error(500, body),
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let p = write_profile(dir.path(), &fake_engine::profile(&fake.url, 2, 1, "", ""));
    let out = dir.path().join("r.json");
    let o = run(&p, &out, &["--no-html"]).await;
    let shown = goodput()
        .args(["show", out.to_str().unwrap()])
        .output()
        .unwrap();
    for (what, bytes) in [
        ("run stdout", &o.stdout),
        ("run stderr", &o.stderr),
        ("show stdout", &shown.stdout),
    ] {
        let t = text(bytes);
        assert!(
            !t.contains("\x1b]") && !t.contains('\x07') && !t.contains("\x1b[2J"),
            "{what} carries the server's control sequences: {t:?}"
        );
    }
    assert!(
        text(&shown.stdout).contains("\\u{1b}]0;pwned"),
        "{}",
        text(&shown.stdout)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_on_one_output_is_refused_naming_the_first() {
    let fake = fake_engine::start(Behaviour {
        completions: Completions::Never,
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let p = write_profile(
        dir.path(),
        &fake_engine::profile(&fake.url, 20, 1, "request_timeout_s = 30", ""),
    );
    let out = dir.path().join("r.json");
    let mut first = goodput_child()
        .args([
            "run",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--no-html",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first run is sending (it holds the lock from its start).
    let mut waited = 0;
    while fake.hits("/v1/completions") == 0 {
        waited += 1;
        assert!(waited < 600, "the first run never sent a request");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let o = run(&p, &out, &["--no-html", "--fresh"]).await;
    let pid = first.id();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = first.wait();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(e.contains(&format!("goodput process {pid}")), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_signals_close_together_still_end_the_run_gracefully() {
    let fake = fake_engine::start(Behaviour::default()).await;
    let dir = tempfile::tempdir().unwrap();
    // A trial that takes a while: many requests, one at a time.
    let p = write_profile(
        dir.path(),
        &fake_engine::profile(&fake.url, 5_000, 2, "", ""),
    );
    let out = dir.path().join("r.json");
    let child = goodput_child()
        .args([
            "run",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--no-html",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while fake.hits("/v1/completions") < 20 {
        waited += 1;
        assert!(waited < 600, "the run never got going");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    // As coreutils `timeout` does: the child, then (here: again) 20 ms later.
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let o = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    let r = report::read_report(&out).unwrap();
    assert_eq!(r.run.as_ref().unwrap().status, report::RunStatus::Partial);
    // The trial in flight was kept, as an interrupted one: its records are written.
    let records = std::fs::read_to_string(goodput::drive::record::records_path(&out)).unwrap();
    assert!(records.lines().count() >= 20, "{}", records.lines().count());
    let trials = &r.load["e"].points[0].trials;
    assert_eq!(trials.len(), 1, "{trials:?}");
    assert_eq!(trials[0].error.as_deref(), Some("interrupted"));
}

#[test]
fn devices_fifos_and_paths_outside_the_shards_folder_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shown = goodput().args(["show", "/dev/zero"]).output().unwrap();
    assert_eq!(shown.status.code(), Some(2), "{}", text(&shown.stderr));
    assert!(text(&shown.stderr).contains("not a regular file"));
    let p = write_profile(
        dir.path(),
        &fake_engine::profile("http://127.0.0.1:9", 1, 1, "", ""),
    );
    let o = goodput()
        .args(["run", p.to_str().unwrap(), "-o", "/dev/null", "--force"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("not a regular file"));
    let o = goodput()
        .args(["run", "/dev/zero"])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("not a regular file"));
}

#[test]
fn a_plan_too_large_for_memory_is_refused_with_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let profile = fake_engine::profile("http://127.0.0.1:9", 10_000_000, 1, "", "")
        .replace("input_tokens = 8", "input_tokens = 100000");
    let p = write_profile(dir.path(), &profile);
    let o = goodput()
        .args(["run", p.to_str().unwrap(), "-o"])
        .arg(dir.path().join("r.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(e.contains("GiB") && e.contains("requests_per_trial"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_with_a_newline_fails_at_once() {
    let fake = fake_engine::start(Behaviour::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let p = write_profile(
        dir.path(),
        &fake_engine::profile(&fake.url, 1, 1, "", "api_key_env = \"HOSTILE_TEST_KEY\""),
    );
    let out = dir.path().join("r.json");
    let mut cmd = goodput();
    cmd.args([
        "run",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--no-html",
    ])
    .env("HOSTILE_TEST_KEY", "sk-abcdef123456\n")
    .timeout(Duration::from_secs(60));
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let r = report::read_report(&out).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stderr)));
    let err = r.load["e"].error.clone().expect("the engine failed");
    assert!(err.message.contains("control character"), "{err:?}");
    assert_eq!(fake.hits("/v1/completions"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_shorter_than_the_exact_length_asked_are_counted_and_warned() {
    // The fake stops after 4 tokens with `finish_reason: length`; 8 are asked for.
    let fake = fake_engine::start(Behaviour::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let profile = fake_engine::profile(&fake.url, 3, 1, "", "")
        .replace("output_tokens = 4", "output_tokens = 8");
    let p = write_profile(dir.path(), &profile);
    let out = dir.path().join("r.json");
    let o = run(&p, &out, &["--no-html"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = report::read_report(&out).unwrap();
    let short = r.load["e"].points[0].short_outputs.clone().unwrap();
    assert_eq!((short.requests, short.of), (3, 3));
    assert_eq!(short.finish_reasons.get("length"), Some(&3));
    let shown = goodput()
        .args(["show", out.to_str().unwrap()])
        .output()
        .unwrap();
    let t = text(&shown.stdout);
    assert!(t.contains("Answers shorter than asked"), "{t}");
    assert!(t.contains("3 of 3 requests"), "{t}");
    // Asked for what it got: nothing to say.
    let p = write_profile(dir.path(), &fake_engine::profile(&fake.url, 3, 1, "", ""));
    let out = dir.path().join("r4.json");
    run(&p, &out, &["--no-html"]).await;
    let r = report::read_report(&out).unwrap();
    assert_eq!(
        r.load["e"].points[0]
            .short_outputs
            .clone()
            .unwrap()
            .requests,
        0
    );
}

#[test]
fn thread_counts_and_model_ids_beyond_reason_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_profile(
        dir.path(),
        &fake_engine::profile("http://127.0.0.1:9", 1, 1, "", ""),
    );
    let out = dir.path().join("r.json");
    // No panic (exit 134): a usage error naming the flag.
    let o = goodput()
        .args(["run", p.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .args(["--client-threads", "20000"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--client-threads"),
        "{}",
        text(&o.stderr)
    );
    // A model id is sent in every request: one of 2 KB is refused with its key.
    let long = "m".repeat(2048);
    let p = write_profile(
        dir.path(),
        &fake_engine::profile("http://127.0.0.1:9", 1, 1, "", "")
            .replace("model = \"m\"", &format!("model = \"{long}\"")),
    );
    let o = goodput()
        .args(["run", p.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(e.contains("model") && e.contains("1024 bytes"), "{e}");
}
