//! A trial and a point judged against the SLO: attainment (good / sent) with its
//! interval that allows for over-dispersion between trials (the Wilson score
//! interval on the effective sample size `sent / design effect`, the design effect
//! estimated from the spread of the per-trial attainment by the method of moments:
//! Kish 1965, Williams 1982; `report::stats::dispersed`), read at 95% or at a
//! sequential look's level (a Bonferroni split, `report::stats::sequential`); or the
//! percentile form.

use indexmap::IndexMap;
use report::stats::sort_values;
use report::{Slo, SloForm, SloMetric, Stat};

use super::judgement::{all_of, decided_by, judge_percentile_at, judge_trials};
use super::request_metrics;
use crate::drive::record::RequestRecord;

/// What one trial says about the SLO: requests sent and good, which bounds the
/// requests missed, and the per-request values the percentile form needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialSlo {
    /// Requests sent (successful and failed).
    pub sent: u64,
    /// Good requests.
    pub good: u64,
    /// Failed requests (they count as not good, and as infinitely slow).
    pub failed: u64,
    /// Requests that missed each bound (by the metric's key), failed (`errors`),
    /// or reasoned and gave no answer (`no_answer`).
    pub misses: IndexMap<String, u64>,
    /// Successful requests that reasoned and gave no answer (infinitely slow to
    /// their first answer token).
    pub no_answer: u64,
    /// Each bounded metric's value of each successful request that has one
    /// ([`super::RequestMetrics::value`]), ms, in [`SloMetric`]'s order.
    pub values: [Vec<f64>; SloMetric::COUNT],
    /// Successful requests without a value of each bounded metric (a reasoning
    /// model's request with no answer: TTFAT; one that asked for tool calls and
    /// made none: TTFTC), in [`SloMetric`]'s order: infinitely slow in the
    /// percentile form.
    pub missing: [u64; SloMetric::COUNT],
    /// Tool calls of its successful requests: judged, valid, schema-valid
    /// ([`super::tool_check`]).
    pub tool_calls: super::tool_check::CallCounts,
}

impl TrialSlo {
    /// Attainment: good / sent (`None` when nothing was sent).
    pub fn attainment(&self) -> Option<f64> {
        (self.sent > 0).then(|| self.good as f64 / self.sent as f64)
    }
}

/// Derives a trial's [`TrialSlo`] from its records.
pub fn trial_slo(records: &[RequestRecord], slo: &Slo) -> TrialSlo {
    let mut t = TrialSlo::default();
    for r in records {
        t.sent += 1;
        let Some(m) = request_metrics(r, slo) else {
            t.failed += 1;
            *t.misses.entry("errors".into()).or_default() += 1;
            continue;
        };
        t.good += m.good as u64;
        t.tool_calls.judged += m.tool_calls.judged;
        t.tool_calls.valid += m.tool_calls.valid;
        t.tool_calls.schema_valid += m.tool_calls.schema_valid;
        if m.reasoning.no_answer() {
            t.no_answer += 1;
            *t.misses.entry("no_answer".into()).or_default() += 1;
        }
        for metric in miss_order() {
            if slo
                .bound(metric)
                .is_some_and(|b| m.value(metric).is_none_or(|v| v > b))
            {
                *t.misses.entry(metric.key().into()).or_default() += 1;
            }
        }
        for metric in SloMetric::ALL {
            match m.value(metric) {
                Some(v) => t.values[metric as usize].push(v),
                None => t.missing[metric as usize] += 1,
            }
        }
    }
    t
}

/// The order a trial's `misses` are first counted in, so a point's keep theirs
/// in the report: bounds that need an answer first, then the rest in the
/// table's order.
fn miss_order() -> impl Iterator<Item = SloMetric> {
    let needs_answer = |m: &SloMetric| m.def().unanswered_misses;
    let all = SloMetric::ALL.into_iter();
    all.clone()
        .filter(needs_answer)
        .chain(all.filter(move |m| !needs_answer(m)))
}

pub use report::slo::DEFAULT_ATTAINMENT;

/// The percentile of `values` (successful requests) among `values.len() + failed`
/// requests by nearest rank: the value at rank `ceil(p/100 × n)`, a failed request
/// ranking above every value. `None` when that rank falls on a failed request or
/// there are no requests.
pub fn percentile_with_failures(values: &[f64], failed: u64, p: f64) -> Option<f64> {
    let mut v = values.to_vec();
    sort_values(&mut v);
    let n = v.len() as u64 + failed;
    if n == 0 {
        return None;
    }
    let rank = ((p / 100.0) * n as f64).ceil().max(1.0) as u64;
    v.get((rank - 1) as usize).copied()
}

