//! `POST /v1/completions` and `POST /v1/chat/completions`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use tokio::sync::mpsc;

use super::arrival::Arrival;

use super::driver::{Command, DELIVERY_CAPACITY};
use super::format::ChunkFormat;
use super::openai::ApiError;
use super::plan::{plan_body, Endpoint, Plan};
use super::source::{CancelGuard, InFlight, Source};
use super::stream::Writer;
use super::SimState;
use crate::faults::FaultSpec;
use crate::model::RequestSpec;
use crate::text;

/// Header that injects a fault into one request (see [`crate::faults`]).
pub const FAULT_HEADER: &str = "x-goodput-fault";
/// Header that turns the timing probe on for one request.
pub const PROBE_HEADER: &str = "x-goodput-probe";

/// The connection's arrival stamp, when it was served by [`super::serve`].
type Stamp = Option<Extension<ConnectInfo<Arrival>>>;

/// When the request arrived (see [`super::arrival`]); now if unknown.
fn arrived(stamp: Stamp) -> Instant {
    let now = Instant::now();
    stamp.map_or(now, |Extension(ConnectInfo(a))| a.instant(now))
}

pub(super) async fn completions(
    State(state): State<SimState>,
    stamp: Stamp,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = arrived(stamp);
    generate(&state, &headers, &body, Endpoint::Completions, at)
        .unwrap_or_else(|e| e.into_response())
}

pub(super) async fn chat_completions(
    State(state): State<SimState>,
    stamp: Stamp,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = arrived(stamp);
    generate(&state, &headers, &body, Endpoint::Chat, at).unwrap_or_else(|e| e.into_response())
}

/// Faults for request number `n`: the header wins over the configured rules.
fn faults_for(state: &SimState, headers: &HeaderMap, n: u64) -> Result<FaultSpec, ApiError> {
    if let Some(v) = headers.get(FAULT_HEADER) {
        let v = v
            .to_str()
            .map_err(|_| ApiError::bad_request(format!("{FAULT_HEADER} is not ASCII")))?;
        return v
            .parse()
            .map_err(|e| ApiError::bad_request(format!("invalid {FAULT_HEADER} header: {e}")));
    }
    Ok(state
        .inner
        .config
        .faults
        .iter()
        .find(|r| r.every > 0 && n.is_multiple_of(r.every))
        .map(|r| r.spec.clone())
        .unwrap_or_default())
}

fn probe_requested(state: &SimState, headers: &HeaderMap) -> bool {
    state.inner.config.probe
        || headers
            .get(PROBE_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn ms(value: f64, time_scale: f64) -> Duration {
    Duration::try_from_secs_f64(value / 1000.0 / time_scale).unwrap_or(Duration::ZERO)
}

/// One source per job: each choice is its own sequence in the model (or its
/// own fixed schedule), its clock started at `arrived`.
fn sources(
    state: &SimState,
    plan: &Plan,
    endless: bool,
    arrived: Instant,
) -> Result<Vec<Source>, ApiError> {
    let inner = &state.inner;
    let config = &inner.config;
    let mut out = Vec::with_capacity(plan.jobs.len());
    for job in &plan.jobs {
        let source = match (&config.schedule, &inner.commands) {
            (Some(s), _) => {
                let stats = inner.schedule_stats.clone();
                stats.running.fetch_add(1, Ordering::Relaxed);
                stats
                    .prompt_tokens
                    .fetch_add(u64::from(job.prompt_tokens), Ordering::Relaxed);
                Source::Schedule {
                    next: 0,
                    total: (!endless).then_some(u64::from(job.output_tokens)),
                    first_at: arrived + ms(s.ttft_ms, config.time_scale),
                    itl: ms(s.itl_ms, config.time_scale),
                    stats: stats.clone(),
                    _inflight: InFlight(stats),
                    sleep: None,
                }
            }
            (None, Some(commands)) => {
                let id = inner.next_seq.fetch_add(1, Ordering::Relaxed);
                let (tx, rx) = mpsc::channel(DELIVERY_CAPACITY);
                let spec = RequestSpec {
                    prompt_tokens: job.prompt_tokens,
                    output_tokens: job.output_tokens,
                    endless,
                    seed: job.text_seed,
                };
                let prefix = crate::model::prefix::block_hashes(&job.prompt_ids, config.block_size);
                commands
                    .send(Command::Add {
                        id,
                        spec,
                        tx,
                        prefix,
                        arrived,
                    })
                    .map_err(|_| {
                        ApiError::with_status(
                            StatusCode::SERVICE_UNAVAILABLE,
                            "The engine is shutting down.",
                        )
                    })?;
                Source::Model {
                    rx,
                    _guard: CancelGuard {
                        id,
                        commands: commands.clone(),
                    },
                }
            }
            (None, None) => {
                return Err(ApiError::with_status(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no engine is running",
                ))
            }
        };
        out.push(source);
    }
    Ok(out)
}

fn generate(
    state: &SimState,
    headers: &HeaderMap,
    body: &[u8],
    endpoint: Endpoint,
    arrived: Instant,
) -> Result<Response, ApiError> {
    let inner = &state.inner;
    let config = &inner.config;
    let waited = Instant::now().saturating_duration_since(arrived);
    inner.probe_stats.waited.record(waited.as_nanos() as i64);
    if !state.is_ready() {
        return Err(ApiError::with_status(
            StatusCode::SERVICE_UNAVAILABLE,
            "The model is still loading.",
        ));
    }
    let body: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("Invalid JSON request body: {e}")))?;
    let serde_json::Value::Object(body) = body else {
        return Err(ApiError::bad_request(
            "Invalid request body: expected a JSON object.",
        ));
    };
    let adapter = match body.get("model") {
        Some(serde_json::Value::String(m)) => {
            super::adapters::timing(config, &inner.adapter_slots, m, arrived)?
        }
        _ => None,
    };
    let plan = plan_body(body, endpoint, config)?;
    let n = inner.next_id.fetch_add(1, Ordering::Relaxed);
    let faults = faults_for(state, headers, n)?;
    if let Some(code) = faults.status {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return Err(ApiError::with_status(
            status,
            format!("fault injected: status={code}"),
        ));
    }
    if faults.not_sse {
        return Ok((
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            "<!doctype html><html><body><h1>goodput-sim</h1>\
             <p>fault injected: not_sse</p></body></html>\n",
        )
            .into_response());
    }
    let sources = sources(state, &plan, faults.endless, arrived)?;
    let prefix = match endpoint {
        Endpoint::Completions => "cmpl",
        Endpoint::Chat => "chatcmpl",
    };
    let id = format!("{prefix}-{:016x}{:016x}", text::mix(n), text::mix(!n));
    let format = ChunkFormat::new(endpoint, id, unix_now(), &config.model);
    let content_type = if plan.stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    let writer = Writer::new(
        plan,
        format,
        sources,
        faults,
        probe_requested(state, headers).then(|| inner.probe_stats.clone()),
        inner.mono,
        inner.shutdown.clone(),
    )
    .with_adapter(adapter);
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(writer.into_stream()),
    )
        .into_response())
}
