//! The report, field by field.
//!
//! Fields without a "goodput addition" note are the reference format's own. Additive
//! fields are skipped when empty so that a report without them is byte-for-byte the
//! reference shape; `extra` keeps anything this version does not know.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::stats::Stat;

/// Version tag written in [`RunInfo::schema`].
pub const SCHEMA: &str = "goodput-report/1";

/// A whole benchmark report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Name of the run profile (`name` in the profile TOML).
    pub profile: String,
    /// The service-level objective a request must meet to count as good.
    pub slo: Slo,
    /// What ran where: tool, host, GPUs, engines. `null` in the reference.
    pub environment: Option<Environment>,
    /// The quantile grid of `*_quantiles_ms` (0.0 to 1.0 in steps of 0.02 by default).
    pub quantiles: Vec<f64>,
    /// Results per engine, in the order the engines ran.
    pub load: IndexMap<String, EngineResult>,
    /// goodput addition: how the run was done and whether it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunInfo>,
    /// goodput addition: the largest load at which each engine meets the SLO, as
    /// found by `goodput search` (absent for a plain run), keyed by engine.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub capacity: IndexMap<String, Capacity>,
    /// Fields this version does not know, preserved on rewrite.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The SLO: a request is good when it succeeded and every given bound holds.
///
/// A bound that was not given is absent (never `null`, never infinite): the reference
/// has both `ttft_ms` and `tpot_ms`; a goodput run with `--slo ttft:100` writes only
/// `ttft_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// Upper bound on time to first token, milliseconds (absent: no bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Upper bound on time per output token, milliseconds (absent: no bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// goodput addition: optional upper bound on end-to-end latency, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<f64>,
    /// goodput addition: the share of requests that must be good for a load level
    /// to meet the SLO (0.9 when absent; 1.0 means every request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attainment: Option<f64>,
    /// goodput addition: when given (e.g. 90), a load level meets the SLO when the
    /// pooled p-th percentile of TTFT, TPOT and E2EL each is within its bound
    /// (DistServe's form) instead of by `attainment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<f64>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// goodput addition: how the run was made and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RunInfo {
    /// Format version, [`SCHEMA`].
    pub schema: String,
    /// `complete`, `partial` (interrupted or trials failed) or `running`.
    pub status: RunStatus,
    /// Why the run is not complete, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `concurrency` (x = requests in flight) or `rate` (x = requests per second).
    pub load_mode: String,
    /// Trials planned per load point.
    pub planned_trials: u32,
    /// Measured requests per trial.
    pub requests_per_trial: u32,
    /// Requests sent before each trial and not measured.
    #[serde(default)]
    pub warmup_requests: u32,
    /// Seed of workload and arrival generation.
    #[serde(default)]
    pub seed: u64,
    /// The workload, as the profile described it.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub workload: Value,
    /// The raw per-request records, relative to the report's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_file: Option<String>,
    /// Unix time (seconds) when the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<f64>,
    /// Unix time (seconds) when the report was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_unix_s: Option<f64>,
    /// What the plan was, as SHA-256 fingerprints of its parts (`slo`, `load`,
    /// `workload`, `telemetry`, `engine.<name>`), compared on resume so that trials
    /// of different plans never mix. Load levels and the number of trials are not
    /// part of it: a resumed run may add either.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub fingerprints: IndexMap<String, String>,
    /// Things the reader should know that are not per point (e.g. "no GPU telemetry").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Set when nothing was measured: the figures were predicted by running the
    /// simulator's engine model in virtual time (`goodput run --predict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Predicted>,
    /// goodput addition: the slice of the plan this report holds, when it is one
    /// shard of a sweep split over machines (`goodput run --shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::ShardInfo>,
    /// goodput addition: the shards this report was merged from (`goodput merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<crate::MergedInfo>,
    /// goodput addition: the slice of every load level this report holds, when it
    /// is one of N clients sharing one load (`goodput run --load-shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_shard: Option<crate::LoadShardInfo>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// goodput addition: what a predicted report was predicted from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Predicted {
    /// The engine configuration the model ran (the file given to `--predict`).
    pub engine_config: String,
    /// The report the configuration was fitted from (`goodput fit`), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitted_from: Option<String>,
    /// How the figures were made.
    pub method: String,
}

