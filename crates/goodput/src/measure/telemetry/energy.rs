//! The GPU energy of one trial, from the readings its sampler takes.
//!
//! Each GPU's readings give its mean power over the span between its first and last
//! reading of the trial:
//! - **counter** (NVML's total-energy counter, nvidia-smi's `energy.consumption`,
//!   DCGM's `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`):
//!   `(last counter − first counter) / span`, when every reading had the counter, it
//!   never went down (a reset or a wrap falls back to the power), it moved unless no
//!   power was read (a stale exporter falls back to the power) and the span is not
//!   empty;
//! - **power integral** otherwise: the trapezoid integral of the sampled power over
//!   the span, divided by the span (one reading: that reading's power).
//!
//! The counter is preferred: it counts every millisecond, while sampled power sees
//! only the instants sampled (an A100 or H100 averages its power over a fraction of
//! each period). GPUs counted are those doing work in any reading (memory held or
//! utilisation above zero, as [`super::from_readings`] judges a sample; all when none
//! is). A counted GPU with neither a counter nor a power reading leaves the trial
//! without an energy figure (a partial sum would be wrong, not missing).
//!
//! The per-trial figure stored is the measurement ([`TrialEnergy`]); what it means
//! per token is derived in `metrics::cost`.

use std::collections::BTreeMap;

use report::{GpuEnergy, TrialEnergy};

use super::{is_busy, GpuReading};

/// The readings of one GPU over a trial, kept as running sums (constant memory).
#[derive(Debug, Clone, Default)]
struct GpuTrace {
    busy: bool,
    first_t: f64,
    last_t: f64,
    readings: u64,
    /// First and latest counter value, J; `None` once a reading lacked it or it fell.
    counter: Option<(f64, f64)>,
    counter_broken: bool,
    /// Trapezoid integral of power so far, J, and the latest (t, W).
    integral_j: f64,
    last_power: Option<(f64, f64)>,
}

impl GpuTrace {
    fn add(&mut self, t: f64, r: &GpuReading) {
        if self.readings == 0 {
            self.first_t = t;
        }
        self.readings += 1;
        self.last_t = t;
        self.busy |= is_busy(r);
        match (r.energy_j.filter(|j| j.is_finite()), self.counter) {
            (Some(j), None) if !self.counter_broken => self.counter = Some((j, j)),
            (Some(j), Some((first, last))) if j >= last => self.counter = Some((first, j)),
            _ => {
                self.counter = None;
                self.counter_broken = true;
            }
        }
        if let Some(w) = r.power_w.filter(|w| w.is_finite() && *w >= 0.0) {
            if let Some((t0, w0)) = self.last_power {
                self.integral_j += (w0 + w) / 2.0 * (t - t0).max(0.0);
            }
            self.last_power = Some((t, w));
        }
    }

    /// Mean power over this GPU's span, W, and the method that gave it.
    fn mean_power(&self) -> Option<(f64, Method)> {
        let span = self.last_t - self.first_t;
        if let (Some((first, last)), false) = (self.counter, self.counter_broken) {
            // A counter that never moved while the GPU drew power was not updated
            // (an exporter collecting less often than it is read), not a GPU at 0 W.
            let stale = last == first && self.last_power.is_some_and(|(_, w)| w > 0.0);
            if span > 0.0 && !stale {
                return Some(((last - first) / span, Method::Counter));
            }
        }
        let (_, w) = self.last_power?;
        let mean = if span > 0.0 {
            self.integral_j / span
        } else {
            w
        };
        Some((mean, Method::Integral))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Method {
    Counter,
    Integral,
}

/// Accumulates a trial's readings into its energy.
#[derive(Debug, Clone, Default)]
pub struct EnergyMeter {
    by_gpu: BTreeMap<u32, GpuTrace>,
    first_t: Option<f64>,
    last_t: f64,
}

impl EnergyMeter {
    /// Adds one reading per GPU taken `t_s` seconds into the trial.
    pub fn add(&mut self, t_s: f64, readings: &[GpuReading]) {
        if !t_s.is_finite() || readings.is_empty() {
            return;
        }
        self.first_t.get_or_insert(t_s);
        self.last_t = t_s;
        for r in readings {
            self.by_gpu.entry(r.index).or_default().add(t_s, r);
        }
    }

    /// The trial's energy as `source` measured it (`nvml`, `nvidia-smi`, `dcgm`, `sim`);
    /// `None` without readings, or when a counted GPU has neither a counter nor a
    /// power reading.
    pub fn finish(&self, source: &str) -> Option<TrialEnergy> {
        let span_s = self.last_t - self.first_t?;
        let any_busy = self.by_gpu.values().any(|g| g.busy);
        let mut gpus = Vec::new();
        let mut methods = Vec::new();
        for (&index, g) in self.by_gpu.iter().filter(|(_, g)| g.busy || !any_busy) {
            let (mean_w, method) = g.mean_power()?;
            methods.push(method);
            gpus.push(GpuEnergy {
                index,
                joules: mean_w * span_s,
                mean_power_w: mean_w,
            });
        }
        let mean_power_w: f64 = gpus.iter().map(|g| g.mean_power_w).sum();
        if gpus.is_empty() || !mean_power_w.is_finite() {
            return None;
        }
        let method = if methods.iter().all(|m| *m == Method::Counter) {
            match source {
                "nvidia-smi" => "nvidia-smi-counter",
                "dcgm" => "dcgm-counter",
                _ => "nvml-counter",
            }
        } else {
            "power-integral"
        };
        Some(TrialEnergy {
            method: method.to_string(),
            source: source.to_string(),
            span_s,
            joules: mean_power_w * span_s,
            mean_power_w,
            gpus,
            gpus_seen: self.by_gpu.len() as u32,
        })
    }
}

#[cfg(test)]
#[path = "energy_tests.rs"]
mod tests;
