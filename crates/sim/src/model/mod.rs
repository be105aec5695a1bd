//! The simulated engine as a pure state machine: no tokio, no wall clock, no
//! sockets. Time is passed in explicitly (simulated seconds), so the same
//! model runs behind the real-time server and in virtual time
//! ([`simulate_closed_loop`]).
//!
//! Layout:
//! - [`engine`]: the continuous-batching scheduler and KV pool.
//! - [`cost`]: step duration from the step's load, the SM clock and scheduling mode.
//! - [`gpu`]: SM clock, temperature and utilization (thermal throttling).
//! - [`closed_loop`]: a virtual-time closed-loop client and its summary statistics.
//! - [`virtual_time`]: closed- and open-loop clients in virtual time, each request's
//!   raw facts (what `goodput run --predict` turns into request records).

pub mod closed_loop;
pub mod cost;
pub mod engine;
pub mod gpu;
pub mod noise;
pub mod prefix;
pub mod virtual_time;

use rand::Rng;
use rand_distr::{Beta, Distribution};

use crate::config::{Acceptance, SimConfig};

pub use closed_loop::{simulate_closed_loop, summarize, PointSummary, RequestTrace};
pub use cost::{StepCost, StepLoad};
pub use engine::{Engine, RequestId};
pub use gpu::{Gpu, GpuState};

/// What the model needs to know about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSpec {
    /// Prompt length, tokens (at least 1).
    pub prompt_tokens: u32,
    /// Tokens to generate before finishing (at least 1); ignored when `endless`.
    pub output_tokens: u32,
    /// Never finish (fault injection); the KV footprint stops growing at `max_model_len`.
    pub endless: bool,
    /// Seed of the request's random draws (speculative acceptance).
    pub seed: u64,
}

/// Tokens one step produced for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenEvent {
    /// The request.
    pub id: RequestId,
    /// Tokens produced (1 + accepted drafts); streamed as one chunk.
    pub tokens: u32,
    /// Whether these include the request's first token.
    pub first: bool,
    /// Whether the request is finished (and has left the engine).
    pub finished: bool,
    /// When the API server has streamed the chunk to the client, simulated
    /// seconds: the step's end, plus, with `frontend_chunk_ms`, its wait in the
    /// front-end's queue and its own streaming time (a step's chunks go out in
    /// batch order: running requests first, new ones last).
    pub at: f64,
}

/// The result of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    /// When the step started, simulated seconds.
    pub start: f64,
    /// When it ends and its tokens become visible, simulated seconds.
    pub end: f64,
    /// What the step computed.
    pub load: StepLoad,
    /// Tokens produced, per request.
    pub events: Vec<TokenEvent>,
}

/// Cumulative counters, named after vLLM's Prometheus metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// `vllm:num_preemptions_total`.
    pub num_preemptions: u64,
    /// `vllm:prompt_tokens_total`.
    pub prompt_tokens: u64,
    /// `vllm:generation_tokens_total`.
    pub generation_tokens: u64,
    /// `vllm:spec_decode_num_drafts_total`.
    pub spec_num_drafts: u64,
    /// `vllm:spec_decode_num_draft_tokens_total`.
    pub spec_draft_tokens: u64,
    /// `vllm:spec_decode_num_accepted_tokens_total`.
    pub spec_accepted_tokens: u64,
    /// Requests that finished.
    pub requests_finished: u64,
    /// `vllm:prefix_cache_queries_total`: prompt tokens looked up in the prefix cache.
    pub prefix_cache_queries: u64,
    /// `vllm:prefix_cache_hits_total`: of those, tokens found (not prefilled again).
    pub prefix_cache_hits: u64,
}

/// Draw a request's per-token draft acceptance rate (0 without speculative decoding).
pub fn draw_acceptance(config: &SimConfig, rng: &mut impl Rng) -> f64 {
    let Some(spec) = &config.speculative else {
        return 0.0;
    };
    let rate = match spec.acceptance {
        Acceptance::Beta { alpha, beta } => match Beta::new(alpha, beta) {
            Ok(d) => d.sample(rng),
            Err(_) => alpha / (alpha + beta),
        },
        Acceptance::Uniform { mean, spread } => {
            let lo = (mean - spread).clamp(0.0, 1.0);
            let hi = (mean + spread).clamp(0.0, 1.0);
            if hi > lo {
                rng.gen_range(lo..=hi)
            } else {
                lo
            }
        }
    };
    if rate.is_finite() {
        rate.clamp(0.0, 1.0)
    } else {
        0.0
    }
}
