//! The answer from the measurements: the best measured candidate, the runner-up
//! and the judgement between them ([`super::pick`]), every candidate's row, and
//! the real trials run and reused.

use report::{Tune, TuneBest, TuneCapacity, TuneObjective, TuneRunnerUp, TuneScheme, TUNE_FORMAT};

use super::{cost, pick, Tuning};
use crate::define::profile::Objective;

/// The answer from the measurements.
pub(super) fn answer(t: &Tuning<'_>, scheme: TuneScheme, model: Option<String>) -> Tune {
    let engine = &t.space.engine;
    let caps = t.measured_caps();
    let by_cost = t.space.objective == Objective::Cost;
    let order: Vec<usize> = if by_cost {
        cost::rank(&t.rows)
    } else {
        pick::rank(&caps)
            .into_iter()
            .filter(|i| {
                t.rows[*i]
                    .measured
                    .as_ref()
                    .is_some_and(|c| c.max_load.is_some())
            })
            .collect()
    };
    let best = order.first().map(|&i| {
        let r = &t.rows[i];
        let command = t.reports[i]
            .as_ref()
            .and_then(|rep| rep.environment.as_ref())
            .and_then(|e| e.engines.get(engine))
            .and_then(|e| e.command.clone())
            .unwrap_or_default();
        TuneBest {
            flags: r.flags.clone(),
            args: r.args.clone(),
            capacity: r.measured.clone().unwrap_or_else(unreachable_cap),
            cost: r.cost.clone(),
            command,
        }
    });
    let runner_up = match (order.first(), order.get(1)) {
        (Some(&b), Some(&r)) => {
            let (bc, rc) = (
                t.rows[b].measured.clone().unwrap_or_else(unreachable_cap),
                t.rows[r].measured.clone().unwrap_or_else(unreachable_cap),
            );
            let (judgement, note) = match (&t.rows[b].cost, &t.rows[r].cost) {
                (Some(bk), Some(rk)) if by_cost => cost::judge(bk, rk),
                _ => pick::judge(&bc, &rc),
            };
            Some(TuneRunnerUp {
                flags: t.rows[r].flags.clone(),
                args: t.rows[r].args.clone(),
                capacity: rc,
                cost: t.rows[r].cost.clone(),
                judgement,
                note,
            })
        }
        _ => None,
    };
    let measured_trials: Vec<u32> = t
        .rows
        .iter()
        .filter_map(|r| r.measured.as_ref().map(|c| c.trials))
        .collect();
    let mean = if measured_trials.is_empty() {
        0
    } else {
        (f64::from(measured_trials.iter().sum::<u32>()) / measured_trials.len() as f64).round()
            as u32
    };
    let full: u32 = t
        .rows
        .iter()
        .map(|r| match (&r.measured, &r.predicted) {
            (Some(m), _) => m.trials,
            (None, Some(p)) => p.trials,
            (None, None) => mean,
        })
        .sum();
    let slo = t
        .reports
        .iter()
        .flatten()
        .next()
        .map(|r| r.slo.clone())
        .unwrap_or_else(|| report::Slo {
            attainment: t.plan.search.as_ref().map(|s| s.target),
            percentile: None,
            extra: Default::default(),
            ..t.plan.slo.clone()
        });
    Tune {
        tune: TUNE_FORMAT,
        profile: t.plan.name.clone(),
        engine: engine.clone(),
        objective: if by_cost {
            TuneObjective::Cost
        } else {
            TuneObjective::Capacity
        },
        scheme,
        mode: t.plan.mode.into(),
        slo,
        best,
        runner_up,
        candidates: t.rows.clone(),
        trials_run: t.trials_run,
        trials_reused: t.trials_reused,
        full_search_trials_estimate: full.max(t.trials_run + t.trials_reused),
        reports_dir: t
            .dir
            .file_name()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default(),
        model,
        notes: t.notes.clone(),
    }
}

fn unreachable_cap() -> TuneCapacity {
    TuneCapacity {
        max_load: None,
        interval: None,
        limited_by: "slo".into(),
        trials: 0,
    }
}
