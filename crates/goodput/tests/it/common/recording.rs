//! A test server that records what it received: every `POST /v1/completions` (or
//! chat) body with its arrival time on goodput's clock (`CLOCK_MONOTONIC`), answered
//! with a short, valid stream of `max_tokens` one-token chunks and `usage` (its
//! `x-request-id` kept); and
//! `/v1/models` listing model `m`. On
//! 127.0.0.1 port 0; stopped when dropped.
//!
//! A chat request is answered with words of its own (`r<arrival>_<k>`), kept as
//! the request's `reply`, and its `usage.prompt_tokens` counts the words of all its
//! messages. [`start_slow`] answers each request after a delay and counts the
//! requests in flight at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::post;
use std::sync::Mutex;

/// One request as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// Arrival, ns on `CLOCK_MONOTONIC`.
    pub at_ns: u64,
    /// The JSON body.
    pub body: serde_json::Value,
    /// The text the answer carried.
    pub reply: String,
    /// The `x-request-id` header it came with.
    pub request_id: Option<String>,
}

/// The running server.
pub struct Recorder {
    pub url: String,
    pub received: Arc<Mutex<Vec<Received>>>,
    /// Most requests in flight at once (arrived, not yet answered).
    pub max_in_flight: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Log {
    received: Arc<Mutex<Vec<Received>>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    delay: Duration,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Recorder {
    /// Bodies received so far, in arrival order.
    pub fn bodies(&self) -> Vec<Received> {
        let mut v = self.received.lock().unwrap().clone();
        v.sort_by_key(|r| r.at_ns);
        v
    }
}

async fn answer(
    State(log): State<Log>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let at_ns = goodput::drive::record::now_ns();
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let now = log.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    log.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let n = v["max_tokens"].as_u64().unwrap_or(1).clamp(1, 64);
    let chat = v["messages"].as_array().cloned();
    let prompt_words = match &chat {
        Some(m) => m
            .iter()
            .map(|m| {
                m["content"]
                    .as_str()
                    .map_or(0, |c| c.split_whitespace().count())
            })
            .sum(),
        None => v["prompt"].as_str().map_or(0, |p| p.split(' ').count()),
    };
    let mut out = String::new();
    let mut reply = String::new();
    {
        let mut received = log.received.lock().unwrap();
        let seq = received.len();
        for k in 0..n {
            let word = if chat.is_some() {
                format!("r{seq}_{k} ")
            } else {
                "x ".to_string()
            };
            let chunk = if chat.is_some() {
                serde_json::json!({"choices": [{"index": 0, "delta": {"content": word}}]})
            } else {
                serde_json::json!({"choices": [{"index": 0, "text": word}]})
            };
            out.push_str(&format!("data: {chunk}\n\n"));
            reply.push_str(&word);
        }
        received.push(Received {
            at_ns,
            body: v,
            reply,
            request_id,
        });
    }
    if !log.delay.is_zero() {
        tokio::time::sleep(log.delay).await;
    }
    log.in_flight.fetch_sub(1, Ordering::SeqCst);
    out.push_str(&format!(
        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_words},\"completion_tokens\":{n}}}}}\n\ndata: [DONE]\n\n"
    ));
    ([("content-type", "text/event-stream")], out)
}

/// Starts the recorder.
pub async fn start() -> Recorder {
    start_slow(Duration::ZERO).await
}

/// Starts a recorder that answers each request `delay` after it arrived.
pub async fn start_slow(delay: Duration) -> Recorder {
    let received = Arc::new(Mutex::new(Vec::new()));
    let max_in_flight = Arc::new(AtomicUsize::new(0));
    let log = Log {
        received: received.clone(),
        in_flight: Arc::new(AtomicUsize::new(0)),
        max_in_flight: max_in_flight.clone(),
        delay,
    };
    let app = axum::Router::new()
        .route("/v1/completions", post(answer))
        .route("/v1/chat/completions", post(answer))
        .route(
            "/v1/models",
            axum::routing::get(|| async {
                axum::Json(
                    serde_json::json!({"object": "list", "data": [{"id": "m", "object": "model"}]}),
                )
            }),
        )
        .with_state(log);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Recorder {
        url,
        received,
        max_in_flight,
        task,
    }
}
