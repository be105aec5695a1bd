//! `goodput tune`: which flags of one engine serve the most load under the SLO.
//!
//! The candidates are the product of `[tune.flags]` ([`crate::define::profile::Space`]).
//! Two schemes, both bounded by `max_candidates_measured` real capacity searches:
//!
//! - **Model-guided** (every flag is one of vLLM's flags the engine model speaks,
//!   and the engine is `sim` or `vllm`): the first and the last candidate of the
//!   space are measured (the plan's capacity search through the one runner,
//!   [`measure`]); the engine model is fitted on the measured candidate with the
//!   largest capacity (its probes span the most loads); every candidate is
//!   predicted in virtual time with its flags applied to the fitted model, with an
//!   interval ([`predict`]); the three best predicted are measured, then any other
//!   whose predicted interval still reaches the best measured capacity, while the
//!   budget lasts.
//! - **Successive halving** (a flag the model does not speak): short searches (one
//!   trial a probe, a quarter of the requests) of the candidates, the better half
//!   kept each round with twice the requests, until two are left; those get the
//!   plan's full search (`halving`).
//!
//! The answer ([`pick`]) is the best **measured** capacity, judged against the
//! runner-up by their capacity intervals. Every search is an ordinary report in
//! `<tune>.candidates/`; resuming a killed tune is not done yet (rerun with
//! `--force`).

mod halving;
pub mod measure;
pub mod pick;
pub mod predict;

use std::path::{Path, PathBuf};

use report::{Tune, TuneBest, TuneCandidate, TuneCapacity, TuneRunnerUp, TuneScheme, TUNE_FORMAT};

use crate::define::plan::Plan;
use crate::define::profile::{Candidate, EngineKind, FlagValue, Space};
use measure::Measured;

/// How many of the best predicted candidates are measured, at least.
pub const CONFIRM: usize = 3;

/// What `goodput tune` was asked to do.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    /// The answer (`tune.json`); the candidates' reports go beside it.
    pub output: PathBuf,
    /// Overwrite an existing answer and its candidates' reports.
    pub force: bool,
    /// Status lines on stderr.
    pub verbose: bool,
    /// `--ttft-includes-connect`.
    pub ttft_includes_connect: bool,
}

/// Where the candidates' reports go: `tune.json` -> `tune.candidates/`.
pub fn reports_dir(output: &Path) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tune.json".into());
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    output.with_file_name(format!("{stem}.candidates"))
}

/// The flags of a candidate as JSON (`{"--max-num-seqs": 8}`).
fn flags_json(c: &Candidate) -> serde_json::Map<String, serde_json::Value> {
    c.flags
        .iter()
        .map(|(f, v)| {
            let j = match v {
                FlagValue::Switch(b) => serde_json::Value::Bool(*b),
                FlagValue::Int(n) => serde_json::Value::from(*n),
                FlagValue::Float(x) => serde_json::Value::from(*x),
                FlagValue::Text(s) => serde_json::Value::String(s.clone()),
            };
            (f.clone(), j)
        })
        .collect()
}

/// The state of a tune: every candidate's row, and the real work so far.
pub(crate) struct Tuning<'a> {
    pub plan: &'a Plan,
    pub space: &'a Space,
    pub opts: &'a TuneOptions,
    pub dir: PathBuf,
    pub rows: Vec<TuneCandidate>,
    pub reports: Vec<Option<report::Report>>,
    pub trials_run: u32,
    pub measured: u32,
    pub notes: Vec<String>,
}

impl Tuning<'_> {
    fn say(&self, line: &str) {
        if self.opts.verbose {
            eprintln!("{}", crate::term::safe(line));
        }
    }

    /// A real search of candidate `i` (the plan's, or `plan` when given: a short
    /// one), counted against the budget when it is the candidate's first.
    pub(crate) async fn measure(&mut self, i: usize, plan: Option<&Plan>, tag: &str) -> Measured {
        let c = &self.space.candidates[i];
        let file = self.dir.join(format!("{tag}{i:03}.json"));
        self.say(&format!("tune: measuring {} ({tag}search)", c.label()));
        let m = measure::measure(
            plan.unwrap_or(self.plan),
            &self.space.engine,
            c,
            &file,
            self.opts.verbose,
            self.opts.ttft_includes_connect,
        )
        .await;
        self.trials_run += m.trials;
        if let Some(f) = &m.failure {
            self.say(&format!("tune: {} failed: {f}", c.label()));
        }
        let row = &mut self.rows[i];
        if row.measured.is_none() && row.screened.is_none() && row.failure.is_none() {
            self.measured += 1;
        }
        if let Some(f) = &m.failure {
            row.failure = Some(f.clone());
        }
        let rel = format!(
            "{}/{}",
            self.dir
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
            file.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        );
        row.report = Some(rel);
        m
    }

    /// A full search of candidate `i`, kept as its measurement.
    pub(crate) async fn measure_full(&mut self, i: usize) {
        if self.rows[i].measured.is_some() || self.rows[i].failure.is_some() {
            return;
        }
        let m = self.measure(i, None, "").await;
        self.rows[i].measured = m.capacity;
        self.reports[i] = m.report;
    }

    fn budget_left(&self) -> bool {
        self.measured < self.space.max_measured
    }

    fn measured_caps(&self) -> Vec<(usize, TuneCapacity)> {
        self.rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.measured.clone().map(|c| (i, c)))
            .collect()
    }
}

