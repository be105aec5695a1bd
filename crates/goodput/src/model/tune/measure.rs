//! One candidate measured for real: the plan's capacity search, through the one
//! runner (`sweep::run`), on the engine launched with the candidate's flags.
//! Its report is an ordinary search report; a candidate that fails to start or to
//! serve is recorded with its failure, never fatal.

use std::path::{Path, PathBuf};
use std::time::Duration;

use report::{Limit, Report, TuneCapacity};

use crate::define::options::RunOptions;
use crate::define::plan::Plan;
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
    /// Real trials it took.
    pub trials: u32,
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

/// Runs `plan`'s search on `engine` with `candidate`'s flags into `output`.
pub async fn measure(
    plan: &Plan,
    engine: &str,
    candidate: &Candidate,
    output: &Path,
    verbose: bool,
    ttft_includes_connect: bool,
) -> Measured {
    let cand = candidate_plan(plan, engine, candidate);
    let opts = RunOptions {
        output: output.to_path_buf(),
        fresh: true,
        force: true,
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
    let mut m = Measured {
        capacity: None,
        failure: None,
        report_path: output.to_path_buf(),
        report: None,
        trials: 0,
    };
    match crate::sweep::run(&cand, &opts).await {
        Err(e) => m.failure = Some(format!("{e:#}")),
        Ok((report, _)) => {
            let c = report.capacity.get(engine);
            m.trials = c.map_or(0, |c| c.trials);
            match c {
                None => m.failure = Some("the search stated no capacity".into()),
                Some(c) if c.limited_by == Limit::Other(report::LimitWord::Engine) => {
                    m.failure = Some(c.note.clone())
                }
                Some(_) => m.capacity = capacity_of(&report, engine),
            }
            m.report = Some(report);
        }
    }
    m
}
