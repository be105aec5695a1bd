//! The one scheduler of trials, for every backend (an HTTP engine, or the engine
//! model in virtual time): which trial of which load level runs next, from what
//! the sweep holds so far. A plain run takes the plan's load levels in order, each
//! to its trials (a fixed count, or `trials = "auto"`'s rule,
//! [`crate::judge::search::trials`]); a search asks [`crate::judge::search::next_step`]. Pure, so
//! a resumed run continues where it stopped and a prediction runs the trials a
//! measured run would.

use super::state::{PointKey, Sweep};
use crate::define::plan::Plan;
use crate::judge::search::{next_step, Step};

/// The next trial of an engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Next {
    /// Numbers the load level for the request seeds: the whole plan's grid index,
    /// or for a search the load itself (`x × 1000`, rounded), so that every engine,
    /// every shard and the model send the same requests at a level.
    pub level: u64,
    /// The load level.
    pub x: f64,
    /// The trial index.
    pub t: u32,
}

/// The next trial to run on `name`, or `None` when the engine's share is done.
/// `whole_points` are the whole plan's load levels when `plan` is a shard of it
/// (a shard's levels keep the whole plan's numbering).
pub(crate) fn next_trial(
    plan: &Plan,
    sweep: &Sweep,
    name: &str,
    whole_points: Option<&[f64]>,
) -> Option<Next> {
    let first_missing = |x: f64, trials: u32| {
        (0..trials).find(|&t| !sweep.is_complete(name, PointKey::new(plan.mode, x), t))
    };
    if let Some(cfg) = &plan.search {
        return match next_step(cfg, &sweep.observations(plan, name)) {
            Step::Done(_) => None,
            Step::Run { x, trials } => first_missing(x, trials).map(|t| Next {
                level: (x * 1000.0).round() as u64,
                x,
                t,
            }),
        };
    }
    plan.points.iter().enumerate().find_map(|(pi, &x)| {
        let level = whole_points
            .and_then(|ps| ps.iter().position(|&p| p == x))
            .unwrap_or(pi) as u64;
        first_missing(x, wanted(plan, sweep, name, x)).map(|t| Next { level, x, t })
    })
}

/// Trials point `x` is to have: the plan's count; with adaptive trials, one more
/// than it has while the rule gives it another.
fn wanted(plan: &Plan, sweep: &Sweep, name: &str, x: f64) -> u32 {
    let Some(rule) = plan.adaptive else {
        return plan.trials;
    };
    let s = sweep.settled(plan, name, x);
    if s.trials < plan.trials {
        return plan.trials;
    }
    match rule.stopped(s) {
        None => s.trials + 1,
        Some(_) => s.trials,
    }
}
