//! goodput addition: the engine's own side of each trial, read from its Prometheus
//! `/metrics` while the trial ran (see `goodput::measure::server_metrics`).
//!
//! Counter fields are deltas over the trial: the first scrape is taken just before
//! the first request is sent (after the warm-up), the last one after the last
//! request ended. Gauges are sampled every `server_metrics.interval_ms`.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// The server's metrics over one point (every trial that has them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerSummary {
    /// Whose metric names were read: `vllm`, `sglang`, `llama-cpp`, `tgi` or
    /// `generic` (an unknown engine: only `trials[].server.gauges_max` and
    /// `counter_deltas`).
    pub catalogue: String,
    /// Samples taken over the point's trials.
    pub samples: u64,
    /// Mean requests running (in the engine's batch) over the samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_running: Option<f64>,
    /// Most requests running in any sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_running: Option<f64>,
    /// Mean requests waiting in the engine's queue over the samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_waiting: Option<f64>,
    /// Most requests waiting in any sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_waiting: Option<f64>,
    /// Share of samples (0 to 1) with at least one request waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_share: Option<f64>,
    /// Highest KV-cache usage in any sample, 0 to 1 (1 = full).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_kv_usage: Option<f64>,
    /// The server's counts over the trials, summed (their fields stand in this
    /// object itself: `preemptions`, `prompt_tokens`, ...).
    #[serde(flatten)]
    pub counts: ServerCounts,
    /// Prefix-cache hits / queries (tokens), 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_hit_share: Option<f64>,
    /// Speculative decoding: accepted / drafted tokens, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_acceptance: Option<f64>,
    /// Mean tokens per engine step (vLLM's iteration-tokens histogram: sum / count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_iteration_tokens: Option<f64>,
}

/// The counts a trial's server metrics and a point's summary both carry: the
/// counters' deltas over a trial, or their sums over a point's trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerCounts {
    /// Preemptions (SGLang: retractions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<f64>,
    /// Prompt tokens the server counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<f64>,
    /// Generation tokens the server counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens: Option<f64>,
    /// Requests the server counted as finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_finished: Option<f64>,
}

/// The server's metrics over one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerTrial {
    /// Whose metric names were read (see [`ServerSummary::catalogue`]).
    pub catalogue: String,
    /// Why sampling stopped or gave nothing, when it did (the trial itself is
    /// unaffected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A counter went down during the trial (the engine restarted or reset it):
    /// the counter deltas are left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub counter_reset: bool,
    /// The server's counts during the trial (their fields stand in this object
    /// itself: `preemptions`, `prompt_tokens`, ...).
    #[serde(flatten)]
    pub counts: ServerCounts,
    /// Prefix-cache queries (tokens) during the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_queries: Option<f64>,
    /// Prefix-cache hits (tokens) during the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hits: Option<f64>,
    /// Speculative decoding: draft tokens proposed during the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_draft_tokens: Option<f64>,
    /// Speculative decoding: draft tokens accepted during the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_accepted_tokens: Option<f64>,
    /// Sum of the iteration-tokens histogram's observations during the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_tokens_sum: Option<f64>,
    /// Engine steps the iteration-tokens histogram observed during the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_steps: Option<f64>,
    /// What goodput counted in the same trial, for the cross-check: prompt tokens
    /// from `usage` over every request that reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_prompt_tokens: Option<u64>,
    /// Output tokens goodput counted (usage, else chunks) over every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_generation_tokens: Option<u64>,
    /// Requests that succeeded as goodput saw them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_completed: Option<u64>,
    /// Unknown engines: the largest value of every gauge over the trial (at most
    /// 200 names).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub gauges_max: IndexMap<String, f64>,
    /// Unknown engines: the delta of every counter over the trial (at most 200
    /// names).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub counter_deltas: IndexMap<String, f64>,
    /// The gauges over time (at most 1,000 samples; thinned evenly beyond).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<ServerSample>,
}

/// One sample of the engine's gauges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ServerSample {
    /// Seconds since the trial started (the clock of the request records: both
    /// count from the moment the first request was about to be sent).
    pub t_s: f64,
    /// Requests running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    /// Requests waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
    /// KV-cache usage, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_usage: Option<f64>,
}

/// Generated tokens may differ by this share of the client's count...
pub const TOKEN_TOLERANCE_SHARE: f64 = 0.01;
/// ...or by this many tokens, whichever is larger.
pub const TOKEN_TOLERANCE_ABS: f64 = 2.0;

/// The catalogues whose prompt-token counter counts every prompt token, cached
/// ones included, so it can be checked against the `usage` the client saw
/// (llama.cpp's counts only the tokens it evaluated; `generic` is unknown).
pub const PROMPT_COUNTS_CACHED: [&str; 3] = ["vllm", "sglang", "tgi"];

/// One count on which server and client disagree in a trial.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// `generation tokens`, `prompt tokens` or `requests finished`.
    pub what: &'static str,
    /// The server's count.
    pub server: f64,
    /// The client's count.
    pub client: f64,
}

/// The counts of one trial on which the server and the client disagree beyond
/// the tolerance: generated tokens (1 % or 2 tokens), prompt tokens (the same;
/// only where the engine's counter includes cached tokens), finished requests
/// (exact when no request failed; else between the successes and all requests).
/// Nothing for a trial whose counters reset or that has no counts.
pub fn cross_check(t: &ServerTrial, failed: u64) -> Vec<Mismatch> {
    let mut out = Vec::new();
    if t.counter_reset {
        return out;
    }
    // Token counts: within 1 % or 2 tokens.
    let mut tokens = |what, server: Option<f64>, client: Option<u64>| {
        if let (Some(s), Some(c)) = (server, client.map(|c| c as f64)) {
            if (s - c).abs() > (c * TOKEN_TOLERANCE_SHARE).max(TOKEN_TOLERANCE_ABS) {
                out.push(Mismatch {
                    what,
                    server: s,
                    client: c,
                });
            }
        }
    };
    tokens(
        "generation tokens",
        t.counts.generation_tokens,
        t.client_generation_tokens,
    );
    if PROMPT_COUNTS_CACHED.contains(&t.catalogue.as_str()) {
        tokens(
            "prompt tokens",
            t.counts.prompt_tokens,
            t.client_prompt_tokens,
        );
    }
    if let (Some(s), Some(c)) = (t.counts.requests_finished, t.client_completed) {
        let (lo, hi) = (c as f64, (c + failed) as f64);
        if s < lo - 0.5 || s > hi + 0.5 {
            out.push(Mismatch {
                what: "requests finished",
                server: s,
                client: c as f64,
            });
        }
    }
    out
}
