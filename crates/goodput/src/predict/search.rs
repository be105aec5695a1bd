//! A capacity search in virtual time: the same search ([`crate::search::next_step`])
//! over predicted points. Its answer is where `goodput search --predict` confirms
//! on the real engine; the trials it took are what a blind search of a real engine
//! that behaves like the model would have needed.

use goodput_sim::SimConfig;

use crate::plan::Plan;
use crate::record::RequestRecord;
use crate::run::{PointKey, Sweep};
use crate::search::{next_step, Step};

/// Most trials one predicted search may run (the search bounds itself; this bounds a bug).
const MAX_TRIALS: u32 = 10_000;

/// Runs the plan's search on `engine` in virtual time; returns every record.
pub(crate) fn run(
    plan: &Plan,
    config: &SimConfig,
    sweep: &mut Sweep,
    engine: &str,
) -> Vec<RequestRecord> {
    let mut records = Vec::new();
    let Some(cfg) = &plan.search else {
        return records;
    };
    for _ in 0..MAX_TRIALS {
        let Step::Run { x, trials } = next_step(cfg, &sweep.observations(plan, engine)) else {
            break;
        };
        let have =
            (0..trials).find(|&t| !sweep.is_complete(engine, PointKey::new(plan.mode, x), t));
        let Some(t) = have else { break };
        // The request stream of a search probe, as the real runner numbers it.
        let pi = (x * 1000.0).round() as u64;
        records.extend(super::run_trial(plan, config, sweep, engine, pi, x, t));
    }
    records
}

/// The predicted knee of `engine` and the trials the predicted search took.
pub fn knee(report: &report::Report, engine: &str) -> (Option<f64>, u32) {
    report
        .capacity
        .get(engine)
        .map_or((None, 0), |c| (c.max_load, c.trials))
}

/// The predicted loads of `engine` whose interval straddles the SLO (the model's
/// uncertainty could flip their judgement), ascending.
pub fn straddling(report: &report::Report, engine: &str) -> Vec<f64> {
    let mut xs: Vec<f64> = report
        .load
        .get(engine)
        .map(|e| {
            e.points
                .iter()
                .filter(|p| super::interval::straddles(p))
                .map(|p| p.x)
                .collect()
        })
        .unwrap_or_default();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs
}
