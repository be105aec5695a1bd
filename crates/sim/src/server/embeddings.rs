//! `POST /v1/embeddings`: an embedding model's answers, whole (no stream).
//!
//! A request's inputs (a text, texts, token ids, or lists of them) are counted in
//! tokens as `/tokenize` counts them, then wait for the engine
//! ([`Batcher`]): one forward pass at a time over every request waiting, up to
//! [`EmbeddingsConfig::max_batch_tokens`] prompt tokens, taking
//! [`EmbeddingsConfig::pass_time_ms`] of them (divided by the time scale on the
//! wall clock), so requests that arrive together are batched and later ones queue.
//! The vectors are seeded by the configuration's seed and each input, so the same
//! input gets the same vector, of length one; `usage` counts the prompt tokens.
//!
//! A generative model (no `[embeddings]` in its configuration) answers as vLLM
//! 0.32 does, which registers the route only for a model with an embedding task:
//! 404, as any unknown path.

use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::{mpsc, oneshot, watch};

use super::openai::ApiError;
use super::SimState;
use crate::config::EmbeddingsConfig;
use crate::text;

/// `input` of `/v1/embeddings`: OpenAI's four shapes.
#[derive(Deserialize)]
#[serde(untagged)]
enum Input {
    Text(String),
    Texts(Vec<String>),
    Ids(Vec<u32>),
    IdLists(Vec<Vec<u32>>),
}

impl Input {
    /// Each input's seed key and token count.
    fn each(&self) -> Vec<(u64, u64)> {
        let text = |s: &String| (fnv(s.as_bytes()), text::tokenize(s).len() as u64);
        let ids = |v: &Vec<u32>| {
            let bytes: Vec<u8> = v.iter().flat_map(|i| i.to_le_bytes()).collect();
            (fnv(&bytes), v.len() as u64)
        };
        match self {
            Input::Text(s) => vec![text(s)],
            Input::Texts(v) => v.iter().map(text).collect(),
            Input::Ids(v) => vec![ids(v)],
            Input::IdLists(v) => v.iter().map(ids).collect(),
        }
    }
}

#[derive(Deserialize)]
struct EmbeddingsRequest {
    #[serde(default)]
    model: Option<String>,
    input: Input,
    #[serde(default)]
    encoding_format: Option<String>,
}

/// The handler.
pub(super) async fn embeddings(State(state): State<SimState>, body: Bytes) -> Response {
    match answer(&state, &body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn answer(state: &SimState, body: &[u8]) -> Result<Response, ApiError> {
    let inner = &state.inner;
    let config = &inner.config;
    let (Some(costs), Some(batcher)) = (&config.embeddings, &inner.embeddings) else {
        return Err(ApiError::with_status(
            StatusCode::NOT_FOUND,
            "Not Found: /v1/embeddings",
        ));
    };
    if !state.is_ready() {
        return Err(ApiError::with_status(
            StatusCode::SERVICE_UNAVAILABLE,
            "The model is still loading.",
        ));
    }
    let req: EmbeddingsRequest = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("Invalid JSON request body: {e}")))?;
    if let Some(m) = req.model.as_deref().filter(|m| *m != config.model) {
        return Err(ApiError::with_status(
            StatusCode::NOT_FOUND,
            format!("The model `{m}` does not exist."),
        ));
    }
    if let Some(f) = req.encoding_format.as_deref().filter(|f| *f != "float") {
        return Err(ApiError::bad_param(
            "encoding_format",
            format!("encoding_format `{f}`: the simulator answers `float` only"),
        ));
    }
    let inputs = req.input.each();
    if inputs.is_empty() {
        return Err(ApiError::bad_param("input", "Input cannot be empty"));
    }
    let most = u64::from(config.max_model_len);
    if let Some(&(_, n)) = inputs.iter().find(|(_, n)| *n > most) {
        return Err(ApiError::bad_param(
            "input",
            format!(
                "This model's maximum context length is {most} tokens. However, you requested \
                 {n} tokens in the input for embedding generation. Please reduce the length of \
                 the input."
            ),
        ));
    }
    let tokens: u64 = inputs.iter().map(|(_, n)| n).sum();
    let stats = &inner.schedule_stats;
    let ran = {
        // Running while it waits for its pass, even if the client goes away.
        let _running = Running::new(stats);
        batcher.run(tokens).await
    };
    ran.ok_or_else(|| {
        ApiError::with_status(
            StatusCode::SERVICE_UNAVAILABLE,
            "The server is shutting down.",
        )
    })?;
    // `/metrics` counts it as vLLM does: its prompt tokens and a finished request.
    stats.prompt_tokens.fetch_add(tokens, Ordering::Relaxed);
    stats.embedded.fetch_add(1, Ordering::Relaxed);
    let data: Vec<serde_json::Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, (key, _))| {
            json!({
                "index": i,
                "object": "embedding",
                "embedding": vector(config.seed ^ key, costs.dimension),
            })
        })
        .collect();
    let n = inner.next_id.fetch_add(1, Ordering::Relaxed);
    Ok(Json(json!({
        "id": format!("embd-sim-{n}"),
        "object": "list",
        "created": super::generate::unix_now(),
        "model": config.model,
        "data": data,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0},
    }))
    .into_response())
}

