//! One load level of one engine: its summary over trials, its SLO check, the
//! per-turn table of a conversation, its outliers, and each trial.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{is_zero, GpuSample, GpuSummary, RunStatus};
use crate::stats::Stat;

/// One load level of one engine, summarised over its trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Point {
    /// Load level: concurrency (closed loop) or requests/s (open loop).
    pub x: f64,
    /// Output tokens per second of trial duration.
    pub output_throughput: Stat,
    /// Median TTFT of each trial, ms.
    pub median_ttft_ms: Stat,
    /// p99 TTFT of each trial, ms.
    pub p99_ttft_ms: Stat,
    /// Median TPOT of each trial, ms.
    pub median_tpot_ms: Stat,
    /// p99 TPOT of each trial, ms.
    pub p99_tpot_ms: Stat,
    /// p99 ITL of each trial (gaps pooled over the trial's requests), ms.
    pub p99_itl_ms: Stat,
    /// Median ITL of each trial, ms.
    pub median_itl_ms: Stat,
    /// Good requests per second of trial duration.
    pub goodput_rps: Stat,
    /// Completed requests per second of trial duration.
    pub request_throughput: Stat,
    /// Requests completed successfully, one entry per trial.
    pub completed: Vec<u64>,
    /// GPU telemetry over the point's trials; `null` when none was sampled.
    pub gpu: Option<GpuSummary>,
    /// TTFT grid over all successful requests of all trials ("lower" rule), ms.
    pub ttft_quantiles_ms: Vec<f64>,
    /// TPOT grid over the same requests ("lower" rule), ms.
    pub tpot_quantiles_ms: Vec<f64>,

    /// goodput addition: `complete` when every planned trial produced results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    /// goodput addition: trials planned for this point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_trials: Option<u32>,
    /// goodput addition: good requests (met the SLO), one entry per trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub good: Option<Vec<u64>>,
    /// goodput addition: failed requests, one entry per trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<Vec<u64>>,
    /// goodput addition: failed requests by error kind, over all trials.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub errors: IndexMap<String, u64>,
    /// goodput addition: requests whose output token count was estimated from
    /// chunks because the server sent no usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_tokens: Option<u64>,
    /// goodput addition: successful requests that asked for an exact output length
    /// (`min_tokens` = `max_tokens`, `ignore_eos`) and got fewer tokens, over all
    /// trials, with the engine's finish reasons: an engine that stops early looks
    /// faster than one that generates what was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_outputs: Option<ShortOutputs>,
    /// goodput addition: successful requests whose answer was longer than their
    /// `max_tokens` allows (more content chunks than the limit, no usage block),
    /// over all trials: their tokens were counted at the limit. Absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_outputs: Option<LongOutputs>,
    /// goodput addition: median end-to-end latency of each trial, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_e2el_ms: Option<Stat>,
    /// goodput addition: p99 end-to-end latency of each trial, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_e2el_ms: Option<Stat>,
    /// goodput addition: mean prompt tokens per request of each trial (from usage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_input_tokens: Option<Stat>,
    /// goodput addition: mean output tokens per request of each trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_output_tokens: Option<Stat>,
    /// goodput addition (rate mode): requests/s offered by the schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate: Option<f64>,
    /// goodput addition (rate mode): requests actually sent per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rate: Option<Stat>,
    /// goodput addition: p99 of (sent - scheduled) per trial, ms: client lag, and in
    /// rate mode with `max_concurrency`, the wait for a free slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_send_lag_ms: Option<Stat>,
    /// goodput addition (rate mode): requests per second of each trial's own schedule,
    /// `(n - 1) / (last scheduled - first scheduled)`; a short Poisson draw lands
    /// away from `offered_rate`, and the client is judged against this, not that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_rate: Option<Stat>,
    /// goodput addition: mean requests in flight of each trial (the time integral of
    /// the in-flight count over first send to last completion, over its length): the
    /// load the server saw, which can be far below a concurrency `x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_concurrency: Option<Stat>,
    /// goodput addition: the first failed request's error kind and detail
    /// (`http_500: Internal Server Error`), at most 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// goodput addition: requests whose TTFT or E2EL lies far out of the point's
    /// pooled distribution (see [`Outlier`]), worst first, at most 16; an empty list
    /// when the check ran and found none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outliers: Option<Vec<Outlier>>,
    /// goodput addition: speculative-decoding acceptance scraped from `/metrics`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecode>,
    /// goodput addition: per-trial details, in trial order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<TrialInfo>,
    /// goodput addition: SLO attainment of each trial (good requests / requests
    /// sent; a failed request is not good), `{median,min,max,n}` over trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attainment: Option<Stat>,
    /// goodput addition: the point judged against the SLO: pooled attainment with
    /// its confidence interval, whether the point meets the SLO, and which bounds
    /// the requests missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_check: Option<SloCheck>,
    /// goodput addition (predicted reports): the range each metric is expected in,
    /// 90% by default (see [`crate::PredictedInterval`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_interval: Option<crate::PredictedInterval>,
    /// goodput addition (predicted reports): the point is extrapolated (its
    /// interval's `why` says how); trust its figures less.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub extrapolated: bool,
    /// goodput addition (`trials = "auto"`): why the point got no more trials
    /// (`decisive`, `narrow` or `budget`); absent with a fixed trial count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials_stopped: Option<super::TrialsStopped>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// goodput addition: the engine's own metrics over the point's trials (queue,
    /// KV cache, preemptions, server-counted tokens), from its `/metrics`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::server::ServerSummary>,
    /// goodput addition (conversation workloads): metrics by turn index, and the
    /// sessions whose history was cut to fit the context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<ConversationSummary>,
    /// goodput addition (reasoning models): time to first answer token, reasoning
    /// and answer tokens, requests without an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<super::ReasoningSummary>,
    /// goodput addition (`[workload] tools`): time to first tool call, and the
    /// share of tool calls whose arguments are valid JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<super::ToolCallSummary>,
    /// goodput addition (`[workload.adapters]`): the point per LoRA adapter, and
    /// which adapter's latency differs from the others'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapters: Option<super::AdapterSummary>,
    /// goodput addition (`[workload] images`): the images the requests carried and
    /// whether the server counted their tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<super::ImageSummary>,
    /// goodput addition (`api = "embeddings"`): inputs and input tokens per
    /// second, inputs per request, the vectors' length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<super::EmbeddingsSummary>,
    /// goodput addition: GPU energy per output token and per request (see
    /// [`super::EnergySummary`]); absent without GPU telemetry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<super::EnergySummary>,
    /// goodput addition: dollars per million tokens at the engine's `usd_per_hour`
    /// (see [`super::CostSummary`]); absent when the engine has no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<super::CostSummary>,
}

