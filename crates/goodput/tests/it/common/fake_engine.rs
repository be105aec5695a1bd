//! A misbehaving OpenAI-compatible engine for whole runs of the goodput binary: an
//! axum app on 127.0.0.1 port 0 whose `/v1/models`, `/v1/completions` and
//! `/metrics` each behave as the test says, counting the requests each received.
//! Every endless answer is bounded ([`OFFER`]), and the server stops when the
//! returned [`FakeEngine`] is dropped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream;

use super::server::{spawn_router, Server};

/// The most an endless answer sends before it ends (more than any bound goodput
/// keeps, so a client that keeps what it is sent shows in its memory).
pub const OFFER: usize = 512 << 20;

/// How `/v1/models` answers.
#[derive(Clone)]
pub enum Models {
    /// Lists model `m`.
    Ok,
    /// An endless body (up to [`OFFER`]).
    Endless,
    /// 404, as a server without this path answers.
    Missing,
    /// A redirect to itself, for ever.
    RedirectLoop,
    /// Lists one model of this id.
    Named(String),
}

/// How `/v1/completions` answers.
#[derive(Clone)]
pub enum Completions {
    /// Four one-token chunks, then usage with this completion count, then `[DONE]`.
    Ok { completion_tokens: u64 },
    /// As `Ok` with 4 completion tokens, the usage counting this many prompt tokens.
    Prompt { prompt_tokens: u64 },
    /// This status and body.
    Error(u16, String),
    /// Accepts and never answers.
    Never,
}

/// How `/metrics` answers.
#[derive(Clone)]
pub enum Metrics {
    /// 404.
    None,
    /// This text.
    Text(String),
    /// Never answers.
    Hang,
}

/// What the fake does.
#[derive(Clone)]
pub struct Behaviour {
    pub models: Models,
    pub completions: Completions,
    pub metrics: Metrics,
    /// The API key `/v1/models` and `/v1/completions` want (`Authorization:
    /// Bearer KEY`); anything else gets 401. `None`: no key wanted.
    pub key: Option<&'static str>,
}

impl Default for Behaviour {
    fn default() -> Behaviour {
        Behaviour {
            models: Models::Ok,
            completions: Completions::Ok {
                completion_tokens: 4,
            },
            metrics: Metrics::None,
            key: None,
        }
    }
}

#[derive(Clone)]
struct Shared {
    behaviour: Behaviour,
    hits: Arc<Mutex<BTreeMap<&'static str, u32>>>,
}

impl Shared {
    fn hit(&self, path: &'static str) {
        *self.hits.lock().unwrap().entry(path).or_default() += 1;
    }

    /// The 401 a request without the wanted key gets; `None` when it may pass.
    fn refused(&self, headers: &HeaderMap) -> Option<Response> {
        let want = format!("Bearer {}", self.behaviour.key?);
        let given = headers.get("authorization").and_then(|v| v.to_str().ok());
        (given != Some(want.as_str()))
            .then(|| (StatusCode::UNAUTHORIZED, "{\"error\": \"invalid api key\"}").into_response())
    }
}

/// The running fake.
pub struct FakeEngine {
    pub url: String,
    hits: Arc<Mutex<BTreeMap<&'static str, u32>>>,
    _server: Server,
}

