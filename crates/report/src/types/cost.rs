//! goodput addition: energy and cost, per trial (the measured energy) and per point
//! (joules and dollars per token). The figures are derived in `goodput`'s
//! `metrics::cost`; docs/cost-energy.md gives every definition.

use serde::{Deserialize, Serialize};

use crate::stats::Stat;

/// goodput addition: the GPU energy measured over one trial (a raw fact: what the
/// source said, before any per-token figure).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TrialEnergy {
    /// How it was measured: `nvml-counter` (NVML's total-energy counter),
    /// `nvidia-smi-counter` (nvidia-smi's `energy.consumption`), `dcgm-counter`
    /// (dcgm-exporter's `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`), or
    /// `power-integral` (the sampled power integrated over time, trapezoid rule).
    pub method: String,
    /// The telemetry source (`nvml`, `nvidia-smi`, `dcgm`, `sim`).
    pub source: String,
    /// Seconds between the trial's first and last GPU reading: the span the energy
    /// below covers.
    pub span_s: f64,
    /// Energy over the span, summed over the GPUs counted, J.
    pub joules: f64,
    /// Mean power over the span, summed over the GPUs counted, W (with a single
    /// reading, that reading's power; the span is then 0).
    pub mean_power_w: f64,
    /// Energy over the span per GPU counted, in index order.
    pub gpus: Vec<GpuEnergy>,
    /// GPUs the source saw (counted or not): more than `gpus.len()` when GPUs were
    /// left out as idle.
    pub gpus_seen: u32,
}

/// goodput addition: one GPU's energy over a trial's span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GpuEnergy {
    /// GPU index as the driver numbers it.
    pub index: u32,
    /// Energy over the span, J.
    pub joules: f64,
    /// Mean power over the span, W.
    pub mean_power_w: f64,
}

/// goodput addition: the energy of a point's trials, per token and per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct EnergySummary {
    /// Mean GPU power of each trial (energy over its span / span), summed over the
    /// GPUs counted, W.
    pub mean_power_w: Stat,
    /// Energy of each trial: mean power × trial duration (first send to last
    /// completion), J.
    pub joules: Stat,
    /// Trial energy / output tokens of successful requests, per trial, J.
    pub joules_per_output_token: Stat,
    /// Trial energy / successful requests, per trial, J.
    pub joules_per_request: Stat,
    /// How the trials' energy was measured (`nvml-counter`, `nvidia-smi-counter`,
    /// `dcgm-counter`, `power-integral`; several joined by `+` when trials differ).
    pub method: String,
    /// The telemetry source (`nvml`, `nvidia-smi`, `dcgm`, `sim`).
    pub source: String,
    /// GPUs counted (the most of any trial).
    pub gpus: u32,
    /// What the figure may include besides the engine: GPUs shared with other work,
    /// or GPUs goodput could not attribute to the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// goodput addition: what a point's tokens cost at the engine's price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CostSummary {
    /// The engine's price, all its GPUs together, US dollars per hour.
    pub usd_per_hour: f64,
    /// Output tokens of good requests per second of trial duration, per trial.
    pub good_output_throughput: Stat,
    /// `usd_per_hour / 3600 / output_throughput × 10^6`, per trial, USD.
    pub usd_per_million_output_tokens: Stat,
    /// `usd_per_hour / 3600 / good_output_throughput × 10^6`, per trial (a trial
    /// without good tokens has no figure), USD: what serving the SLO costs.
    pub usd_per_million_good_tokens: Stat,
}
