//! `[server_metrics]` in the profile: whether and how often the engine's `/metrics`
//! is sampled beside each trial (the sampler is `crate::measure::server_metrics`).

use serde::{Deserialize, Serialize};

/// `[server_metrics]` in the profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerMetricsSpec {
    /// Sample the engine's `/metrics` during every trial.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Between two samples, ms.
    #[serde(default = "default_interval")]
    pub interval_ms: u64,
    /// Samples kept per trial; beyond, every other one is dropped.
    #[serde(default = "default_max_samples")]
    pub max_samples: u32,
    /// Bytes read from one `/metrics` answer; the rest is ignored (with a notice).
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
}

impl Default for ServerMetricsSpec {
    fn default() -> Self {
        ServerMetricsSpec {
            enabled: true,
            interval_ms: default_interval(),
            max_samples: default_max_samples(),
            max_bytes: default_max_bytes(),
        }
    }
}

fn yes() -> bool {
    true
}
fn default_interval() -> u64 {
    500
}
fn default_max_samples() -> u32 {
    1000
}
fn default_max_bytes() -> u64 {
    4 << 20
}
