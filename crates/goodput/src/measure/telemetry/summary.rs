//! From samples to the report: the point's `gpu` summary and the per-trial sample
//! list.
//!
//! Per trial, the median (numpy's linear rule) of the SM clock and of the power
//! draw; over the point, `{median,min,max,n}` of those medians ([`Stat`]), the
//! hottest sample, the share of samples with a thermal slowdown, and the extremes
//! of the additive fields.

use report::{GpuSample, GpuSummary, Stat};

/// Median of one field over a trial's samples.
fn trial_median(samples: &[GpuSample], field: fn(&GpuSample) -> Option<f64>) -> Option<f64> {
    crate::stats::median(samples.iter().filter_map(field))
}

/// Largest value of one field over every sample.
fn max_of<'a>(
    all: impl Iterator<Item = &'a GpuSample>,
    field: fn(&GpuSample) -> Option<f64>,
) -> Option<f64> {
    all.filter_map(field)
        .filter(|v| !v.is_nan())
        .reduce(f64::max)
}

/// Summarises the samples of a point's trials (one `Vec` per trial); `None` when
/// no trial has a sample. `source` is written as `gpu.source`.
pub fn summarize(trials: &[Vec<GpuSample>], source: &str) -> Option<GpuSummary> {
    let all = || trials.iter().flatten();
    let count = all().count();
    if count == 0 {
        return None;
    }
    let thermal = all().filter(|s| s.thermal).count();
    let median_power = Stat::from_trials(trials.iter().map(|t| trial_median(t, |s| s.power_w)));
    Some(GpuSummary {
        median_sm_mhz: Stat::from_trials(trials.iter().map(|t| trial_median(t, |s| s.sm_mhz))),
        max_temp_c: max_of(all(), |s| s.temp_c),
        thermal_share: Some(thermal as f64 / count as f64),
        max_sm_clock_mhz: max_of(all(), |s| s.max_sm_mhz),
        median_power_w: (median_power.n > 0).then_some(median_power),
        power_limit_w: max_of(all(), |s| s.power_limit_w),
        max_memory_used_mib: max_of(all(), |s| s.mem_used_mib),
        samples: Some(count as u64),
        source: Some(source.to_string()),
        extra: Default::default(),
    })
}