/// A point judged against the SLO from its trials' [`TrialSlo`], read once at 95%
/// (a fixed trial count): [`point_slo_at`] with `z = 1.96`.
pub fn point_slo(trials: &[TrialSlo], slo: &Slo) -> (Stat, report::SloCheck) {
    point_slo_at(trials, slo, report::stats::Z95)
}

/// A point judged against the SLO from its trials' [`TrialSlo`], its interval read
/// at the normal quantile `z` (1.96, or a sequential look's,
/// [`report::stats::sequential::Looks::z`]): per-trial attainment as
/// `{median,min,max,n}`, and the pooled check (attainment with its interval that
/// allows for over-dispersion between trials, and its design effect; `meets` when
/// the point estimate reaches the target, or in the percentile form when each
/// bounded metric's p-th percentile is within its bound; and the judgement,
/// [`super::judgement`]).
pub fn point_slo_at(trials: &[TrialSlo], slo: &Slo, z: f64) -> (Stat, report::SloCheck) {
    let per_trial = Stat::from_trials(trials.iter().map(TrialSlo::attainment));
    let good: u64 = trials.iter().map(|t| t.good).sum();
    let sent: u64 = trials.iter().map(|t| t.sent).sum();
    let failed: u64 = trials.iter().map(|t| t.failed).sum();
    let mut misses = IndexMap::new();
    for t in trials {
        for (k, v) in &t.misses {
            *misses.entry(k.clone()).or_insert(0u64) += v;
        }
    }
    let target = slo.attainment.unwrap_or(DEFAULT_ATTAINMENT);
    let attainment = (sent > 0).then(|| good as f64 / sent as f64);
    let level = if z == report::stats::Z95 {
        crate::stats::LEVEL
    } else {
        report::stats::sequential::level_of(z)
    };
    let counts: Vec<(u64, u64)> = trials.iter().map(|t| (t.good, t.sent)).collect();
    let judged = judge_trials(&counts, target, z);
    let ci = judged.map(|(_, d)| (d.low, d.high));
    let mut percentiles_ms = IndexMap::new();
    let (form, meets, judgement) = match slo.percentile {
        None => (
            SloForm::Attainment,
            attainment.is_some_and(|a| a >= target - 1e-12),
            judged.map(|(j, _)| j),
        ),
        Some(p) => {
            let mut ok = sent > 0;
            let mut parts = Vec::new();
            for (metric, b) in slo.bounds.iter() {
                let values: Vec<f64> = trials
                    .iter()
                    .flat_map(|t| t.values[metric as usize].iter().copied())
                    .collect();
                // A failed request is infinitely slow, and so is a successful one
                // without a value (no answer for TTFAT, no tool call for TTFTC).
                let missing: u64 = trials.iter().map(|t| t.missing[metric as usize]).sum();
                let slow = failed + missing;
                let v = percentile_with_failures(&values, slow, p);
                ok &= v.is_some_and(|v| v <= b);
                parts.push(judge_percentile_at(&values, slow, p, b, level));
                percentiles_ms.insert(metric.key().to_string(), v);
            }
            (SloForm::Percentile, ok, (sent > 0).then(|| all_of(parts)))
        }
    };
    // The requirements on valid tool calls, folded into the point's judgement.
    let tool_calls = super::tool_check::tool_call_checks(trials, slo, z);
    let meets = meets && super::tool_check::estimates_meet(&tool_calls);
    let judgement =
        judgement.map(|j| all_of(std::iter::once(j).chain(tool_calls.iter().map(|c| c.judgement))));
    let check = report::SloCheck {
        good,
        sent,
        attainment,
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        design_effect: (form == SloForm::Attainment)
            .then(|| judged.map(|(_, d)| d.design_effect))
            .flatten(),
        level: (z != report::stats::Z95).then_some(level),
        target,
        form: form.clone(),
        meets,
        judgement,
        decided_by: (form == SloForm::Attainment)
            .then(|| decided_by(good, sent, target))
            .flatten(),
        misses,
        percentiles_ms,
        tool_calls,
    };
    (per_trial, check)
}
