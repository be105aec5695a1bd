//! A report to compare, with its requests when the file beside it is there.

use std::path::{Path, PathBuf};

use report::Report;

use super::samples::{slo_spec, Requests};
use crate::drive::record::{read_records, records_path};

/// One report to compare: its label (the file), the report, and its requests
/// grouped by point, or why they are missing.
#[derive(Debug)]
pub struct Input {
    /// How the report is named in the output (its path).
    pub label: String,
    /// The report.
    pub report: Report,
    /// Its requests, judged against its SLO; `None` when missing.
    pub requests: Option<Requests>,
    /// Why the requests are missing (`None` when they are at hand).
    pub missing: Option<String>,
}

impl Input {
    /// A report without its requests (`why`: what to say about that).
    pub fn summaries_only(
        label: impl Into<String>,
        report: Report,
        why: impl Into<String>,
    ) -> Input {
        Input {
            label: label.into(),
            report,
            requests: None,
            missing: Some(why.into()),
        }
    }

    /// A report with its records.
    pub fn with_records(
        label: impl Into<String>,
        report: Report,
        records: &[crate::drive::record::RequestRecord],
    ) -> Input {
        let requests = Requests::group(records, &slo_spec(&report.slo));
        Input {
            label: label.into(),
            report,
            requests: Some(requests),
            missing: None,
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

/// Reads the report at `path` and, when it is there, its requests file.
pub fn load(path: &Path) -> anyhow::Result<Input> {
    // A goodput report, or a peer's result file converted (vLLM, GuideLLM, AIPerf).
    let report = crate::measure::peers::read_noting(path)?;
    let label = path.display().to_string();
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
