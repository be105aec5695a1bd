//! The small endpoints: health, models, tokenize/detokenize, version,
//! Prometheus metrics, the simulated GPU, and JSON bodies for 404 and 405.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::openai::{render_chat, ApiError, Message};
use super::SimState;
use crate::text;

pub(super) async fn health(State(state): State<SimState>) -> Response {
    if state.is_ready() {
        StatusCode::OK.into_response()
    } else {
        ApiError::with_status(
            StatusCode::SERVICE_UNAVAILABLE,
            "The model is still loading.",
        )
        .into_response()
    }
}

pub(super) async fn models(State(state): State<SimState>) -> Json<serde_json::Value> {
    let c = state.config();
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Json(json!({
        "object": "list",
        "data": [{
            "id": c.model,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": c.model,
            "parent": null,
            "max_model_len": c.max_model_len,
            "permission": [],
        }],
    }))
}

/// `GET /version`: vLLM's shape, plus `time_scale` (how many times faster than the
/// modelled GPU the simulator runs), so that a client can say so beside results.
pub(super) async fn version(State(state): State<SimState>) -> Json<serde_json::Value> {
    Json(json!({
        "version": concat!("goodput-sim ", env!("CARGO_PKG_VERSION")),
        "time_scale": state.inner.config.time_scale,
    }))
}

pub(super) async fn not_found(uri: Uri) -> ApiError {
    ApiError::with_status(StatusCode::NOT_FOUND, format!("Not Found: {}", uri.path()))
}

pub(super) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::with_status(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("Method Not Allowed: {method} {}", uri.path()),
    )
}

#[derive(Deserialize)]
struct TokenizeRequest {
    prompt: Option<String>,
    messages: Option<Vec<Message>>,
    #[serde(default)]
    return_token_strs: bool,
}

pub(super) async fn tokenize(State(state): State<SimState>, body: Bytes) -> Response {
    let req: TokenizeRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return ApiError::bad_request(format!("Invalid JSON request body: {e}")).into_response()
        }
    };
    let text = match (req.prompt, req.messages) {
        (Some(p), _) => p,
        (None, Some(m)) => render_chat(&m),
        (None, None) => {
            return ApiError::bad_request("either `prompt` or `messages` is required")
                .into_response()
        }
    };
    let tokens = text::tokenize(&text);
    let strs = req.return_token_strs.then(|| text::split(&text));
    Json(json!({
        "count": tokens.len(),
        "max_model_len": state.config().max_model_len,
        "tokens": tokens,
        "token_strs": strs,
    }))
    .into_response()
}

#[derive(Deserialize)]
struct DetokenizeRequest {
    tokens: Vec<u32>,
}

/// The inverse of `/tokenize` (see [`text::detokenize`]).
pub(super) async fn detokenize(body: Bytes) -> Response {
    let req = match serde_json::from_slice::<DetokenizeRequest>(&body) {
        Ok(r) => r,
        Err(e) => {
            return ApiError::bad_request(format!("Invalid JSON request body: {e}")).into_response()
        }
    };
    match text::detokenize(&req.tokens) {
        Ok(prompt) => Json(json!({"prompt": prompt})).into_response(),
        Err(id) => ApiError::bad_param("tokens", format!("Token id {id} is out of vocabulary"))
            .into_response(),
    }
}

pub(super) async fn gpu(State(state): State<SimState>) -> Json<crate::model::GpuState> {
    let now = state.inner.clock.sim(Instant::now());
    let gpu = state.inner.published.lock().gpu.clone();
    Json(gpu.state_at(now))
}

/// One metric family in Prometheus text format.
fn family(out: &mut String, name: &str, kind: &str, help: &str, samples: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, value) in samples {
        let sample = if kind == "counter" {
            format!("{name}_total")
        } else {
            name.to_string()
        };
        let _ = writeln!(out, "{sample}{{{labels}}} {value:?}");
    }
}

/// Prometheus label value escaping.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub(super) async fn metrics(State(state): State<SimState>) -> Response {
    let c = state.config();
    let (running, waiting, kv, counters) = {
        let p = state.inner.published.lock();
        (p.running as f64, p.waiting as f64, p.kv_usage, p.counters)
    };
    let s = &state.inner.schedule_stats;
    let running = running + s.running.load(Ordering::Relaxed).max(0) as f64;
    let prompt = counters.prompt_tokens + s.prompt_tokens.load(Ordering::Relaxed);
    let generation = counters.generation_tokens + s.generation_tokens.load(Ordering::Relaxed);
    let m = format!("model_name=\"{}\"", label(&c.model));
    let mut out = String::new();
    let one = |v: f64| vec![(m.clone(), v)];
    family(
        &mut out,
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        &one(running),
    );
    family(
        &mut out,
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        &one(waiting),
    );
    family(
        &mut out,
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        &one(kv),
    );
    family(
        &mut out,
        "vllm:gpu_cache_usage_perc",
        "gauge",
        "GPU KV-cache usage. 1 means 100 percent usage.",
        &one(kv),
    );
    let info = format!(
        "{m},block_size=\"{}\",num_gpu_blocks=\"{}\",cache_dtype=\"auto\",enable_prefix_caching=\"{}\"",
        c.block_size,
        c.num_gpu_blocks(),
        if c.prefix_caching { "True" } else { "False" }
    );
    family(
        &mut out,
        "vllm:cache_config_info",
        "gauge",
        "Information of the LLMEngine CacheConfig",
        &[(info, 1.0)],
    );
    family(
        &mut out,
        "vllm:num_preemptions",
        "counter",
        "Cumulative number of preemption from the engine.",
        &one(counters.num_preemptions as f64),
    );
    family(
        &mut out,
        "vllm:prefix_cache_queries",
        "counter",
        "Prefix cache queries, in terms of number of queried tokens.",
        &one(counters.prefix_cache_queries as f64),
    );
    family(
        &mut out,
        "vllm:prefix_cache_hits",
        "counter",
        "Prefix cache hits, in terms of number of cached tokens.",
        &one(counters.prefix_cache_hits as f64),
    );
    family(
        &mut out,
        "vllm:prompt_tokens",
        "counter",
        "Number of prefill tokens processed.",
        &one(prompt as f64),
    );
    family(
        &mut out,
        "vllm:generation_tokens",
        "counter",
        "Number of generation tokens processed.",
        &one(generation as f64),
    );
    family(
        &mut out,
        "vllm:spec_decode_num_drafts",
        "counter",
        "Number of spec decoding drafts.",
        &one(counters.spec_num_drafts as f64),
    );
    family(
        &mut out,
        "vllm:spec_decode_num_draft_tokens",
        "counter",
        "Number of draft tokens.",
        &one(counters.spec_draft_tokens as f64),
    );
    family(
        &mut out,
        "vllm:spec_decode_num_accepted_tokens",
        "counter",
        "Number of accepted tokens.",
        &one(counters.spec_accepted_tokens as f64),
    );
    // Finished requests are counted by the model, not by a fixed schedule.
    if c.schedule.is_none() {
        family(
            &mut out,
            "vllm:request_success",
            "counter",
            "Count of successfully processed requests.",
            &[(
                format!("{m},finished_reason=\"length\""),
                counters.requests_finished as f64,
            )],
        );
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response()
}