/// goodput addition: a conversation workload's point, by turn (all trials' requests
/// pooled).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ConversationSummary {
    /// Sessions that sent at least one turn, over all trials.
    pub sessions: u64,
    /// Sessions that dropped earlier turns from a request's history to fit the
    /// engine's context (never silently: this count).
    pub cut_sessions: u64,
    /// One entry per turn index, in order.
    pub turns: Vec<TurnSummary>,
}

/// goodput addition: the requests of one turn index of a conversation workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TurnSummary {
    /// Turn index, 1-based (1: the session's first message, no history).
    pub turn: u32,
    /// Successful requests of this turn.
    pub completed: u64,
    /// Failed requests of this turn.
    pub failed: u64,
    /// Median TTFT of the turn's successful requests, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ttft_ms: Option<f64>,
    /// p99 TTFT, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ttft_ms: Option<f64>,
    /// Median TPOT, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_tpot_ms: Option<f64>,
    /// p99 TPOT, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_tpot_ms: Option<f64>,
    /// Mean prompt tokens (from usage): the history's growth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_input_tokens: Option<f64>,
}

/// goodput addition: one request far out of its point's distribution of a metric.
///
/// Over the point's successful requests (all trials pooled), with `m` the median and
/// `MAD` the median absolute deviation from it, a request is an outlier when its
/// modified Z-score `0.6745 (v - m) / MAD` is above 14 (hyperfine's threshold) and
/// `v` is at least twice `m` (a MAD of 0 counts as infinitely far), or when `v` is
/// more than 10 times `m` whatever the spread (one such request is the p99 of a
/// small trial). Only the slow side counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Outlier {
    /// `ttft` or `e2el`.
    pub metric: super::OutlierMetric,
    /// Trial index (0-based).
    pub trial: u32,
    /// Request index within the trial (0: the first request after the warm-up).
    pub index: u32,
    /// The request's value, ms.
    pub value_ms: f64,
    /// Median of the metric over the point's requests, ms.
    pub median_ms: f64,
    /// Modified Z-score; absent when the MAD is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// goodput addition: one load level judged against the SLO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SloCheck {
    /// Good requests over all trials.
    pub good: u64,
    /// Requests sent over all trials (successful and failed).
    pub sent: u64,
    /// Pooled attainment, `good / sent` (`null` when nothing was sent).
    pub attainment: Option<f64>,
    /// Lower end of the interval of the pooled attainment that the judgement reads:
    /// the Wilson score interval on the effective sample size (`sent /
    /// design_effect`), at `level` (95% unless stated).
    pub ci_low: Option<f64>,
    /// Upper end of that interval.
    pub ci_high: Option<f64>,
    /// The attainment a point needs (`slo.attainment`, default 0.9).
    pub target: f64,
    /// `attainment` (good share ≥ target) or `percentile` (p-th percentiles within
    /// the bounds).
    pub form: super::SloForm,
    /// True when the point estimate meets the SLO in that form (see `judgement`).
    pub meets: bool,
    /// goodput addition: the point's one SLO judgement (`meets`, `fails`,
    /// `undecided`), the estimate with its interval against the target; absent in
    /// older reports (readers derive it from the counts the same way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<super::Judgement>,
    /// goodput addition (attainment form): the design effect the interval allows
    /// for, the variance of the pooled attainment over a binomial's, estimated from
    /// the spread of the per-trial attainment (1 with one trial, never below 1;
    /// `report::stats::dispersed`); absent in older reports (1: the pooled Wilson
    /// interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design_effect: Option<f64>,
    /// goodput addition: the two-sided confidence level of `ci_low`/`ci_high` when
    /// it is not 0.95: a point given trials until it is decided (`trials =
    /// "auto"`, a search's confirmation) is read at a stricter level at each look
    /// (`report::stats::sequential`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
    /// goodput addition (attainment form): the fewest requests whose outcome, had it
    /// gone the other way, would put the pooled attainment on the other side of the
    /// target; 1 means one request decided whether the point meets the SLO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<u64>,
    /// Requests that missed each bound (`ttft`, `tpot`, `e2el`) or failed
    /// (`errors`), over all trials; a request may miss several bounds.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub misses: IndexMap<String, u64>,
    /// Percentile form: the pooled p-th percentile of each bounded metric over all
    /// requests sent (a failed request counts as infinitely slow: `null`), ms.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub percentiles_ms: IndexMap<String, Option<f64>>,
    /// goodput addition: each requirement on a share of valid tool calls
    /// (`slo.min_valid_tool_calls`, ...) and its judgement, already folded into
    /// `judgement` and `meets`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<super::ToolCallCheck>,
}