/// The engine model speaks every flag of the space, and the engine is one it
/// models (vLLM, or the simulator that takes vLLM's flags).
pub fn model_speaks(plan: &Plan, space: &Space) -> Result<(), String> {
    let kind = plan
        .engines
        .get(&space.engine)
        .map(|s| s.effective_kind())
        .unwrap_or_default();
    if !matches!(kind, EngineKind::Sim | EngineKind::Vllm) {
        return Err(format!(
            "the engine is not vLLM or the simulator (kind = \"{}\"): its flags are not the engine model's",
            format!("{kind:?}").to_lowercase()
        ));
    }
    let unspoken: Vec<&str> = space
        .flags
        .iter()
        .map(|(f, _)| f.as_str())
        .filter(|f| !predict::speaks(f))
        .collect();
    if unspoken.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the engine model does not speak {} (it models {})",
            unspoken.join(", "),
            goodput_sim::config::vllm::FLAG_KEYS
                .iter()
                .map(|(f, _)| *f)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// Runs a tune of `space` with `plan`'s capacity search (one engine: the space's);
/// writes and returns the answer.
pub async fn tune(plan: &Plan, space: &Space, opts: &TuneOptions) -> anyhow::Result<Tune> {
    let dir = reports_dir(&opts.output);
    if !opts.force && (opts.output.exists() || dir.exists()) {
        return Err(crate::UsageError(format!(
            "{} exists: tune does not resume yet; pass --force to start over, or -o another file",
            if opts.output.exists() {
                &opts.output
            } else {
                &dir
            }
            .display()
        ))
        .into());
    }
    std::fs::create_dir_all(&dir)?;
    let n = space.candidates.len();
    let mut t = Tuning {
        plan,
        space,
        opts,
        dir,
        rows: space
            .candidates
            .iter()
            .map(|c| TuneCandidate {
                flags: flags_json(c),
                args: c.args(),
                predicted: None,
                measured: None,
                screened: None,
                failure: None,
                report: None,
            })
            .collect(),
        reports: vec![None; n],
        trials_run: 0,
        measured: 0,
        notes: Vec::new(),
    };
    let mut model_file = None;
    let scheme = match model_speaks(plan, space) {
        Ok(()) => {
            model_file = model_guided(&mut t).await;
            TuneScheme::ModelGuided
        }
        Err(why) => {
            t.notes.push(format!(
                "successive halving, not the model: {why}; every candidate's capacity is measured"
            ));
            halving::run(&mut t).await;
            TuneScheme::SuccessiveHalving
        }
    };
    let answer = answer(&t, scheme, model_file);
    let text = serde_json::to_string_pretty(&answer)? + "\n";
    crate::redact::write_file(&opts.output, &text)?;
    Ok(answer)
}

/// The model-guided scheme; returns the fitted model's file (relative), if any.
async fn model_guided(t: &mut Tuning<'_>) -> Option<String> {
    let n = t.space.candidates.len();
    // Spread: the space's two ends (the first flag's lowest and highest values).
    let mut spread = vec![0];
    if n > 1 {
        spread.push(n - 1);
    }
    for i in spread {
        t.measure_full(i).await;
    }
    // The model is fitted on the measured candidate whose search reached the
    // highest load (its probes span the most loads).
    let source = pick::rank(&t.measured_caps()).into_iter().next();
    let fitted = source.and_then(|i| {
        let path = t.dir.join(format!("{i:03}.json"));
        match crate::model::fit::output::fit_report(&path, Some(&t.space.engine)) {
            Ok(f) => Some((i, f)),
            Err(e) => {
                t.notes.push(format!(
                    "the engine model could not be fitted on {}: {e:#}; the candidates are measured in the space's order instead",
                    t.space.candidates[i].label()
                ));
                None
            }
        }
    });
    if source.is_none() {
        t.notes.push("no measured candidate served any load to fit the engine model on; the candidates are measured in the space's order instead".into());
    }
    let Some((src, fit)) = fitted else {
        for i in 0..n {
            if !t.budget_left() {
                break;
            }
            t.measure_full(i).await;
        }
        return None;
    };
    let model_path = t.dir.join("model.toml");
    let mut model_rel = None;
    let mut config = fit.config.clone();
    if let Ok(text) = crate::model::fit::output::toml_text(&fit) {
        if crate::redact::write_file(&model_path, &text).is_ok() {
            model_rel = Some(format!(
                "{}/model.toml",
                t.dir
                    .file_name()
                    .map(|d| d.to_string_lossy())
                    .unwrap_or_default()
            ));
        }
    }
    config = predict::with_tune_draws(config);
    let model = crate::model::predict::Model {
        config,
        path: model_path.display().to_string(),
        fitted_from: Some(t.dir.join(format!("{src:03}.json")).display().to_string()),
    };
    t.notes.push(format!(
        "model-guided: measured the space's ends, fitted the engine model on {} ({} steps), predicted all {n} candidates in virtual time",
        t.space.candidates[src].label(),
        fit.steps
    ));
    for i in 0..n {
        match predict::predict_capacity(t.plan, &t.space.engine, &model, &t.space.candidates[i]) {
            Ok(c) => t.rows[i].predicted = Some(c),
            Err(e) => t.notes.push(format!(
                "{}: not predicted: {e}",
                t.space.candidates[i].label()
            )),
        }
    }
    ties(t);
    // The most promising, by prediction.
    let predicted: Vec<(usize, TuneCapacity)> = t
        .rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.predicted.clone().map(|c| (i, c)))
        .collect();
    let order = pick::rank(&predicted);
    for &i in order.iter().take(CONFIRM) {
        if !t.budget_left() {
            break;
        }
        t.measure_full(i).await;
    }
    // Then any other whose predicted interval still reaches the best measured one.
    for &i in order.iter().skip(CONFIRM) {
        if !t.budget_left() {
            t.notes.push(format!(
                "the budget ({} candidates measured) ran out before every candidate the model could not rule out was measured",
                t.space.max_measured
            ));
            break;
        }
        let best_low = pick::rank(&t.measured_caps())
            .first()
            .and_then(|b| t.rows[*b].measured.clone())
            .map_or(0.0, |c| {
                c.interval.map_or(c.max_load.unwrap_or(0.0), |i| i.low)
            });
        let reach = t.rows[i].predicted.as_ref().map_or(0.0, |c| {
            c.interval.map_or(c.max_load.unwrap_or(0.0), |i| i.high)
        });
        if reach >= best_low && best_low > 0.0 {
            t.measure_full(i).await;
        }
    }
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

/// The answer from the measurements.
fn answer(t: &Tuning<'_>, scheme: TuneScheme, model: Option<String>) -> Tune {
    let engine = &t.space.engine;
    let caps = t.measured_caps();
    let order: Vec<usize> = pick::rank(&caps)
        .into_iter()
        .filter(|i| {
            t.rows[*i]
                .measured
                .as_ref()
                .is_some_and(|c| c.max_load.is_some())
        })
        .collect();
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
            command,
        }
    });
    let runner_up = match (order.first(), order.get(1)) {
        (Some(&b), Some(&r)) => {
            let (bc, rc) = (
                t.rows[b].measured.clone().unwrap_or_else(unreachable_cap),
                t.rows[r].measured.clone().unwrap_or_else(unreachable_cap),
            );
            let (judgement, note) = pick::judge(&bc, &rc);
            Some(TuneRunnerUp {
                flags: t.rows[r].flags.clone(),
                args: t.rows[r].args.clone(),
                capacity: rc,
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
            bounds: t.plan.slo.bounds,
            attainment: t.plan.search.as_ref().map(|s| s.target),
            percentile: None,
            extra: Default::default(),
        });
    Tune {
        tune: TUNE_FORMAT,
        profile: t.plan.name.clone(),
        engine: engine.clone(),
        objective: "capacity".into(),
        scheme,
        mode: t.plan.mode.into(),
        slo,
        best,
        runner_up,
        candidates: t.rows.clone(),
        trials_run: t.trials_run,
        full_search_trials_estimate: full.max(t.trials_run),
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
