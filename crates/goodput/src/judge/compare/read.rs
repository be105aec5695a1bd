//! A report to compare; a report written before trials stored their figures gets
//! them from its requests file when that is there.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use report::Report;

use super::samples::{fill_figures, has_figures};
use crate::drive::record::{read_records, records_path, RequestRecord};

/// One report to compare: its label (the file), the report (its trials' figures
/// filled in from its requests where it had none), and what is missing.
#[derive(Debug)]
pub struct Input {
    /// How the report is named in the output (its path).
    pub label: String,
    /// The report.
    pub report: Report,
    /// Why some rows can only use the summaries over trials (no figures stored and
    /// no requests file); `None` when every trial's figures are at hand.
    pub missing: Option<String>,
}

impl Input {
    /// A report as it is (`why`: what to say when it stores no figures).
    pub fn summaries_only(
        label: impl Into<String>,
        report: Report,
        why: impl Into<String>,
    ) -> Input {
        let missing = (!has_figures(&report)).then(|| why.into());
        Input {
            label: label.into(),
            report,
            missing,
        }
    }

    /// A report with its records: the figures it lacks computed from them.
    pub fn with_records(
        label: impl Into<String>,
        mut report: Report,
        records: &[RequestRecord],
    ) -> Input {
        if !has_figures(&report) {
            fill_figures(&mut report, records);
        }
        let missing = (!has_figures(&report))
            .then(|| "some trials have neither stored figures nor requests".to_string());
        Input {
            label: label.into(),
            report,
            missing,
        }
    }
}

/// The requests file of the report at `path`: the one its run names (beside the
/// report), else `<report>.requests.jsonl`.
pub fn requests_file(path: &Path, report: &Report) -> PathBuf {
    match report.run.as_ref().and_then(|r| r.requests_file.as_deref()) {
        Some(name) => path.with_file_name(Path::new(name).file_name().unwrap_or(name.as_ref())),
        None => records_path(path),
    }
}

/// Reads the report at `path` and, when it stores no per-trial figures and its
/// requests file is there, its requests.
pub fn read(path: &Path) -> anyhow::Result<Input> {
    // A goodput report, or a peer's result file converted (vLLM, GuideLLM, AIPerf).
    let report = crate::import::read_noting(path)?;
    let label = path.display().to_string();
    if has_figures(&report) {
        return Ok(Input::summaries_only(label, report, ""));
    }
    let file = requests_file(path, &report);
    if !file.exists() {
        let why = format!("no requests file ({} not found)", file.display());
        return Ok(Input::summaries_only(label, report, why));
    }
    // A corrupt requests file is bad input (exit 2), not a report without records.
    let records = read_records(&file).map_err(crate::UsageError)?;
    if records.is_empty() {
        let why = format!("{} holds no requests", file.display());
        return Ok(Input::summaries_only(label, report, why));
    }
    check_records(&file, &report, &records).map_err(crate::UsageError)?;
    Ok(Input::with_records(label, report, &records))
}

/// The records agree with the report they are read for: no request twice (the same
/// engine, load level, trial, run of the trial and index), and each trial the report
/// lists holds as many successful and failed requests as the report counts.
fn check_records(file: &Path, report: &Report, records: &[RequestRecord]) -> Result<(), String> {
    let name = file.display();
    let mut seen = HashSet::new();
    // (engine, x, trial, attempt) -> (completed, failed)
    let mut counts: HashMap<(&str, u64, u32, u32), (u64, u64)> = HashMap::new();
    for r in records {
        if !seen.insert((
            r.engine.as_str(),
            r.x.to_bits(),
            r.trial,
            r.attempt,
            r.index,
        )) {
            return Err(format!(
                "{name}: request {} of engine `{}` at x={} trial {} is recorded more than once: \
                 the requests file does not belong to this report as it is (records appended twice?)",
                r.index, r.engine, r.x, r.trial
            ));
        }
        let c = counts
            .entry((r.engine.as_str(), r.x.to_bits(), r.trial, r.attempt))
            .or_default();
        // A success is what the metrics count as one: ok, with content.
        if r.ok() && !r.chunks.is_empty() {
            c.0 += 1;
        } else {
            c.1 += 1;
        }
    }
    for (engine, e) in &report.load {
        for p in &e.points {
            for t in &p.trials {
                let key = (engine.as_str(), p.x.to_bits(), t.index, t.attempt);
                let Some(&(completed, failed)) = counts.get(&key) else {
                    continue;
                };
                if (completed, failed) != (t.completed, t.failed) {
                    return Err(format!(
                        "{name}: engine `{engine}` at x={} trial {} holds {completed} successful and \
                         {failed} failed requests, but the report counts {} and {}: the requests \
                         file does not belong to this report",
                        p.x, t.index, t.completed, t.failed
                    ));
                }
            }
        }
    }
    Ok(())
}
