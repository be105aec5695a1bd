//! Reaching a running server the way OpenAI clients are pointed at one: a base URL
//! ending in `/v1`, a server that will never list models at the path asked (404, a
//! redirect loop) and one that wants an API key, from `OPENAI_API_KEY` as vLLM's
//! clients read it. Each run is bounded: a wait that would last the 600 s readiness
//! timeout fails the test instead.

use std::time::{Duration, Instant};

use crate::common;

use common::cli::{goodput, text};
use common::fake_engine::{self, Behaviour, Models};

/// Longer than goodput's fail-fast windows, far shorter than its readiness timeout.
const BOUND: Duration = Duration::from_secs(60);

const PROFILE: &str = r#"name = "url"
[slo]
ttft_ms = 1000
[load]
points = [1]
requests_per_trial = 2
warmup_requests = 0
[workload]
input_tokens = 8
output_tokens = 4
"#;

struct Ran {
    code: Option<i32>,
    stderr: String,
    stdout: String,
    elapsed: Duration,
    report: Option<report::Report>,
    dir: tempfile::TempDir,
}

impl Ran {
    /// The message the one engine failed with, from the report.
    fn engine_error(&self) -> String {
        let r = self.report.as_ref().expect("a report");
        let engine = r.load.values().next().expect("one engine");
        engine
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("the engine failed: {}", self.stderr))
            .message
            .clone()
    }
}

/// `goodput run` of [`PROFILE`] against `url` with `args`, the environment changed
/// by `env` (`None` removes the variable), off the test's runtime.
async fn run(url: &str, args: &[&str], env: &[(&str, Option<&str>)]) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(&p, PROFILE).unwrap();
    let out = dir.path().join("r.json");
    let mut cmd = goodput();
    cmd.arg("run")
        .arg(&p)
        .args(["--url", url, "--model", "m", "--no-html", "-o"])
        .arg(&out)
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .timeout(BOUND);
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let start = Instant::now();
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    Ran {
        code: o.status.code(),
        stderr: text(&o.stderr),
        stdout: text(&o.stdout),
        elapsed: start.elapsed(),
        report: report::read_report(&out).ok(),
        dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_url_ending_in_v1_is_taken_as_the_servers_root_with_a_notice() {
    let fake = fake_engine::start(Behaviour::default()).await;
    let ran = run(&format!("{}/v1/", fake.url), &[], &[]).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("ends in /v1") && ran.stderr.contains(&fake.url),
        "{}",
        ran.stderr
    );
    let r = ran.report.as_ref().unwrap();
    assert_eq!(r.load["m"].points[0].completed, vec![2]);
    assert_eq!(fake.hits("/v1/completions"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_has_no_v1_models_fails_fast_naming_the_path_asked() {
    let fake = fake_engine::start(Behaviour {
        models: Models::Missing,
        ..Behaviour::default()
    })
    .await;
    let ran = run(&fake.url, &[], &[]).await;
    assert!(ran.elapsed < Duration::from_secs(30), "{:?}", ran.elapsed);
    assert_ne!(ran.code, Some(0), "{}", ran.stderr);
    let message = ran.engine_error();
    assert!(
        message.contains(&format!("{}/v1/models", fake.url)) && message.contains("404"),
        "{message}"
    );
    assert!(!message.contains("not ready after"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_loop_fails_fast_naming_the_path_asked() {
    let fake = fake_engine::start(Behaviour {
        models: Models::RedirectLoop,
        ..Behaviour::default()
    })
    .await;
    let ran = run(&fake.url, &[], &[]).await;
    assert!(ran.elapsed < Duration::from_secs(30), "{:?}", ran.elapsed);
    let message = ran.engine_error();
    assert!(
        message.contains(&format!("{}/v1/models", fake.url)) && message.contains("redirect"),
        "{message}"
    );
}

const KEY: &str = "sk-openai-planted-9d41c2";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_in_openai_api_key_is_sent_when_no_api_key_env_is_set_and_never_shown() {
    let fake = fake_engine::start(Behaviour {
        key: Some(KEY),
        ..Behaviour::default()
    })
    .await;
    let ran = run(&fake.url, &[], &[("OPENAI_API_KEY", Some(KEY))]).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stderr.contains("OPENAI_API_KEY"), "{}", ran.stderr);
    assert_eq!(
        ran.report.as_ref().unwrap().load["m"].points[0].completed,
        vec![2]
    );
    for (name, t) in [("stdout", &ran.stdout), ("stderr", &ran.stderr)] {
        assert!(!t.contains(KEY), "the key leaked into {name}");
    }
    for e in std::fs::read_dir(ran.dir.path()).unwrap().flatten() {
        if e.path().is_file() {
            let t = String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned();
            assert!(
                !t.contains(KEY),
                "the key leaked into {}",
                e.path().display()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_says_whether_a_key_was_sent_and_from_which_variable() {
    let fake = fake_engine::start(Behaviour {
        key: Some(KEY),
        ..Behaviour::default()
    })
    .await;
    let none = run(&fake.url, &[], &[]).await;
    let message = none.engine_error();
    assert!(
        message.contains("the server wants a key: set OPENAI_API_KEY or api_key_env"),
        "{message}"
    );
    let wrong = run(&fake.url, &[], &[("OPENAI_API_KEY", Some("sk-wrong-1"))]).await;
    let message = wrong.engine_error();
    assert!(
        message.contains("the server refused the key from OPENAI_API_KEY"),
        "{message}"
    );
    let named = run(
        &fake.url,
        &["--api-key-env", "GOODPUT_TEST_KEY"],
        &[
            ("GOODPUT_TEST_KEY", Some("sk-wrong-2")),
            ("OPENAI_API_KEY", Some(KEY)),
        ],
    )
    .await;
    let message = named.engine_error();
    assert!(
        message.contains("the server refused the key from GOODPUT_TEST_KEY"),
        "{message}"
    );
}