impl FakeEngine {
    /// Requests `path` received so far.
    pub fn hits(&self, path: &str) -> u32 {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

fn endless(unit: &'static str) -> Body {
    let n = OFFER / unit.len();
    Body::from_stream(stream::iter(
        (0..n / 1024).map(move |_| Ok::<_, std::io::Error>(unit.repeat(1024))),
    ))
}

async fn models(State(s): State<Shared>, headers: HeaderMap) -> Response {
    s.hit("/v1/models");
    if let Some(refused) = s.refused(&headers) {
        return refused;
    }
    match s.behaviour.models.clone() {
        Models::Named(id) => axum::Json(
            serde_json::json!({"object": "list", "data": [{"id": id, "object": "model"}]}),
        )
        .into_response(),
        Models::Ok => axum::Json(
            serde_json::json!({"object": "list", "data": [{"id": "m", "object": "model"}]}),
        )
        .into_response(),
        Models::Endless => (
            [("content-type", "application/json")],
            endless("{\"data\":[{\"id\":\"m\"},"),
        )
            .into_response(),
        Models::Missing => StatusCode::NOT_FOUND.into_response(),
        Models::RedirectLoop => (StatusCode::FOUND, [("location", "/v1/models")]).into_response(),
    }
}

async fn completions(State(s): State<Shared>, headers: HeaderMap) -> Response {
    s.hit("/v1/completions");
    if let Some(refused) = s.refused(&headers) {
        return refused;
    }
    match s.behaviour.completions.clone() {
        Completions::Ok { completion_tokens } => stream(8, completion_tokens),
        Completions::Prompt { prompt_tokens } => stream(prompt_tokens, 4),
        Completions::Error(code, body) => {
            (StatusCode::from_u16(code).unwrap(), body).into_response()
        }
        Completions::Never => std::future::pending().await,
    }
}

/// Four one-token chunks, then usage with these counts, then `[DONE]`.
fn stream(prompt_tokens: u64, completion_tokens: u64) -> Response {
    let mut out = String::new();
    for i in 0..4 {
        let finish = if i == 3 { "\"length\"" } else { "null" };
        out.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"text\":\"x \",\"finish_reason\":{finish}}}]}}\n\n"
        ));
    }
    out.push_str(&format!(
        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{completion_tokens}}}}}\n\ndata: [DONE]\n\n"
    ));
    ([("content-type", "text/event-stream")], out).into_response()
}

async fn metrics(State(s): State<Shared>) -> Response {
    s.hit("/metrics");
    match s.behaviour.metrics.clone() {
        Metrics::None => StatusCode::NOT_FOUND.into_response(),
        Metrics::Text(t) => t.into_response(),
        Metrics::Hang => std::future::pending().await,
    }
}

/// Starts the fake (inside a tokio runtime).
pub async fn start(behaviour: Behaviour) -> FakeEngine {
    let hits = Arc::new(Mutex::new(BTreeMap::new()));
    let shared = Shared {
        behaviour,
        hits: hits.clone(),
    };
    let app = axum::Router::new()
        .route("/v1/models", get(models))
        .route("/v1/completions", post(completions))
        .route("/metrics", get(metrics))
        .with_state(shared);
    let server = spawn_router(app).await;
    FakeEngine {
        url: server.url.clone(),
        hits,
        _server: server,
    }
}

/// A profile of one URL engine `e` at `url` (model `m`), one load level of 1,
/// `requests` requests per trial, `trials` trials, no warm-up; `extra` is TOML
/// added at the end (a `[server_metrics]` table, say).
pub fn profile(url: &str, requests: u32, trials: u32, load_extra: &str, extra: &str) -> String {
    format!(
        r#"name = "hostile"
[slo]
ttft_ms = 1000
tpot_ms = 100
[load]
points = [1]
requests_per_trial = {requests}
trials = {trials}
warmup_requests = 0
{load_extra}
[workload]
input_tokens = 8
output_tokens = 4
[engines.e]
url = "{url}"
model = "m"
{extra}
"#
    )
}

/// Runs `cmd` to its end off the caller's runtime and returns its exit code and
/// its own peak resident set after `exec`, bytes: the largest `VmHWM` of
/// `/proc/PID/status` read every 2 ms while it runs. Not `wait4`'s `ru_maxrss`:
/// the spawned child shares the test process's memory until it execs (vfork),
/// and the kernel carries that memory's high-water mark into the child's, so in
/// a test binary that holds 100 MiB the child "peaked" at 100 MiB whatever it did.
pub async fn run_measured(mut cmd: std::process::Command) -> (Option<i32>, u64) {
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status_path = format!("/proc/{}/status", child.id());
    tokio::task::spawn_blocking(move || {
        let mut peak = 0u64;
        let started = std::time::Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(&status_path) {
                // The first reads may still see the test process's image (before
                // the exec): they name this test binary, not goodput.
                let execed = !text
                    .lines()
                    .any(|l| l.starts_with("Name:") && l.contains("it-"));
                if execed {
                    peak = peak.max(vm_hwm(&text));
                }
            }
            if let Some(status) = child.try_wait().unwrap() {
                return (status.code(), peak);
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(300),
                "the measured run did not end in 300 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    })
    .await
    .unwrap()
}

/// `VmHWM` of a `/proc/PID/status` text, bytes (0 when absent).
fn vm_hwm(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb << 10)
}
