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
use crate::config::SimConfig;
use crate::model::Counters;
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
    let mut data = vec![json!({
        "id": c.model,
        "object": "model",
        "created": created,
        "owned_by": "vllm",
        "root": c.model,
        "parent": null,
        "max_model_len": c.max_model_len,
        "permission": [],
    })];
    // LoRA adapters after the base model, their parent, as vLLM lists them.
    for name in c.adapters.iter().flat_map(|a| a.modules.keys()) {
        data.push(json!({
            "id": name,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": name,
            "parent": c.model,
            "max_model_len": c.max_model_len,
            "permission": [],
        }));
    }
    Json(json!({"object": "list", "data": data}))
}

/// `GET /version`: vLLM's shape, plus `time_scale` (how many times faster than the
/// modelled GPU the simulator runs), so that a client can say so beside results,
/// and `limits`: what bounds the engine's queueing, as an engine states it (read
/// by `goodput run`, taken as known by `goodput fit`).
pub(super) async fn version(State(state): State<SimState>) -> Json<serde_json::Value> {
    let c = &state.inner.config;
    Json(json!({
        "version": concat!("goodput-sim ", env!("CARGO_PKG_VERSION")),
        "time_scale": c.time_scale,
        "limits": {
            "max_num_seqs": c.max_num_seqs,
            "max_num_batched_tokens": c.max_num_batched_tokens,
            "kv_pool_tokens": c.kv_capacity_tokens(),
            "block_size": c.block_size,
        },
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
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics_text(&state),
    )
        .into_response()
}

/// vLLM's metric families (the ones goodput reads), in vLLM's names and order.
fn metrics_text(state: &SimState) -> String {
    let c = state.config();
    let (running, waiting, kv, mut counters) = {
        let p = state.inner.published.lock();
        (p.running as f64, p.waiting as f64, p.kv_usage, p.counters)
    };
    let s = &state.inner.schedule_stats;
    counters.requests_finished += s.embedded.load(Ordering::Relaxed);
    let running = running + s.running.load(Ordering::Relaxed).max(0) as f64;
    let prompt = counters.prompt_tokens + s.prompt_tokens.load(Ordering::Relaxed);
    let generation = counters.generation_tokens + s.generation_tokens.load(Ordering::Relaxed);
    let m = format!("model_name=\"{}\"", label(&c.model));
    let mut out = String::new();
    gauge_families(&mut out, &m, c, [running, waiting, kv]);
    counter_families(&mut out, &m, c, &counters, prompt, generation);
    out
}

/// The gauges: `[running, waiting, kv_usage]`, and the cache config.
fn gauge_families(out: &mut String, m: &str, c: &SimConfig, [running, waiting, kv]: [f64; 3]) {
    for (name, help, value) in [
        (
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            running,
        ),
        (
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
            waiting,
        ),
        (
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            kv,
        ),
        (
            "vllm:gpu_cache_usage_perc",
            "GPU KV-cache usage. 1 means 100 percent usage.",
            kv,
        ),
    ] {
        family(out, name, "gauge", help, &[(m.to_string(), value)]);
    }
    let info = format!(
        "{m},block_size=\"{}\",num_gpu_blocks=\"{}\",cache_dtype=\"auto\",enable_prefix_caching=\"{}\"",
        c.block_size,
        c.num_gpu_blocks(),
        if c.prefix_caching { "True" } else { "False" }
    );
    family(
        out,
        "vllm:cache_config_info",
        "gauge",
        "Information of the LLMEngine CacheConfig",
        &[(info, 1.0)],
    );
}

/// The counters; `prompt` and `generation` include a fixed schedule's tokens.
fn counter_families(
    out: &mut String,
    m: &str,
    c: &SimConfig,
    counters: &Counters,
    prompt: u64,
    generation: u64,
) {
    for (name, help, value) in [
        (
            "vllm:num_preemptions",
            "Cumulative number of preemption from the engine.",
            counters.num_preemptions,
        ),
        (
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            counters.prefix_cache_queries,
        ),
        (
            "vllm:prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            counters.prefix_cache_hits,
        ),
        (
            "vllm:prompt_tokens",
            "Number of prefill tokens processed.",
            prompt,
        ),
        (
            "vllm:generation_tokens",
            "Number of generation tokens processed.",
            generation,
        ),
        (
            "vllm:spec_decode_num_drafts",
            "Number of spec decoding drafts.",
            counters.spec_num_drafts,
        ),
        (
            "vllm:spec_decode_num_draft_tokens",
            "Number of draft tokens.",
            counters.spec_draft_tokens,
        ),
        (
            "vllm:spec_decode_num_accepted_tokens",
            "Number of accepted tokens.",
            counters.spec_accepted_tokens,
        ),
    ] {
        family(out, name, "counter", help, &[(m.to_string(), value as f64)]);
    }
    // Finished requests are counted by the model, not by a fixed schedule.
    if c.schedule.is_none() {
        family(
            out,
            "vllm:request_success",
            "counter",
            "Count of successfully processed requests.",
            &[(
                format!("{m},finished_reason=\"length\""),
                counters.requests_finished as f64,
            )],
        );
    }
}
