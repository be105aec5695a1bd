//! The engine's `/metrics` beside each trial: a test server on loopback serves
//! chosen exposition texts (counters that disagree with the stream, a counter that
//! resets, an endpoint that hangs, malformed and oversized text, an unknown
//! engine), and the simulator is driven into queueing and preemption on purpose.

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use common::cli::{goodput, goodput_run};
use common::server::spawn_router;
use goodput::drive::record::RequestRecord;
use goodput::measure::server_metrics::{cross_check, ServerMetricsSpec, ServerSampler};
use report::ServerTrial;
use serde_json::json;

/// Answers `GET /metrics` with the given texts in order, the last one repeated;
/// `None` hangs forever. Stopped when the test's runtime ends.
async fn serve(texts: Vec<Option<String>>) -> String {
    serve_counted(texts).await.0
}

type Texts = Arc<Mutex<(Vec<Option<String>>, usize)>>;

/// [`serve`], and the texts with the number of answers begun.
async fn serve_counted(texts: Vec<Option<String>>) -> (String, Texts) {
    let texts: Texts = Arc::new(Mutex::new((texts, 0usize)));
    async fn metrics(State(s): State<Texts>) -> String {
        let text = {
            let mut g = s.lock().unwrap();
            let i = g.1.min(g.0.len() - 1);
            g.1 += 1;
            g.0[i].clone()
        };
        match text {
            Some(t) => t,
            None => std::future::pending().await,
        }
    }
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(texts.clone());
    (spawn_router(app).await.detach(), texts)
}

/// No sample in the background: only the first and the last scrapes count.
fn spec() -> ServerMetricsSpec {
    ServerMetricsSpec {
        interval_ms: 3_600_000,
        ..ServerMetricsSpec::default()
    }
}

/// What a sampler with `spec` saw of the server at `url` over a trial of `n`
/// requests of `tokens_each` tokens.
async fn sampled(url: &str, spec: &ServerMetricsSpec, n: u64, tokens_each: u64) -> ServerTrial {
    ServerSampler::start(&reqwest::Client::new(), url, spec)
        .await
        .finish(&records(n, tokens_each))
        .await
        .expect("sampling enabled")
}

fn records(n: u64, tokens_each: u64) -> Vec<RequestRecord> {
    (0..n)
        .map(|i| {
            serde_json::from_value(json!({
                "engine": "e", "x": 1.0, "trial": 0, "index": i,
                "scheduled": 0, "sent": 0, "done": 10,
                "prompt_tokens": 10, "completion_tokens": tokens_each,
            }))
            .unwrap()
        })
        .collect()
}

fn vllm(generation: u64, prompt: u64, requests: u64) -> Option<String> {
    Some(format!(
        "# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n\
         vllm:num_requests_running{{model_name=\"m\",engine=\"0\"}} 3.0\n\
         # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{engine=\"0\"}} 1.0\n\
         # TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total{{engine=\"0\"}} {generation}.0\n\
         # TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{{engine=\"0\"}} {prompt}.0\n\
         # TYPE vllm:request_success counter\n\
         vllm:request_success_total{{finished_reason=\"stop\"}} {requests}.0\n\
         vllm:request_success_total{{finished_reason=\"length\"}} 0.0\n"
    ))
}

#[tokio::test]
async fn counters_that_agree_give_exact_deltas_and_no_mismatch() {
    let url = serve(vec![vllm(1000, 500, 7), vllm(1040, 540, 11)]).await;
    let t = sampled(&url, &spec(), 4, 10).await;
    assert_eq!(t.catalogue, "vllm");
    assert_eq!(t.error, None);
    assert_eq!(t.counts.generation_tokens, Some(40.0));
    assert_eq!(t.counts.prompt_tokens, Some(40.0));
    assert_eq!(t.counts.requests_finished, Some(4.0));
    assert_eq!(t.client_generation_tokens, Some(40));
    assert_eq!(t.client_completed, Some(4));
    assert!(cross_check(&t, 0).is_empty(), "{:?}", cross_check(&t, 0));
}

#[tokio::test]
async fn counters_that_disagree_with_the_stream_are_named() {
    // Another client's traffic: the server generated 5000 tokens, goodput saw 40.
    let url = serve(vec![vllm(0, 0, 0), vllm(5000, 40, 9)]).await;
    let t = sampled(&url, &spec(), 4, 10).await;
    let m = cross_check(&t, 0);
    let whats: Vec<_> = m.iter().map(|m| m.what).collect();
    assert_eq!(whats, ["generation tokens", "requests finished"]);
    assert_eq!((m[0].server, m[0].client), (5000.0, 40.0));
    assert_eq!((m[1].server, m[1].client), (9.0, 4.0));
}

