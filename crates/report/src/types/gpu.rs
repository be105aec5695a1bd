//! GPU telemetry: a point's summary and the samples it is made from.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::stats::Stat;

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
    /// goodput addition: `nvml`, `nvidia-smi`, `dcgm` or `sim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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
