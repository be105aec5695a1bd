//! One candidate measured for real: the plan's capacity search, through the one
//! runner (`sweep::run`), on the engine launched with the candidate's flags.
//! Its report is an ordinary search report; a candidate that fails to start or to
//! serve is recorded with its failure, never fatal.
//!
//! Resuming: a report already at the candidate's file, of the same candidate plan
//! (the same fingerprints), is reused when complete (no trial rerun) and resumed
//! by the runner when not (its finished trials kept); one of another plan is an
//! error ([`Resume::Other`]) that names what differs, so a changed profile never
//! mixes its trials with the old ones.

use std::path::{Path, PathBuf};
use std::time::Duration;

use report::{Limit, Report, RunStatus, TuneCapacity};

use crate::define::options::RunOptions;
use crate::define::plan::{fingerprint_changes, Plan};
use crate::define::profile::{with_flags, Candidate};

/// What a real search of one candidate gave.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The capacity (absent when the candidate failed).
    pub capacity: Option<TuneCapacity>,
    /// Why it has no capacity.
    pub failure: Option<String>,
    /// Its report.
    pub report_path: PathBuf,
    /// The report, when the run wrote one.
    pub report: Option<Report>,
    /// Real trials it ran now.
    pub trials: u32,
    /// Trials of an earlier run of the same search it kept (resumed or reused).
    pub reused: u32,
}

/// What is already at a candidate's report file.
#[derive(Debug)]
pub enum Resume {
    /// Nothing (or `--fresh`): a new search.
    New,
    /// A complete search of the same plan: reused as it is.
    Done(Box<Report>),
    /// An incomplete search of the same plan, with its finished trials.
    Partial(u32),
    /// A search of another plan, or a file that is not goodput's report.
    Other(String),
}

/// Trials finished in a report (every point's completed trials).
fn finished_trials(r: &Report) -> u32 {
    r.load
        .values()
        .flat_map(|e| &e.points)
        .map(|p| p.completed.len() as u32)
        .sum()
}

/// What `output` holds for `plan` (the candidate's plan).
pub fn resume_state(plan: &Plan, output: &Path) -> Resume {
    if !output.exists() {
        return Resume::New;
    }
    let old = match report::read_report(output) {
        Ok(r) => r,
        Err(e) => return Resume::Other(e.to_string()),
    };
    let Some(info) = &old.run else {
        return Resume::Other(format!(
            "{} holds a report goodput did not run",
            output.display()
        ));
    };
    let mut changed = fingerprint_changes(&info.fingerprints, &plan.fingerprints());
    if old.profile != plan.name {
        changed.push("profile name".into());
    }
    if !changed.is_empty() || info.fingerprints.is_empty() {
        return Resume::Other(format!(
            "{} holds a search of another plan (it differs in: {})",
            output.display(),
            if changed.is_empty() {
                "no fingerprint: an older goodput".into()
            } else {
                changed.join(", ")
            }
        ));
    }
    if info.status == RunStatus::Complete {
        Resume::Done(Box::new(old))
    } else {
        Resume::Partial(finished_trials(&old))
    }
}

/// `plan` with `engine` launched with `candidate`'s flags appended.
pub fn candidate_plan(plan: &Plan, engine: &str, candidate: &Candidate) -> Plan {
    let mut p = plan.clone();
    if let Some(spec) = p.engines.get_mut(engine) {
        *spec = with_flags(spec, &candidate.args());
    }
    p
}

/// The capacity of `engine` in a search report, as tune keeps it.
pub fn capacity_of(report: &Report, engine: &str) -> Option<TuneCapacity> {
    report.capacity.get(engine).map(|c| TuneCapacity {
        max_load: c.max_load,
        interval: c.interval,
        limited_by: c.limited_by.as_str().to_string(),
        trials: c.trials,
    })
}

/// Runs `plan`'s search on `engine` with `candidate`'s flags into `output`,
/// reusing or resuming what is there for the same plan; an error only when
/// `output` holds a search of another plan (the tune stops: `--fresh`).
pub async fn measure(
    plan: &Plan,
    engine: &str,
    candidate: &Candidate,
    output: &Path,
    verbose: bool,
    ttft_includes_connect: bool,
) -> Result<Measured, String> {
    let cand = candidate_plan(plan, engine, candidate);
    let state = resume_state(&cand, output);
    let mut m = Measured {
        capacity: None,
        failure: None,
        report_path: output.to_path_buf(),
        report: None,
        trials: 0,
        reused: 0,
    };
    let kept = match state {
        Resume::Other(why) => return Err(why),
        Resume::Done(report) => {
            m.reused = trials_of(&report, engine);
            judge_report(&mut m, *report, engine, cand.search.is_some());
            return Ok(m);
        }
        Resume::Partial(n) => n,
        Resume::New => 0,
    };
    let opts = RunOptions {
        output: output.to_path_buf(),
        fresh: kept == 0,
        force: kept == 0,
        progress: false,
        verbose,
        html: false,
        grace: Duration::from_secs(5),
        shard: None,
        load_shard: None,
        ttft_includes_connect,
        // An engine's own `ca_cert` (in the plan) and the machine's variables
        // still apply; `tune` has no `--ca-cert` of its own yet.
        ca_certs: Vec::new(),
    };
    match crate::sweep::run(&cand, &opts).await {
        Err(e) => m.failure = Some(format!("{e:#}")),
        Ok((report, _)) => {
            let trials = trials_of(&report, engine);
            m.reused = kept.min(trials);
            m.trials = trials - m.reused;
            judge_report(&mut m, report, engine, cand.search.is_some());
        }
    }
    Ok(m)
}

/// The trials a finished report took: its search's, else every point's.
fn trials_of(report: &Report, engine: &str) -> u32 {
    report
        .capacity
        .get(engine)
        .map_or_else(|| finished_trials(report), |c| c.trials)
}

/// The capacity (or the failure) a finished search report states; a point run
/// (`search` false: the cost objective's) is kept as its report.
fn judge_report(m: &mut Measured, report: Report, engine: &str, search: bool) {
    if !search {
        m.report = Some(report);
        return;
    }
    match report.capacity.get(engine) {
        None => m.failure = Some("the search stated no capacity".into()),
        Some(c) if c.limited_by == Limit::Other(report::LimitWord::Engine) => {
            m.failure = Some(c.note.clone())
        }
        Some(_) => m.capacity = capacity_of(&report, engine),
    }
    m.report = Some(report);
}
