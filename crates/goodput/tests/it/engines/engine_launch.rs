//! Launches real child engines (a fake vLLM in Python, a shell, the simulator) and
//! checks readiness, KV-pool detection, telemetry, environment, failures, and that
//! no process of any engine's group is left behind.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::procs::group;
use common::require;

use goodput::define::profile::{EngineKind, EngineSpec, PortSpec, TelemetrySpec};
use goodput::drive::engine::{self, EngineContext, EngineHandle};
use goodput::measure::{environment, telemetry};
use indexmap::IndexMap;

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_engine.py");

fn ctx(dir: &Path) -> EngineContext {
    EngineContext {
        log_dir: dir.join("logs"),
        goodput_exe: PathBuf::from(env!("CARGO_BIN_EXE_goodput")),
        client: reqwest::Client::new(),
    }
}

/// A fake vLLM started with `command`, port substituted by goodput.
fn fake(extra: &[&str]) -> EngineSpec {
    let mut command = vec![
        "python3".to_string(),
        FAKE.to_string(),
        "--port".into(),
        "{port}".into(),
    ];
    command.extend(extra.iter().map(|s| s.to_string()));
    EngineSpec {
        kind: Some(EngineKind::Command),
        command: Some(command),
        port: Some(PortSpec::Auto("auto".into())),
        ready_timeout_s: Some(30.0),
        stop_grace_s: Some(5.0),
        ..Default::default()
    }
}

/// Asserts that group `pgid` is empty (allowing a moment for the kernel).
fn assert_gone(pgid: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !group(pgid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        group(pgid).is_empty(),
        "processes left in group {pgid}: {:?}",
        group(pgid)
    );
}

async fn sample_and_stop(
    handle: EngineHandle,
    client: &reqwest::Client,
) -> (
    report::EngineEnv,
    Option<report::GpuSummary>,
    Vec<report::GpuInfo>,
) {
    let spec = TelemetrySpec {
        source: "sim".into(),
        interval_ms: 100,
        ..Default::default()
    };
    let (tel, notice) = telemetry::open(&spec, &handle.base_url, client).await;
    assert_eq!(notice, None);
    assert_eq!(tel.source_name(), Some("sim"));
    let sampler = tel.start_trial();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let samples = sampler.finish().await;
    assert!(samples.len() >= 3, "{} samples", samples.len());
    let summary = telemetry::summarize(&[samples], "sim");
    let pgid = handle.pid().unwrap();
    assert!(!group(pgid).is_empty());
    let env = handle.env.clone();
    handle.stop().await.unwrap();
    assert_gone(pgid);
    (env, summary, tel.gpus())
}

#[tokio::test]
async fn two_fake_engines_in_turn() {
    if !require::python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    let mut engines = IndexMap::new();
    let mut gpus = Vec::new();
    for (name, kv) in [("fake-a", 2928u64), ("fake-b", 171_008)] {
        let mut spec = fake(&["--kv-tokens", &kv.to_string(), "--model", name]);
        spec.env.insert("HF_TOKEN".into(), "hf_secret".into());
        let started = Instant::now();
        let handle = engine::start(name, &spec, &ctx).await.unwrap();
        // /health answers 503 for its first second.
        assert!(started.elapsed() >= Duration::from_millis(900));
        assert_eq!(handle.model, name);
        assert_eq!(handle.kv_pool_tokens, Some(kv));
        assert_eq!(handle.kv_pool_source.as_deref(), Some("vllm-log"));
        assert!(
            handle.base_url.starts_with("http://127.0.0.1:") && !handle.base_url.ends_with('/')
        );
        assert!(handle.notices.is_empty(), "{:?}", handle.notices);
        assert_eq!(handle.env.version.as_deref(), Some("0.0.0-fake"));
        assert_eq!(handle.env.kind, "command");
        let command = handle.env.command.clone().unwrap();
        assert_eq!(command[0], "HF_TOKEN=***");
        assert!(!command
            .iter()
            .any(|a| a.contains("{port}") || a.contains("hf_secret")));
        let log = handle.log_path.clone().unwrap();
        assert_eq!(log, ctx.log_dir.join(format!("{name}.log")));
        let counters = handle.scrape_spec_counters().await.unwrap().unwrap();
        assert!(counters.accepted_tokens <= counters.draft_tokens);
        assert!(handle
            .log_tail(50)
            .iter()
            .any(|l| l.contains("this line goes to stderr")));
        let (env, summary, seen) = sample_and_stop(handle, &ctx.client).await;
        let summary = summary.unwrap();
        assert_eq!(summary.max_sm_clock_mhz, Some(2040.0));
        assert_eq!(summary.source.as_deref(), Some("sim"));
        assert!(summary.median_sm_mhz.n == 1 && summary.max_temp_c.is_some());
        assert!(std::fs::read_to_string(&log)
            .unwrap()
            .contains("GPU KV cache size"));
        gpus = seen;
        engines.insert(name.to_string(), env);
    }
    let env = environment::capture(gpus, engines);
    assert_eq!(env.gpus[0].name.as_deref(), Some("Fake L4"));
    assert_eq!(env.engines.len(), 2);
    assert_eq!(env.engines["fake-b"].kv_pool_tokens, Some(171_008));
    assert_eq!(env.engines["fake-a"].model.as_deref(), Some("fake-a"));
    assert!(env.host.as_ref().unwrap().cpus.is_some());
    let json = serde_json::to_string(&env).unwrap();
    assert!(!json.contains("hf_secret"));
}

