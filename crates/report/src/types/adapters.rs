//! goodput addition: a point's requests by LoRA adapter (`[workload.adapters]`),
//! and the judgement of each adapter's latency against the other adapters'.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::stats::Stat;

/// goodput addition: a point's figures per adapter beside the pooled ones, and
/// which adapter's latency differs. Present only when the run drew adapters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AdapterSummary {
    /// One entry per adapter that was sent, in the profile's order.
    pub adapters: Vec<AdapterFigures>,
    /// Each adapter's median latency against the rest of the point's requests,
    /// per judged metric (the SLO's bounded metrics, and TTFT and TPOT always).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judgements: Vec<AdapterJudgement>,
}

/// goodput addition: the requests that named one adapter, all trials pooled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AdapterFigures {
    /// The adapter's name, as sent in `model` (`base`: the engine's own model).
    pub name: String,
    /// Requests sent naming it, one entry per trial.
    pub sent: Vec<u64>,
    /// Its successful requests, over all trials.
    pub completed: u64,
    /// Its failed requests, over all trials.
    pub failed: u64,
    /// Its good requests (within every SLO bound), over all trials.
    pub good: u64,
    /// Its share of the point's requests sent.
    pub share: f64,
    /// `good / sent`, over all trials; absent when none was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attainment: Option<f64>,
    /// Its good requests per second of each trial's duration (the whole trial's:
    /// the adapters shared it).
    pub goodput_rps: Stat,
    /// Per bounded metric, by its key (`ttft`, `tpot`, ...): the median and p99
    /// over its successful requests, all trials pooled (numpy's linear rule).
    pub latency: IndexMap<String, AdapterLatency>,
}

/// goodput addition: one metric's median and p99 over one adapter's requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct AdapterLatency {
    /// Requests with a value.
    pub n: u64,
    /// Median, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ms: Option<f64>,
    /// p99, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms: Option<f64>,
}

/// goodput addition: one adapter's median of a metric against the median of the
/// point's other requests (every other adapter's), with a distribution-free
/// interval of the difference (docs/report.md, "LoRA adapters").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AdapterJudgement {
    /// The adapter.
    pub adapter: String,
    /// The metric's key (`ttft`, `tpot`, ...).
    pub metric: String,
    /// The adapter's median (nearest rank), ms.
    pub median_ms: f64,
    /// The other adapters' median (nearest rank), ms.
    pub others_median_ms: f64,
    /// `median_ms - others_median_ms`.
    pub difference_ms: f64,
    /// Lower end of the difference's interval, ms; absent: unbounded (too few
    /// requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_ms: Option<f64>,
    /// Upper end, ms; absent: unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_ms: Option<f64>,
    /// The confidence of all the point's intervals together (0.95).
    pub level: f64,
    /// The smallest difference, as a share of the others' median, called higher
    /// or lower (0.02).
    pub min_effect: f64,
    /// What the interval says.
    pub outcome: super::AdapterOutcome,
}
