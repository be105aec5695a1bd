//! One engine's capacity under the SLO, found by `goodput search`.

use serde::{Deserialize, Serialize};

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
    /// goodput addition (`search --objective cost`): the load meeting the SLO whose
    /// good tokens cost least (the most good output tokens per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cheapest_load: Option<f64>,
    /// goodput addition: where between `passing` and `failing` the attainment
    /// crosses the target, with its 95% bootstrap interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<super::CapacityInterval>,
}