/// One request counted in `vllm:num_requests_running` while it lives.
struct Running<'a>(&'a super::ScheduleStats);

impl<'a> Running<'a> {
    fn new(stats: &'a super::ScheduleStats) -> Running<'a> {
        stats.running.fetch_add(1, Ordering::Relaxed);
        Running(stats)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}

/// FNV-1a of `bytes`: the seed key of an input.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A vector of `dimension` numbers drawn from `seed` (splitmix64), of length one.
fn vector(seed: u64, dimension: u32) -> Vec<f32> {
    let mut s = seed;
    let mut v: Vec<f64> = (0..dimension)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v.into_iter().map(|x| x as f32).collect()
}

/// A request waiting for a pass: its prompt tokens, and who to tell at the end.
struct Job {
    tokens: u64,
    done: oneshot::Sender<()>,
}

/// The embedding engine: one task running passes over the requests waiting.
pub(crate) struct Batcher {
    jobs: mpsc::UnboundedSender<Job>,
}

impl Batcher {
    /// Starts the engine's task (inside a tokio runtime); it ends at `shutdown`.
    pub(crate) fn start(
        costs: EmbeddingsConfig,
        time_scale: f64,
        shutdown: watch::Receiver<bool>,
    ) -> Batcher {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(passes(rx, costs, time_scale, shutdown));
        Batcher { jobs: tx }
    }

    /// Waits for the pass that embeds `tokens` prompt tokens to end; `None` when
    /// the engine stopped first.
    async fn run(&self, tokens: u64) -> Option<()> {
        let (done, wait) = oneshot::channel();
        self.jobs.send(Job { tokens, done }).ok()?;
        wait.await.ok()
    }
}

/// The engine's loop: the first request waiting starts a pass, which takes every
/// other request waiting up to the batch's token budget.
async fn passes(
    mut jobs: mpsc::UnboundedReceiver<Job>,
    costs: EmbeddingsConfig,
    time_scale: f64,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut carried: Option<Job> = None;
    loop {
        let first = match carried.take() {
            Some(j) => j,
            None => tokio::select! {
                j = jobs.recv() => match j {
                    Some(j) => j,
                    None => return,
                },
                _ = shutdown.changed() => return,
            },
        };
        let mut tokens = first.tokens;
        let mut batch = vec![first];
        while let Ok(j) = jobs.try_recv() {
            if tokens + j.tokens > u64::from(costs.max_batch_tokens) {
                carried = Some(j);
                break;
            }
            tokens += j.tokens;
            batch.push(j);
        }
        let wall = costs.pass_time_ms(tokens) / 1000.0 / time_scale;
        let pass = super::timer::sleep(std::time::Duration::from_secs_f64(wall.max(0.0)));
        tokio::select! {
            () = pass => {}
            _ = shutdown.changed() => return,
        }
        for j in batch {
            let _ = j.done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_seeded_and_of_length_one() {
        let a = vector(1, 16);
        assert_eq!(a, vector(1, 16));
        assert_ne!(a, vector(2, 16));
        let norm: f32 = a.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }

    #[test]
    fn every_input_shape_is_counted() {
        let parse = |s: &str| serde_json::from_str::<Input>(s).unwrap().each();
        assert_eq!(parse(r#""one two""#).len(), 1);
        assert_eq!(parse(r#"["a", "b", "c"]"#).len(), 3);
        assert_eq!(parse("[1, 2, 3]"), vec![(parse("[1, 2, 3]")[0].0, 3)]);
        assert_eq!(
            parse("[[1, 2], [3]]")
                .iter()
                .map(|x| x.1)
                .collect::<Vec<_>>(),
            [2, 1]
        );
    }
}
