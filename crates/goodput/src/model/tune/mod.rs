//! `goodput tune`: which flags of one engine serve the most load under the SLO.
//!
//! The candidates are the product of `[tune.flags]` ([`crate::define::profile::Space`]).
//! Two schemes, both bounded by `max_candidates_measured` real capacity searches:
//!
//! - **Model-guided** (every flag is one of vLLM's flags the engine model speaks,
//!   and the engine is `sim` or `vllm`, or `[tune] speaks = "vllm"`): the first
//!   and the last candidate of the space are measured (the plan's capacity search
//!   through the one runner, [`measure`]); the engine model is fitted on the
//!   measured candidate with the largest capacity (its probes span the most
//!   loads); every candidate is predicted in virtual time with its flags applied
//!   to the fitted model, with an interval ([`predict`]); then one at a time the
//!   most promising is measured (the three best predicted, then any whose
//!   predicted interval still reaches the best measured capacity), the model
//!   refitted whenever the best measured candidate changes and every candidate
//!   predicted again, until none is left that could beat the best or the budget
//!   (`max_candidates_measured`, `max_trials`, `max_minutes`) is spent
//!   (`guided`).
//! - **Successive halving** (a flag the model does not speak): short searches (one
//!   trial a probe, a quarter of the requests) of the candidates, the better half
//!   kept each round with twice the requests, until two are left; those get the
//!   plan's full search (`halving`).
//!
//! - **Price order** (`objective = "cost"`): each candidate priced and measured
//!   at the load that must be served, cheapest first ([`cost`]).
//!
//! The answer ([`pick`]) is the best **measured** capacity, judged against the
//! runner-up by their capacity intervals. Every search is an ordinary report in
//! `<tune>.candidates/`, and a rerun resumes: a finished search of the same
//! candidate plan is reused, an unfinished one resumed by the runner
//! ([`measure::resume_state`]); `--fresh` starts over.

mod answer;
pub mod cost;
mod guided;
mod halving;
pub mod measure;
pub mod pick;
pub mod predict;

use std::path::{Path, PathBuf};

use report::{Tune, TuneCandidate, TuneCapacity, TuneScheme};

use crate::define::plan::Plan;
use crate::define::profile::{Candidate, EngineKind, FlagDialect, FlagValue, Objective, Space};
use measure::Measured;

/// How many of the best predicted candidates are measured, at least.
pub const CONFIRM: usize = 3;

/// What `goodput tune` was asked to do.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    /// The answer (`tune.json`); the candidates' reports go beside it.
    pub output: PathBuf,
    /// Start over: the candidates' reports of an earlier tune are removed (else
    /// they are reused or resumed).
    pub fresh: bool,
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
    pub trials_reused: u32,
    pub measured: u32,
    pub notes: Vec<String>,
    pub started: std::time::Instant,
    /// An earlier tune's report of another plan stands at a candidate's file.
    pub fatal: Option<String>,
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
        let m = match measure::measure(
            plan.unwrap_or(self.plan),
            &self.space.engine,
            c,
            &file,
            self.opts.verbose,
            self.opts.ttft_includes_connect,
        )
        .await
        {
            Ok(m) => m,
            Err(why) => {
                self.fatal = Some(why.clone());
                measure::Measured {
                    capacity: None,
                    failure: Some(why),
                    report_path: file.clone(),
                    report: None,
                    trials: 0,
                    reused: 0,
                }
            }
        };
        self.trials_run += m.trials;
        self.trials_reused += m.reused;
        if m.reused > 0 {
            self.say(&format!(
                "tune: {} reused {} trials of an earlier tune",
                c.label(),
                m.reused
            ));
        }
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

    /// Whether another search may start: within `max_candidates_measured`,
    /// `max_trials` and `max_minutes`, and no earlier tune's report of another
    /// plan in the way.
    pub(crate) fn budget_left(&self) -> bool {
        self.measured < self.space.max_measured && self.time_left()
    }

    /// Within `max_trials` and `max_minutes` (a short search counts too).
    pub(crate) fn time_left(&self) -> bool {
        self.fatal.is_none()
            && self.space.max_trials.is_none_or(|n| self.trials_run < n)
            && self
                .space
                .max_minutes
                .is_none_or(|m| self.started.elapsed().as_secs_f64() < m * 60.0)
    }

    /// Which budget stopped the tune, in words (for the notes).
    pub(crate) fn spent(&self) -> String {
        if let Some(n) = self.space.max_trials.filter(|n| self.trials_run >= *n) {
            format!("max_trials = {n}: {} trials run", self.trials_run)
        } else if let Some(m) = self
            .space
            .max_minutes
            .filter(|m| self.started.elapsed().as_secs_f64() >= m * 60.0)
        {
            format!("max_minutes = {m}")
        } else {
            format!("{} candidates measured", self.space.max_measured)
        }
    }

    pub(crate) fn measured_caps(&self) -> Vec<(usize, TuneCapacity)> {
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
    let declared = space.speaks == Some(FlagDialect::Vllm);
    if !declared && !matches!(kind, EngineKind::Sim | EngineKind::Vllm) {
        return Err(format!(
            "the engine is not vLLM or the simulator (kind = \"{}\") and [tune] does not say it speaks vLLM's flags (speaks = \"vllm\"): its flags are not the engine model's",
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
    if opts.output.is_dir() {
        return Err(crate::UsageError(format!(
            "{} is a directory: give the answer's file name, e.g. -o tune.json",
            opts.output.display()
        ))
        .into());
    }
    if opts.fresh && dir.is_dir() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot start over: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", dir.display()))?;
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
                cost: None,
                failure: None,
                report: None,
            })
            .collect(),
        reports: vec![None; n],
        trials_run: 0,
        trials_reused: 0,
        measured: 0,
        notes: Vec::new(),
        started: std::time::Instant::now(),
        fatal: None,
    };
    let mut model_file = None;
    let scheme = match model_speaks(plan, space) {
        _ if space.objective == Objective::Cost => {
            cost::run(&mut t).await;
            TuneScheme::PriceOrder
        }
        Ok(()) => {
            model_file = guided::run(&mut t).await;
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
    if let Some(why) = &t.fatal {
        return Err(crate::UsageError(format!(
            "{why}: the profile changed since the earlier tune at {}; pass --fresh to start over, or -o another file",
            opts.output.display()
        ))
        .into());
    }
    if t.trials_reused > 0 {
        t.notes.push(format!(
            "resumed: {} trials of an earlier tune's searches reused, {} run now",
            t.trials_reused, t.trials_run
        ));
    }
    let answer = answer::answer(&t, scheme, model_file);
    let text = serde_json::to_string_pretty(&answer)? + "\n";
    crate::redact::write_file(&opts.output, &text)?;
    Ok(answer)
}
