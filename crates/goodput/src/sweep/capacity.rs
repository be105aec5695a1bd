//! Each engine's capacity for the report's `capacity`, asked of the judgement
//! ([`crate::judge::capacity`]) whenever an engine's search is over (so a resumed
//! search, and the report written after each trial, give it as soon as it is
//! known).

use report::{Capacity, Report};

use crate::define::plan::Plan;
use crate::judge::capacity::Probed;
use crate::judge::search::{next_step, Step};

use super::Sweep;

/// Each engine's capacity, for the engines whose search is over (or that failed).
pub(crate) fn capacities(
    plan: &Plan,
    sweep: &Sweep,
    report: &Report,
) -> indexmap::IndexMap<String, Capacity> {
    let mut out = indexmap::IndexMap::new();
    let Some(cfg) = &plan.search else {
        return out;
    };
    for (name, state) in &sweep.engines {
        let Some(result) = report.load.get(name) else {
            continue;
        };
        let obs = sweep.observations(plan, name);
        let probed = Probed {
            engine: name,
            cfg,
            points: &result.points,
            probes: obs.len() as u32,
            trials: obs.iter().map(|o| o.trials).sum(),
        };
        let capacity = match next_step(cfg, &obs) {
            Step::Done(found) => Some(probed.capacity(&found)),
            Step::Run { .. } => state.error.as_ref().map(|e| probed.failed(e)),
        };
        if let Some(c) = capacity {
            out.insert(name.clone(), c);
        }
    }
    out
}
