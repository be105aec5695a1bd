//! goodput additions for what-if predictions: how far a predicted point can be
//! trusted ([`PredictedInterval`]), and the engine limits an engine stated about
//! itself ([`StatedLimit`]), which the fit takes as known.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// A predicted point's interval: the fit's uncertainty (its parameters' errors, its
/// residuals at the measured points, the measured trial-to-trial spread) carried
/// through the engine model by a parametric bootstrap in virtual time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PredictedInterval {
    /// Coverage the interval is meant to have (0.9: 90%).
    pub level: f64,
    /// Bootstrap draws it was computed from.
    pub draws: u32,
    /// Per metric (`median_ttft_ms`, `median_tpot_ms`, `output_throughput`):
    /// `[low, high]`, always holding the predicted value itself; finite only.
    pub metrics: IndexMap<String, [f64; 2]>,
    /// Why the point is extrapolated (its load is outside the fitted range, or it
    /// depends on a parameter neither stated by the engine nor identifiable from
    /// the measurement); empty when it is not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<String>,
}

/// An engine limit (what bounds its queueing) as the engine states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StatedLimit {
    /// The value (`max_num_seqs`: sequences; `max_num_batched_tokens`,
    /// `kv_pool_tokens`, `block_size`: tokens).
    pub value: u64,
    /// Where it was read (`llama.cpp /props total_slots`, `--max-num-seqs 8 on the
    /// engine's command line`, `the simulator's /version`, ...).
    pub source: String,
}
