//! The report, field by field.
//!
//! Fields without a "goodput addition" note are the reference format's own. Additive
//! fields are skipped when empty so that a report without them is byte-for-byte the
//! reference shape; `extra` keeps anything this version does not know.
//!
//! One file per part of the report, all re-exported here (and from the crate root):
//! this file holds the report itself, its SLO and each engine's results;
//! `run` the run and prediction facts, `point` a load
//! level and its trials, `capacity` a search's answer,
//! `gpu` GPU telemetry, `judgement` the SLO judgement, `environment` what ran where,
//! `reasoning` a reasoning model's thinking and answering apart, `cost` energy and
//! dollars.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod adapters;
mod capacity;
mod cost;
mod embeddings;
mod environment;
mod gpu;
mod images;
mod judgement;
mod point;
mod prediction;
mod reasoning;
mod run;
mod slo;
mod tool_calls;
mod tune;
mod words;

pub use adapters::*;
pub use capacity::*;
pub use cost::*;
pub use embeddings::*;
pub use environment::*;
pub use gpu::*;
pub use images::*;
pub use judgement::*;
pub use point::*;
pub use prediction::*;
pub use reasoning::*;
pub use run::*;
pub use slo::*;
pub use tool_calls::*;
pub use tune::*;
pub use words::*;

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
    /// What failed: `launch`, `unreachable`, `ready_timeout`, `exited`,
    /// `interrupted`, `died_during_trial`, `stop`, `workload` or `not_run`
    /// ([`FailureKind`]).
    pub kind: FailureKind,
    /// Human-readable explanation (with the cause and a hint, when the log
    /// named one).
    pub message: String,
    /// The lines of the engine's log that say why it failed (a Python
    /// exception, not the warning printed after it), when it named any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cause: Vec<String>,
    /// Exit status of the engine process, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<String>,
    /// Last lines of the engine's log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
}

/// The default quantile grid: 0.0 to 1.0 in steps of 0.02 (51 points), each value
/// rounded to two decimals so it prints as the reference's does.
pub fn default_quantiles() -> Vec<f64> {
    (0..=50).map(|i| (i as f64 * 2.0).round() / 100.0).collect()
}

pub(crate) fn is_zero(v: &u32) -> bool {
    *v == 0
}