/// Whether a run, point or trial finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every planned trial ran.
    #[default]
    Complete,
    /// Some planned trials did not run or failed.
    Partial,
    /// The run is in progress (a report written between trials).
    Running,
}

/// Results of one engine (configuration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineResult {
    /// KV-cache capacity in tokens the engine reported (or the profile gave).
    pub kv_pool_tokens: Option<u64>,
    /// One entry per load level, in increasing order of `x`.
    pub points: Vec<Point>,
    /// goodput addition: where `kv_pool_tokens` came from (`vllm-log`, `vllm-metrics`,
    /// `sglang-log`, `llama-cpp-props`, `sim`, `profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_pool_source: Option<String>,
    /// goodput addition: the engine failed to start, become ready, or died.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<EngineFailure>,
    /// goodput addition: deaths after which the engine was restarted (as the
    /// profile's `max_restarts` allows), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restarts: Vec<EngineFailure>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// goodput addition: why an engine produced no (or fewer) results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct EngineFailure {
    /// `unreachable`, `launch`, `ready_timeout`, `exited`, `died_during_trial`.
    pub kind: String,
    /// Human-readable explanation.
    pub message: String,
    /// Exit status of the engine process, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<String>,
    /// Last lines of the engine's log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
}

/// One load level of one engine, summarised over its trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub metric: String,
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
    /// Lower end of the 95% Wilson score interval of the pooled attainment.
    pub ci_low: Option<f64>,
    /// Upper end of the 95% Wilson score interval of the pooled attainment.
    pub ci_high: Option<f64>,
    /// The attainment a point needs (`slo.attainment`, default 0.9).
    pub target: f64,
    /// `attainment` (good share ≥ target) or `percentile` (p-th percentiles within
    /// the bounds).
    pub form: String,
    /// True when the point meets the SLO in that form.
    pub meets: bool,
    /// Requests that missed each bound (`ttft`, `tpot`, `e2el`) or failed
    /// (`errors`), over all trials; a request may miss several bounds.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub misses: IndexMap<String, u64>,
    /// Percentile form: the pooled p-th percentile of each bounded metric over all
    /// requests sent (a failed request counts as infinitely slow: `null`), ms.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub percentiles_ms: IndexMap<String, Option<f64>>,
}

/// goodput addition: one engine's capacity under the SLO, found by `goodput search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Capacity {
    /// `concurrency` or `rate`: what the load levels count.
    pub mode: String,
    /// The largest load found to meet the SLO; `null` when even the lowest load
    /// probed fails.
    pub max_load: Option<f64>,
    /// The largest probed load that met the SLO (`null` when none did).
    pub passing: Option<f64>,
    /// The smallest probed load above `passing` that failed (`null` when none
    /// failed up to the search's `max`).
    pub failing: Option<f64>,
    /// Pooled attainment at `max_load` (at the lowest load when none passed).
    pub attainment_at_max: Option<f64>,
    /// Load levels probed.
    pub probes: u32,
    /// Trials run over all probes.
    pub trials: u32,
    /// What bounds the capacity: `ttft`, `tpot`, `e2el` or `errors` (what the
    /// requests at `failing` missed most), `max` (the search's upper bound met the
    /// SLO), `max_probes` (the probe budget ran out), `noise` (the bracket could
    /// not be confirmed), `engine` (the engine failed).
    pub limited_by: String,
    /// The answer in words, with anything that weakens it.
    pub note: String,
}

