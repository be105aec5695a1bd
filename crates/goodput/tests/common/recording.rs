//! A test server that records what it received: every `POST /v1/completions` (or
//! chat) body with its arrival time on goodput's clock (`CLOCK_MONOTONIC`), answered
//! with a short, valid stream of `max_tokens` one-token chunks and `usage`; and
//! `/v1/models` listing model `m`. On
//! 127.0.0.1 port 0; stopped when dropped.

use std::sync::Arc;

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
}

/// The running server.
pub struct Recorder {
    pub url: String,
    pub received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
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

async fn answer(State(log): State<Arc<Mutex<Vec<Received>>>>, body: Bytes) -> impl IntoResponse {
    let at_ns = goodput::record::now_ns();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let n = v["max_tokens"].as_u64().unwrap_or(1).clamp(1, 64);
    let prompt_words = v["prompt"].as_str().map_or(0, |p| p.split(' ').count());
    log.lock().unwrap().push(Received { at_ns, body: v });
    let mut out = String::new();
    for _ in 0..n {
        out.push_str("data: {\"choices\":[{\"index\":0,\"text\":\"x \"}]}\n\n");
    }
    out.push_str(&format!(
        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_words},\"completion_tokens\":{n}}}}}\n\ndata: [DONE]\n\n"
    ));
    ([("content-type", "text/event-stream")], out)
}

/// Starts the recorder.
pub async fn start() -> Recorder {
    let received = Arc::new(Mutex::new(Vec::new()));
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
        .with_state(received.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Recorder {
        url,
        received,
        task,
    }
}
