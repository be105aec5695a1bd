//! Energy and cost per token: the one place they are derived (docs/cost-energy.md).
//!
//! Per trial, from its metrics and its measured GPU energy ([`TrialEnergy`]):
//! - **energy** `E` = the GPUs' mean power over the trial's sampled span × the trial
//!   duration (first send to last completion, the duration every throughput uses);
//! - **joules per output token** = `E` / output tokens of successful requests
//!   (= mean power / output throughput);
//! - **joules per request** = `E` / successful requests;
//! - **USD per million output tokens** = `usd_per_hour / 3600 / output_throughput ×
//!   10^6`;
//! - **good output throughput** = output tokens of good requests / duration;
//! - **USD per million good tokens** = `usd_per_hour / 3600 / good_output_throughput
//!   × 10^6`: what serving the SLO costs (a trial without good tokens has none).
//!
//! Per point, each is `{median,min,max,n}` over trials, as every other scalar. No
//! figure is ever infinite or NaN: a division by zero gives no figure.

use report::{CostSummary, EnergySummary, Stat, TrialEnergy};

use super::TrialMetrics;

/// Seconds in an hour.
const SECONDS_PER_HOUR: f64 = 3600.0;
/// Tokens in a million.
const MILLION: f64 = 1e6;

/// `v` when finite.
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// `a / b` when `b > 0` and the result is finite.
fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b).and_then(finite)
}

/// USD per million tokens at `usd_per_hour` and `tokens_per_s`; `None` without a
/// throughput.
pub fn usd_per_million_tokens(usd_per_hour: f64, tokens_per_s: f64) -> Option<f64> {
    ratio(usd_per_hour / SECONDS_PER_HOUR, tokens_per_s).and_then(|v| finite(v * MILLION))
}

/// A trial's energy, J: its mean GPU power × its duration.
pub fn trial_joules(m: &TrialMetrics, e: &TrialEnergy) -> Option<f64> {
    finite(e.mean_power_w * m.duration_s?)
}

/// Output tokens of good requests per second of the trial's duration.
pub fn good_output_throughput(m: &TrialMetrics) -> Option<f64> {
    ratio(m.good_output_tokens as f64, m.duration_s?)
}

/// The energy of a point's trials (each with its measured energy); `None` when no
/// trial has one. `note` is written as given (see [`energy_note`]).
pub fn point_energy(
    trials: &[(&TrialMetrics, &TrialEnergy)],
    note: Option<String>,
) -> Option<EnergySummary> {
    if trials.is_empty() {
        return None;
    }
    let stat = |f: &dyn Fn(&TrialMetrics, &TrialEnergy) -> Option<f64>| {
        Stat::from_trials(trials.iter().map(|(m, e)| f(m, e)))
    };
    let mut methods: Vec<&str> = trials.iter().map(|(_, e)| e.method.as_str()).collect();
    methods.sort_unstable();
    methods.dedup();
    Some(EnergySummary {
        mean_power_w: stat(&|_, e| finite(e.mean_power_w)),
        joules: stat(&trial_joules),
        joules_per_output_token: stat(&|m, e| ratio(trial_joules(m, e)?, m.output_tokens as f64)),
        joules_per_request: stat(&|m, e| ratio(trial_joules(m, e)?, m.completed as f64)),
        method: methods.join("+"),
        source: trials[0].1.source.clone(),
        gpus: trials
            .iter()
            .map(|(_, e)| e.gpus.len() as u32)
            .max()
            .unwrap_or(0),
        note,
    })
}

/// The cost of a point's trials at `usd_per_hour`; `None` without trials or for a
/// price that is negative or not finite.
pub fn point_cost(usd_per_hour: f64, trials: &[&TrialMetrics]) -> Option<CostSummary> {
    if trials.is_empty() || !usd_per_hour.is_finite() || usd_per_hour < 0.0 {
        return None;
    }
    let stat =
        |f: &dyn Fn(&TrialMetrics) -> Option<f64>| Stat::from_trials(trials.iter().map(|m| f(m)));
    Some(CostSummary {
        usd_per_hour,
        good_output_throughput: stat(&good_output_throughput),
        usd_per_million_output_tokens: stat(&|m| {
            usd_per_million_tokens(usd_per_hour, m.output_throughput?)
        }),
        usd_per_million_good_tokens: stat(&|m| {
            usd_per_million_tokens(usd_per_hour, good_output_throughput(m)?)
        }),
    })
}

/// What a point's energy may include besides the engine: GPUs left out as idle
/// (the rest were chosen by activity, so other work on them counts too), or an
/// engine goodput did not start (its GPUs are unknown). `None` for the simulator,
/// whose one GPU is the engine's.
pub fn energy_note(energies: &[&TrialEnergy], launched: bool) -> Option<String> {
    let first = energies.first()?;
    if first.source == "sim" {
        return None;
    }
    let counted = energies.iter().map(|e| e.gpus.len()).max().unwrap_or(0);
    let seen = energies
        .iter()
        .map(|e| e.gpus_seen as usize)
        .max()
        .unwrap_or(0);
    let mut parts = Vec::new();
    if !launched {
        parts.push("the engine was not started by goodput, so its GPUs are unknown".to_string());
    }
    if counted < seen {
        parts.push(format!(
            "{counted} of {seen} GPUs counted: those doing work"
        ));
    }
    if parts.is_empty() {
        return None;
    }
    parts.push("other work on the GPUs counted is included".into());
    Some(parts.join("; "))
}

/// Fills a point's `energy` and `cost` from its complete trials (metrics and
/// measured energy, in trial order), the engine's price and whether goodput
/// started the engine.
pub fn fill_point(
    p: &mut report::Point,
    trials: &[(&TrialMetrics, Option<&TrialEnergy>)],
    usd_per_hour: Option<f64>,
    launched: bool,
) {
    let measured: Vec<(&TrialMetrics, &TrialEnergy)> = trials
        .iter()
        .filter_map(|(m, e)| Some((*m, (*e)?)))
        .collect();
    let energies: Vec<&TrialEnergy> = measured.iter().map(|(_, e)| *e).collect();
    p.energy = point_energy(&measured, energy_note(&energies, launched));
    let metrics: Vec<&TrialMetrics> = trials.iter().map(|(m, _)| *m).collect();
    p.cost = usd_per_hour.and_then(|usd| point_cost(usd, &metrics));
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