/// GPU telemetry of one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GpuSummary {
    /// Median SM clock of each trial's samples, MHz.
    pub median_sm_mhz: Stat,
    /// Hottest sample of the point, Celsius.
    pub max_temp_c: Option<f64>,
    /// Share of samples with a thermal slowdown reason active (hardware or software).
    pub thermal_share: Option<f64>,
    /// goodput addition: the GPU's maximum SM clock, MHz (to judge throttling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<f64>,
    /// goodput addition: median power draw of each trial, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_power_w: Option<Stat>,
    /// goodput addition: power limit, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// goodput addition: most GPU memory used in any sample, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_used_mib: Option<f64>,
    /// goodput addition: samples taken over the point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// goodput addition: `nvml`, `nvidia-smi` or `sim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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
}

/// goodput addition: one GPU telemetry sample, as the sampler takes it and the
/// report keeps it (one type from sampler to report, so a resumed run summarises
/// the same figures as a fresh one). With several GPUs, one sample describes the
/// GPUs doing work (memory in use or utilisation above zero; all of them when
/// none is). `None` where the source does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GpuSample {
    /// Seconds since the trial started.
    pub t_s: f64,
    /// SM clock, MHz (the slowest GPU).
    pub sm_mhz: Option<f64>,
    /// Temperature, Celsius (the hottest GPU).
    pub temp_c: Option<f64>,
    /// Power draw, W (summed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    /// A thermal slowdown reason was active (on any GPU).
    #[serde(default)]
    pub thermal: bool,
    /// Memory clock, MHz (the slowest GPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_mhz: Option<f64>,
    /// Maximum SM clock, MHz (the lowest maximum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_mhz: Option<f64>,
    /// Power limit, W (summed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// Memory in use, MiB (summed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_used_mib: Option<f64>,
    /// Utilisation, percent (mean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util_pct: Option<f64>,
}

/// goodput addition to the reference: what ran where. `null` in the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Environment {
    /// goodput's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_version: Option<String>,
    /// goodput's git commit, when built from a checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// The machine that ran goodput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// GPUs visible to goodput.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuInfo>,
    /// Per engine: how it was started and what it serves.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub engines: IndexMap<String, EngineEnv>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The host that ran goodput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HostInfo {
    /// goodput addition: the host name (`/proc/sys/kernel/hostname`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// CPU model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Logical CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Memory, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// Operating system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// Kernel release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// One GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GpuInfo {
    /// Index as the driver numbers it.
    pub index: u32,
    /// Product name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Driver version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// CUDA version the driver supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<String>,
    /// Memory, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<f64>,
    /// Power limit, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// Maximum SM clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<f64>,
    /// Maximum memory clock, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mem_clock_mhz: Option<f64>,
}

/// One engine as it was run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct EngineEnv {
    /// `vllm`, `sglang`, `llama-cpp`, `sim` or `url`.
    pub kind: String,
    /// Base URL requests went to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `completions` or `chat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// The command line that started it, secrets redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The engine's own version string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The served model id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Detected KV pool, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_pool_tokens: Option<u64>,
    /// Engine log file, relative to the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<String>,
    /// goodput addition: how synthetic prompt lengths were set on this engine:
    /// `tokenize` (calibrated through the engine's `/tokenize`) or `uncalibrated`
    /// (calibration was asked for and failed; lengths assume one token per word).
    /// Absent when calibration was not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_lengths: Option<String>,
    /// goodput addition, in a merged report: the machine this engine ran on (the
    /// first shard's, when its load levels ran on several; `run.merged` lists each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// goodput addition, in a merged report: the GPUs that machine had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuInfo>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The default quantile grid: 0.0 to 1.0 in steps of 0.02 (51 points), each value
/// rounded to two decimals so it prints as the reference's does.
pub fn default_quantiles() -> Vec<f64> {
    (0..=50).map(|i| (i as f64 * 2.0).round() / 100.0).collect()
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}