#[tokio::test]
async fn a_counter_reset_mid_trial_drops_the_deltas() {
    let url = serve(vec![vllm(1000, 500, 7), vllm(20, 10, 1)]).await;
    let t = sampled(&url, &spec(), 4, 10).await;
    assert!(t.counter_reset);
    assert_eq!(t.counts.generation_tokens, None);
    assert!(cross_check(&t, 0).is_empty());
}

#[tokio::test]
async fn a_hanging_endpoint_gives_one_notice_and_no_counts() {
    let url = serve(vec![None]).await;
    let t = sampled(&url, &spec(), 2, 5).await;
    let why = t.error.clone().unwrap();
    assert!(why.contains("no answer within"), "{why}");
    assert_eq!(t.counts.generation_tokens, None);
    assert_eq!(t.client_generation_tokens, Some(10));
    let mut run = report::RunInfo::default();
    for _ in 0..2 {
        let n = goodput::measure::server_metrics::notice("e", Some(&t)).expect("a notice");
        run.notice_once(n);
    }
    assert_eq!(goodput::measure::server_metrics::notice("e", None), None);
    let notices = &run.notices;
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].kind, report::NoticeKind::ServerMetrics);
    assert!(notices[0].text.starts_with("e: server metrics: "));
}

#[tokio::test]
async fn a_hang_after_the_first_scrape_keeps_the_samples_and_says_so() {
    let url = serve(vec![vllm(0, 0, 0), None]).await;
    let t = sampled(&url, &spec(), 1, 5).await;
    assert!(t.error.unwrap().contains("counters unknown"));
    assert_eq!(t.counts.generation_tokens, None);
}

#[tokio::test]
async fn malformed_exposition_text_is_an_error_not_a_panic() {
    let junk = "<html>\u{0}{{{ not metrics }}}\n# TYPE\nbad{a=\"x 1\n".to_string();
    let url = serve(vec![Some(junk)]).await;
    let t = sampled(&url, &spec(), 1, 5).await;
    assert!(t.error.unwrap().contains("no metrics"));
    // Half-broken text: the good lines still count.
    let mixed = format!("garbage line\n{}", vllm(10, 10, 1).unwrap());
    let url = serve(vec![
        Some(mixed.clone()),
        Some(mixed.replace(" 10.0", " 15.0")),
    ])
    .await;
    let t = sampled(&url, &spec(), 1, 5).await;
    assert_eq!(t.error, None);
    assert_eq!(t.counts.generation_tokens, Some(5.0));
}

#[tokio::test]
async fn an_oversized_answer_is_cut_with_a_notice() {
    let mut big = vllm(10, 10, 1).unwrap();
    for i in 0..20_000 {
        big.push_str(&format!("padding_metric_{i} 1\n"));
    }
    let url = serve(vec![Some(big)]).await;
    let spec = ServerMetricsSpec {
        max_bytes: 64 << 10,
        ..spec()
    };
    let t = sampled(&url, &spec, 1, 5).await;
    assert!(t.error.unwrap().contains("longer than 65536 bytes"));
    assert_eq!(t.counts.generation_tokens, Some(0.0));
}

#[tokio::test]
async fn an_unknown_engine_records_every_counter_delta() {
    let text = |n: u64| {
        Some(format!(
            "# TYPE my_requests counter\nmy_requests_total {n}\n# TYPE my_queue gauge\nmy_queue 2\n"
        ))
    };
    let url = serve(vec![text(3), text(8)]).await;
    let t = sampled(&url, &spec(), 1, 5).await;
    assert_eq!(t.catalogue, "generic");
    assert_eq!(t.counter_deltas["my_requests_total"], 5.0);
    assert!(cross_check(&t, 0).is_empty());
}

#[tokio::test]
async fn disabled_samples_nothing() {
    let client = reqwest::Client::new();
    let spec = ServerMetricsSpec {
        enabled: false,
        ..spec()
    };
    let s = ServerSampler::start(&client, "http://127.0.0.1:9", &spec).await;
    assert!(s.finish(&records(1, 5)).await.is_none());
}

