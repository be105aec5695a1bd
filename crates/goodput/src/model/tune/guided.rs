//! The model-guided scheme: measure the space's ends, fit the engine model on the
//! best measured candidate, predict every candidate, then measure the most
//! promising one at a time, refitting (and predicting again) whenever the best
//! measured candidate changes, until no candidate is left that the model says
//! could reach the best measured capacity, or the budget is spent.

use report::TuneCapacity;

use super::{pick, predict, Tuning, CONFIRM};
use crate::model::fit::Fit;
use crate::model::predict::Model;

/// The low end of a capacity (its interval's, else the point; none: 0).
fn low(c: &TuneCapacity) -> f64 {
    c.interval.map_or(c.max_load.unwrap_or(0.0), |i| i.low)
}

/// The high end of a capacity (its interval's, else the point; none: 0).
fn high(c: &TuneCapacity) -> f64 {
    c.interval.map_or(c.max_load.unwrap_or(0.0), |i| i.high)
}

/// The best measured candidate that serves some load.
fn best_measured(t: &Tuning<'_>) -> Option<usize> {
    pick::rank(&t.measured_caps()).into_iter().find(|i| {
        t.rows[*i]
            .measured
            .as_ref()
            .is_some_and(|c| c.max_load.is_some())
    })
}

/// Fits the engine model on candidate `src`'s search; a note when it cannot.
fn fit_on(t: &mut Tuning<'_>, src: usize) -> Option<Fit> {
    let path = t.dir.join(format!("{src:03}.json"));
    match crate::model::fit::output::fit_report(&path, Some(&t.space.engine)) {
        Ok(f) => Some(f),
        Err(e) => {
            t.notes.push(format!(
                "the engine model could not be fitted on {}: {e:#}",
                t.space.candidates[src].label()
            ));
            None
        }
    }
}

/// Writes the fitted model beside the reports and predicts every candidate on it.
fn predict_all(t: &mut Tuning<'_>, src: usize, fit: &Fit) -> Option<String> {
    let model_path = t.dir.join("model.toml");
    let dir_name = t
        .dir
        .file_name()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rel = crate::model::fit::output::toml_text(fit)
        .ok()
        .and_then(|text| crate::redact::write_file(&model_path, &text).ok())
        .map(|_| format!("{dir_name}/model.toml"));
    let model = Model {
        config: predict::with_tune_draws(fit.config.clone()),
        path: model_path.display().to_string(),
        fitted_from: Some(t.dir.join(format!("{src:03}.json")).display().to_string()),
    };
    for i in 0..t.space.candidates.len() {
        match predict::predict_capacity(t.plan, &t.space.engine, &model, &t.space.candidates[i]) {
            Ok(c) => t.rows[i].predicted = Some(c),
            Err(e) => {
                t.rows[i].predicted = None;
                t.notes.push(format!(
                    "{}: not predicted: {e}",
                    t.space.candidates[i].label()
                ));
            }
        }
    }
    rel
}

/// The next candidate worth measuring: among those not measured (nor failed), by
/// prediction, the best while fewer than [`CONFIRM`] were picked by the model,
/// then the best whose predicted interval reaches the best measured capacity's
/// lower end. `None`: nothing left could beat the best.
fn next(t: &Tuning<'_>, picked: usize) -> Option<usize> {
    let open: Vec<(usize, TuneCapacity)> = t
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.measured.is_none() && r.failure.is_none())
        .filter_map(|(i, r)| r.predicted.clone().map(|c| (i, c)))
        .collect();
    let order: Vec<usize> = pick::rank(&open)
        .into_iter()
        .filter(|&i| {
            t.rows[i]
                .predicted
                .as_ref()
                .is_some_and(|p| p.max_load.is_some())
        })
        .collect();
    if picked < CONFIRM {
        return order.first().copied();
    }
    let best_low = best_measured(t)
        .and_then(|b| t.rows[b].measured.as_ref().map(low))
        .unwrap_or(0.0);
    order.into_iter().find(|&i| {
        t.rows[i]
            .predicted
            .as_ref()
            .is_some_and(|p| high(p) >= best_low)
    })
}

/// The scheme; returns the fitted model's file (relative), if any.
pub(super) async fn run(t: &mut Tuning<'_>) -> Option<String> {
    let n = t.space.candidates.len();
    // Spread: the space's two ends (the first flag's lowest and highest values).
    let mut spread = vec![0];
    if n > 1 {
        spread.push(n - 1);
    }
    for i in spread {
        if t.budget_left() {
            t.measure_full(i).await;
        }
    }
    let mut fitted_on: Option<usize> = None;
    let mut model_rel = None;
    let mut fits = 0;
    let mut picked = 0;
    loop {
        // Refit when the best measured candidate changed: its probes span the
        // most loads, and it is where the answer is.
        let best = best_measured(t);
        if let Some(src) = best.filter(|b| Some(*b) != fitted_on) {
            fitted_on = Some(src);
            if let Some(fit) = fit_on(t, src) {
                fits += 1;
                t.notes.push(format!(
                    "{} the engine model on {} ({} steps) and predicted all {n} candidates in virtual time",
                    if fits == 1 { "fitted" } else { "refitted" },
                    t.space.candidates[src].label(),
                    fit.steps
                ));
                model_rel = predict_all(t, src, &fit).or(model_rel);
            }
        }
        if fits == 0 {
            break;
        }
        let Some(i) = next(t, picked) else {
            t.notes.push(
                "stopped: no candidate left unmeasured whose predicted capacity interval reaches the best measured one's".into(),
            );
            break;
        };
        if !t.budget_left() {
            t.notes.push(format!(
                "the budget ({}) ran out before every candidate the model could not rule out was measured",
                t.spent()
            ));
            break;
        }
        picked += 1;
        t.measure_full(i).await;
    }
    if fits == 0 {
        t.notes.push("no measured candidate served a load the engine model could be fitted on; the candidates are measured in the space's order instead".into());
        for i in 0..n {
            if !t.budget_left() {
                break;
            }
            t.measure_full(i).await;
        }
        return None;
    }
    ties(t);
    model_rel
}

/// A note when the model predicts the same capacity for candidates whose flags
/// differ only in flags it cannot tell apart (the fit holds `sched_cpu_ms` at 0,
/// so `--async-scheduling` moves nothing in it).
fn ties(t: &mut Tuning<'_>) {
    let async_flag = t
        .space
        .flags
        .iter()
        .any(|(f, _)| predict::speaks(f) && f.replace('_', "-").ends_with("async-scheduling"));
    if async_flag {
        t.notes.push("the fit holds the scheduler's CPU time (sched_cpu_ms) at 0, so the model predicts --async-scheduling on and off alike: tied candidates are told apart by measurement".into());
    }
}
