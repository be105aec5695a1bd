//! What `compare` tests, per metric and load level: each trial's figure
//! ([`report::TrialInfo::figures`], stored by every run since they were added:
//! the same per-trial values `show` summarises), or, for a report written before,
//! the figures recomputed from its requests file ([`fill_figures`]), or the trial
//! values its summaries still hold ([`report::compare::sample`]).
//!
//! The definitions are the report's ([`crate::measure::metrics`]): per trial, the
//! median and p99 TTFT, the median TPOT and ITL (numpy's linear rule), output
//! tokens and good requests per second of the trial's duration; attainment from
//! each trial's good and sent requests. A row shows the mean over trials (the
//! change is the ratio of those means); `show` prints the median over trials,
//! which is the same number for two trials.

use std::collections::HashMap;

use crate::drive::record::RequestRecord;
use crate::measure::metrics::trial_metrics;

pub use report::compare::{sample, spread, Better, Kind, Metric, Sample, METRICS};

/// Fills in the per-trial figures of a report that has none (written before they
/// were stored) from its requests, judged against the report's SLO: the last
/// attempt of each trial. Returns how many trials were filled.
pub fn fill_figures(report: &mut report::Report, records: &[RequestRecord]) -> usize {
    let slo = &report.slo;
    let mut by_trial: HashMap<(&str, u64, u32, u32), Vec<RequestRecord>> = HashMap::new();
    for r in records {
        by_trial
            .entry((r.engine.as_str(), r.x.to_bits(), r.trial, r.attempt))
            .or_default()
            .push(r.clone());
    }
    let mut filled = 0;
    for (name, e) in report.load.iter_mut() {
        for p in &mut e.points {
            for t in p.trials.iter_mut().filter(|t| t.figures.is_empty()) {
                if let Some(recs) =
                    by_trial.get(&(name.as_str(), p.x.to_bits(), t.index, t.attempt))
                {
                    t.figures = trial_metrics(recs, slo).figures;
                    filled += 1;
                }
            }
        }
    }
    filled
}

/// True when every point of the report lists its trials and every complete one
/// stores its figures.
pub fn has_figures(report: &report::Report) -> bool {
    report.load.values().all(|e| {
        e.points.iter().all(|p| {
            let mut done = p
                .trials
                .iter()
                .filter(|t| t.status == report::RunStatus::Complete)
                .peekable();
            done.peek().is_some() && done.all(|t| !t.figures.is_empty())
        })
    })
}