#[tokio::test]
async fn url_engine_uses_metrics_and_the_served_model() {
    if !require::python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    let backing = engine::start(
        "backing",
        &fake(&["--no-kv-line", "--kv-tokens", "4096"]),
        &ctx,
    )
    .await
    .unwrap();
    // Without the log line, the launched engine finds its pool in /metrics.
    assert_eq!(backing.kv_pool_source.as_deref(), Some("vllm-metrics"));
    let spec = EngineSpec {
        url: Some(format!("{}/", backing.base_url)),
        ..Default::default()
    };
    let url = engine::start("by-url", &spec, &ctx).await.unwrap();
    assert_eq!(url.base_url, backing.base_url);
    assert_eq!(url.model, "fake/model-0.5B");
    assert_eq!(
        (url.kv_pool_tokens, url.kv_pool_source.as_deref()),
        (Some(4096), Some("vllm-metrics"))
    );
    assert_eq!(url.pid(), None);
    assert!(url.env.command.is_none());
    // A profile value wins; a disagreeing engine earns a notice.
    let spec = EngineSpec {
        kv_pool_tokens: Some(1000),
        ..spec
    };
    let pinned = engine::start("pinned", &spec, &ctx).await.unwrap();
    assert_eq!(
        (pinned.kv_pool_tokens, pinned.kv_pool_source.as_deref()),
        (Some(1000), Some("profile"))
    );
    assert!(pinned.notices[0].contains("4096"), "{:?}", pinned.notices);
    url.stop().await.unwrap();
    pinned.stop().await.unwrap();
    let pgid = backing.pid().unwrap();
    backing.stop().await.unwrap();
    assert_gone(pgid);
}

#[tokio::test]
async fn unreachable_url_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let port = engine::command::free_port().unwrap();
    let spec = EngineSpec {
        url: Some(format!("http://127.0.0.1:{port}")),
        ..Default::default()
    };
    let started = Instant::now();
    let err = engine::start("gone", &spec, &ctx(dir.path()))
        .await
        .unwrap_err();
    assert_eq!(err.kind, report::FailureKind::Unreachable);
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn ready_timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    // The shell leads the group: its pid is the group id.
    let spec = EngineSpec {
        shell: Some("echo pgid=$$ port={port}; sleep 1000 & sleep 1000".into()),
        ready_timeout_s: Some(1.0),
        stop_grace_s: Some(2.0),
        ..Default::default()
    };
    let err = engine::start("stuck", &spec, &ctx(dir.path()))
        .await
        .unwrap_err();
    assert_eq!(err.kind, report::FailureKind::ReadyTimeout, "{err:?}");
    let line = err
        .log_tail
        .iter()
        .find(|l| l.starts_with("pgid="))
        .expect("the shell's line");
    let pgid: u32 = line["pgid=".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_gone(pgid);
}

#[tokio::test]
async fn early_exit_is_reported_with_status_and_log() {
    if !require::python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = fake(&["--health-delay", "100", "--exit-after", "0.3"]);
    let err = engine::start("dies", &spec, &ctx(dir.path()))
        .await
        .unwrap_err();
    assert_eq!(err.kind, report::FailureKind::Exited, "{err:?}");
    assert_eq!(err.exit_status.as_deref(), Some("exit code 3"));
    assert!(
        err.log_tail.iter().any(|l| l.contains("fatal: giving up")),
        "{:?}",
        err.log_tail
    );
    assert!(err.log_tail.len() <= 20);
}

#[tokio::test]
async fn sigterm_ignored_means_sigkill_after_grace() {
    if !require::python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fake(&["--ignore-sigterm", "--health-delay", "0"]);
    spec.stop_grace_s = Some(0.5);
    let mut handle = engine::start("stubborn", &spec, &ctx(dir.path()))
        .await
        .unwrap();
    assert_eq!(handle.exit_status(), None);
    let pgid = handle.pid().unwrap();
    let started = Instant::now();
    handle.stop().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert_gone(pgid);
}

