//! A report to compare; a report written before trials stored their figures gets
//! them from its requests file when that is there.

use std::path::{Path, PathBuf};

use report::Report;

use super::samples::{fill_figures, has_figures};
use crate::drive::record::{read_records, records_path};

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
        records: &[crate::drive::record::RequestRecord],
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
pub fn load(path: &Path) -> anyhow::Result<Input> {
    // A goodput report, or a peer's result file converted (vLLM, GuideLLM, AIPerf).
    let report = crate::measure::peers::read_noting(path)?;
    let label = path.display().to_string();
    if has_figures(&report) {
        return Ok(Input::summaries_only(label, report, ""));
    }
    let file = requests_file(path, &report);
    if !file.exists() {
        let why = format!("no requests file ({} not found)", file.display());
        return Ok(Input::summaries_only(label, report, why));
    }
    Ok(match read_records(&file) {
        Ok(records) if !records.is_empty() => Input::with_records(label, report, &records),
        Ok(_) => Input::summaries_only(
            label,
            report,
            format!("{} holds no requests", file.display()),
        ),
        Err(e) => Input::summaries_only(
            label,
            report,
            format!("its requests file could not be read ({e})"),
        ),
    })
}