#[tokio::test]
async fn samples_arrive_on_their_own_task() {
    let (url, texts) = serve_counted(vec![vllm(0, 0, 0)]).await;
    let client = reqwest::Client::new();
    let spec = ServerMetricsSpec {
        interval_ms: 10,
        ..ServerMetricsSpec::default()
    };
    let s = ServerSampler::start(&client, &url, &spec).await;
    // Wait for background scrapes by counting them at the server, not by time.
    let mut waited = 0;
    while texts.lock().unwrap().1 < 4 {
        waited += 1;
        assert!(waited < 6000, "no background scrape in 30 s");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let t = s.finish(&records(1, 5)).await.unwrap();
    assert!(!t.samples.is_empty());
    assert_eq!(t.samples[0].running, Some(3.0));
    assert_eq!(t.samples[0].waiting, Some(1.0));
    assert!(t.samples.windows(2).all(|w| w[0].t_s <= w[1].t_s));
}

// ---------------------------------------------------------------------------
// The simulator, end to end.

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn the_simulator_queued_and_preempted_on_purpose_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // Two batch slots and a KV pool that two full requests overflow: eight in
    // flight queue, and the two running ones preempt each other.
    let sim = write(
        dir.path(),
        "sim.toml",
        "max_num_seqs = 2\nkv_pool_tokens = 160\nblock_size = 16\nmax_model_len = 160\n\
         time_scale = 20.0\n",
    );
    let profile = write(
        dir.path(),
        "p.toml",
        &format!(
            r#"
name = "server-side"
[slo]
ttft_ms = 500
[load]
points = [8]
requests_per_trial = 16
trials = 1
warmup_requests = 2
request_timeout_s = 60
[workload]
input_tokens = 32
output_tokens = 64
[server_metrics]
interval_ms = 20
[engines.small]
kind = "sim"
args = ["--config", "{}", "--no-thermal"]
"#,
            sim.display()
        ),
    );
    let out = dir.path().join("r.json");
    let o = goodput_run(&profile, &out).arg("--quiet").output().unwrap();
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = report::read_report(&out).unwrap();
    let p = &r.load["small"].points[0];
    assert_eq!(p.completed, vec![16]);
    let s = p.server.as_ref().expect("point.server");
    assert_eq!(s.catalogue, "vllm");
    assert!(s.samples > 0);
    assert!(s.max_waiting.unwrap() >= 1.0, "{s:?}");
    assert!(s.max_running.unwrap() <= 2.0, "{s:?}");
    assert!(s.counts.preemptions.unwrap() > 0.0, "{s:?}");
    // The cross-check holds exactly on an engine nobody else uses.
    let t = p.trials[0].server.as_ref().unwrap();
    assert_eq!(t.error, None);
    assert!(!t.counter_reset);
    assert_eq!(t.counts.requests_finished, Some(16.0));
    assert_eq!(
        t.counts.generation_tokens.map(|g| g as u64),
        t.client_generation_tokens,
        "{t:?}"
    );
    assert!(cross_check(t, 0).is_empty(), "{:?}", cross_check(t, 0));
    // The warm-up is sampled too, apart: its two requests are not in the trial's.
    let w = p.trials[0].warmup_server.as_ref().expect("warm-up sampled");
    assert_eq!(w.counts.requests_finished, Some(2.0), "{w:?}");
    assert_eq!(w.client_completed, Some(2), "{w:?}");
    let show = goodput()
        .args(["show", out.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("Requests queued at the server"), "{text}");
    assert!(text.contains("TTFT here is queueing"), "{text}");
    assert!(text.contains("Requests preempted"), "{text}");
    assert!(
        !text.contains("Server and client counts disagree"),
        "{text}"
    );
}

#[test]
fn the_profile_table_is_validated_with_key_and_line() {
    let base = "name = \"p\"\n[slo]\nttft_ms = 100\n[load]\npoints = [1]\nrequests_per_trial = 4\n[workload]\n\
                input_tokens = 8\noutput_tokens = 8\n[engines.s]\nkind = \"sim\"\n";
    let plan = |extra: &str| {
        goodput::define::profile::Profile::parse(&format!("{base}{extra}"), "p.toml")
            .and_then(|p| p.into_plan("p.toml", &Default::default()))
    };
    let ok = plan("").unwrap();
    assert!(ok.server_metrics.enabled);
    assert_eq!(ok.server_metrics.interval_ms, 500);
    let off = plan("[server_metrics]\nenabled = false\n").unwrap();
    assert!(!off.server_metrics.enabled);
    let e = plan("[server_metrics]\ninterval_ms = 0\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("server_metrics.interval_ms"), "{e}");
    assert!(e.contains("line 13"), "{e}");
    let e = plan("[server_metrics]\nmax_bytes = 10\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("server_metrics.max_bytes"), "{e}");
    let e = plan("[server_metrics]\nintervl_ms = 10\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("intervl_ms"), "{e}");
}