/// goodput addition: answers shorter than the exact length asked for, over a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ShortOutputs {
    /// Successful requests shorter than asked.
    pub requests: u64,
    /// Successful requests that asked for an exact length.
    pub of: u64,
    /// Their `finish_reason`s (`length`, `stop`, ...; `none` when the stream gave
    /// none), with counts.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub finish_reasons: IndexMap<String, u64>,
}

/// goodput addition: answers longer than `max_tokens` allows, over a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LongOutputs {
    /// Successful requests whose stream carried more content chunks than their
    /// `max_tokens`.
    pub requests: u64,
    /// Successful requests that set `max_tokens`.
    pub of: u64,
}

/// goodput addition: speculative decoding counters over a point (deltas of the
/// engine's `/metrics` counters between the start and end of each trial, summed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SpecDecode {
    /// Draft tokens proposed.
    pub draft_tokens: f64,
    /// Draft tokens accepted.
    pub accepted_tokens: f64,
    /// accepted / drafted.
    pub acceptance_rate: Option<f64>,
}

impl TrialInfo {
    /// The trial was cut short by an interrupt (its `error` says so).
    pub fn interrupted(&self) -> bool {
        self.error.as_deref() == Some(super::INTERRUPTED)
    }
}

/// A trial whose `client_stall_ms` is above this many ms is flagged: the client
/// was paused or starved of CPU. Five times an SLO's usual TPOT bound, and far
/// above what a loaded 2-core machine shows (a few ms).
pub const CLIENT_STALL_LIMIT_MS: f64 = 50.0;

/// goodput addition: what happened in one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TrialInfo {
    /// 0-based trial index.
    pub index: u32,
    /// Engine restarts before this run of the trial (0 normally); records carry it too.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
    /// `complete`, or `partial` when the trial was cut short or failed.
    pub status: RunStatus,
    /// goodput addition: Unix time (seconds) when the trial's measured load
    /// started (after cool-down and warm-up): the order trials ran in, across
    /// engines. Absent in older reports and predicted ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<f64>,
    /// First send to last completion, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Successful requests.
    pub completed: u64,
    /// Failed requests.
    pub failed: u64,
    /// Good requests.
    pub good: u64,
    /// Why the trial failed or is partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// goodput addition: the latest the client's 10 ms timer woke during the
    /// trial's load, ms: a client paused (SIGSTOP, a suspended machine) or starved
    /// of CPU reads every chunk late, and the pause shows in its latencies. Above
    /// [`CLIENT_STALL_LIMIT_MS`] the trial is flagged. Absent in older and
    /// predicted reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_stall_ms: Option<f64>,
    /// Seconds spent waiting for the GPU to cool down before the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_wait_s: Option<f64>,
    /// Speculative-decoding counter deltas over the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecode>,
    /// GPU samples taken during the trial (time relative to trial start).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_samples: Vec<GpuSample>,
    /// The engine's own metrics over the trial, and its samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::server::ServerTrial>,
    /// The engine's own metrics over the warm-up before the trial (kept apart, so
    /// that the trial's counter deltas stay exact), and its samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_server: Option<crate::server::ServerTrial>,
    /// The GPU energy measured over the trial (see [`super::TrialEnergy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<super::TrialEnergy>,
    /// The trial's figures that `compare` and the verdict test, by the metric's
    /// key in [`crate::compare::METRICS`] (`median_ttft_ms`, `goodput_rps`, ...),
    /// each with its sampling variance from the trial's own requests, so that a
    /// report alone carries what the tests need (any number of trials).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub figures: IndexMap<String, Figure>,
}

/// One trial's figure of a metric and how precisely its requests measured it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The trial's value (the same definition as the point's summary of it).
    pub value: f64,
    /// The sampling variance of `value` from the trial's own requests (for a
    /// quantile, from its distribution-free 95% interval; for good requests per
    /// second, binomial), when it could be estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub var: Option<f64>,
}