#[tokio::test]
async fn dropping_a_handle_kills_its_group() {
    if !require::python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut spec = fake(&["--health-delay", "0"]);
    spec.command = Some(vec![
        "sh".into(),
        "-c".into(),
        format!("sleep 1000 & exec python3 {FAKE} --port {{port}} --health-delay 0"),
    ]);
    let handle = engine::start("dropped", &spec, &ctx(dir.path()))
        .await
        .unwrap();
    let pgid = handle.pid().unwrap();
    assert_eq!(group(pgid).len(), 2, "the engine and its grandchild");
    drop(handle);
    assert_gone(pgid);
}

#[tokio::test]
async fn launch_failures() {
    let dir = tempfile::tempdir().unwrap();
    let spec = EngineSpec {
        command: Some(vec!["/nonexistent/engine".into()]),
        ..Default::default()
    };
    let err = engine::start("missing", &spec, &ctx(dir.path()))
        .await
        .unwrap_err();
    assert_eq!(err.kind, report::FailureKind::Launch);
    assert!(
        err.message.contains("/nonexistent/engine"),
        "{}",
        err.message
    );
    let spec = EngineSpec {
        url: Some("http://127.0.0.1:1".into()),
        api_key_env: Some("GOODPUT_TEST_SURELY_UNSET_KEY".into()),
        ..Default::default()
    };
    let err = engine::start("no-key", &spec, &ctx(dir.path()))
        .await
        .unwrap_err();
    assert_eq!(err.kind, report::FailureKind::Launch);
    assert!(err.message.contains("GOODPUT_TEST_SURELY_UNSET_KEY"));
}

/// `goodput sim` as an engine: its CLI answers, and each launch serves.
#[tokio::test]
async fn simulator_engine() {
    let exe = env!("CARGO_BIN_EXE_goodput");
    let help = std::process::Command::new(exe)
        .args(["sim", "--help"])
        .output()
        .unwrap();
    assert!(
        help.status.success(),
        "`goodput sim --help` failed ({}): {}",
        help.status,
        String::from_utf8_lossy(&help.stderr)
    );
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("--preset"),
        "`goodput sim --help` lists no --preset: {}",
        String::from_utf8_lossy(&help.stdout)
    );
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(dir.path());
    let spec = EngineSpec {
        kind: Some(EngineKind::Sim),
        ready_timeout_s: Some(30.0),
        ..Default::default()
    };
    for name in ["sim-a", "sim-b"] {
        // A simulator that exits or never gets ready fails here, with its log.
        let handle = engine::start(name, &spec, &ctx)
            .await
            .unwrap_or_else(|e| panic!("`goodput sim` did not serve: {e:?}"));
        assert!(handle.kv_pool_tokens.is_some_and(|n| n > 0), "{handle:?}");
        assert_eq!(handle.kv_pool_source.as_deref(), Some("sim"));
        assert!(!handle.model.is_empty());
        assert_eq!(handle.env.kind, "sim");
        let (env, summary, _) = sample_and_stop(handle, &ctx.client).await;
        assert!(summary.is_some());
        assert_eq!(env.command.unwrap()[1], "sim");
    }
}

/// A real llama-server (CPU, SmolLM2-135M) launched as `kind = "llama-cpp"`.
#[tokio::test]
async fn llama_cpp_engine() {
    let Some((server, model)) = require::llama_server() else {
        return;
    };
    // The kind runs `$LLAMA_SERVER`. scripts/test.sh exports it, so this is set only
    // when the binary came from the installer instead; every test that reads it wants
    // this same path, so no reader sees another value.
    if std::env::var("LLAMA_SERVER").as_deref() != Ok(server.as_str()) {
        std::env::set_var("LLAMA_SERVER", &server);
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = EngineSpec {
        kind: Some(EngineKind::LlamaCpp),
        model: Some(model.clone()),
        args: ["-c", "2048", "-np", "4", "--metrics"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ready_timeout_s: Some(120.0),
        ..Default::default()
    };
    let handle = engine::start("llama", &spec, &ctx(dir.path()))
        .await
        .unwrap();
    assert_eq!(handle.kv_pool_tokens, Some(2048), "{handle:?}");
    assert_eq!(handle.kv_pool_source.as_deref(), Some("llama-cpp-props"));
    assert_eq!(handle.model, model, "served under its path");
    assert!(
        handle
            .env
            .version
            .as_deref()
            .is_some_and(|v| v.starts_with('b')),
        "{:?}",
        handle.env.version
    );
    assert_eq!(handle.env.command.as_ref().unwrap()[0], server);
    assert!(handle.notices.is_empty(), "{:?}", handle.notices);
    let pgid = handle.pid().unwrap();
    handle.stop().await.unwrap();
    assert_gone(pgid);
}
