//! A misbehaving OpenAI-compatible engine for whole runs of the goodput binary: an
//! axum app on 127.0.0.1 port 0 whose `/v1/models`, `/v1/completions` and
//! `/metrics` each behave as the test says, counting the requests each received.
//! Every endless answer is bounded ([`OFFER`]), and the server stops when the
//! returned [`FakeEngine`] is dropped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
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
}

impl Default for Behaviour {
    fn default() -> Behaviour {
        Behaviour {
            models: Models::Ok,
            completions: Completions::Ok {
                completion_tokens: 4,
            },
            metrics: Metrics::None,
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

async fn models(State(s): State<Shared>) -> Response {
    s.hit("/v1/models");
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
    }
}

async fn completions(State(s): State<Shared>) -> Response {
    s.hit("/v1/completions");
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
/// its own peak resident set, bytes (`wait4`'s `ru_maxrss` of that one child).
pub async fn run_measured(mut cmd: std::process::Command) -> (Option<i32>, u64) {
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    tokio::task::spawn_blocking(move || {
        let mut status = 0;
        // SAFETY: rusage is plain integers, for which all-zero bytes are valid.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 writes only the status and the struct it is given, both live.
        let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        assert_eq!(waited, pid);
        drop(child);
        let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        (code, (usage.ru_maxrss.max(0) as u64) << 10)
    })
    .await
    .unwrap()
}
