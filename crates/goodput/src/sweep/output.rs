//! What is already at the output, and whether goodput may write there.
//!
//! Measured data is never dropped without being asked:
//! - nothing there: a new run;
//! - an incomplete report of the same plan (the fingerprints in `run.fingerprints`
//!   match): resumed, its complete trials kept;
//! - an incomplete report of another plan, or one from before fingerprints: refused,
//!   naming what differs; `--fresh` starts over;
//! - a complete report, a report goodput did not run (the reference, say), or a
//!   file that is not a report: refused; `--force` overwrites;
//! - a requests file (`.requests.jsonl`) without its report, or an `.html` page that
//!   goodput did not write: refused; `--force` overwrites.

use std::path::Path;

use report::{Report, RunInfo, RunStatus};

use super::Sweep;
use crate::define::options::RunOptions;
use crate::define::plan::{fingerprint_changes, Plan};
use crate::drive::record::{read_records, RequestRecord};
use crate::render::text::count;
use crate::UsageError;

pub use crate::render::html::HTML_GENERATOR;

/// The error for a file at the output that goodput may overwrite only with `flag`.
fn taken(path: &Path, what: &str, flag: &str) -> anyhow::Error {
    UsageError(format!(
        "{} {what}; goodput does not overwrite it without being asked: choose another output with -o, or pass {flag}",
        path.display()
    ))
    .into()
}

/// Decides what the run starts from: an empty sweep, or the complete trials of an
/// incomplete run of the same plan (with their records). Errors when the output
/// holds data that must not be overwritten.
pub(super) fn prepare(
    plan: &Plan,
    opts: &RunOptions,
    rec_path: &Path,
) -> anyhow::Result<(Sweep, Vec<RequestRecord>)> {
    let output = &opts.output;
    let fresh = || Ok((Sweep::default(), Vec::new()));
    check_free(opts, rec_path)?;
    if opts.force || !output.exists() {
        return fresh();
    }
    let old = report::read_report(output).map_err(|e| {
        UsageError(format!(
            "{e}; goodput does not overwrite it: choose another output with -o, or pass --force"
        ))
    })?;
    let info = check_incomplete(output, &old)?;
    if opts.fresh {
        return fresh();
    }
    check_same_plan(plan, opts, &old, info)?;
    let records = if rec_path.exists() {
        // A corrupt requests file at the output is bad input (exit 2).
        read_records(rec_path).map_err(UsageError)?
    } else {
        Vec::new()
    };
    Ok(Sweep::restore(plan, &old, records))
}

/// The output is a file name, and (unless `--force`) neither an HTML page goodput
/// did not write nor a requests file without its report stands in the way.
fn check_free(opts: &RunOptions, rec_path: &Path) -> anyhow::Result<()> {
    let output = &opts.output;
    // A device, a FIFO or a socket is never a report, and a rename over it would
    // replace the node itself: refused even with --force.
    if output.exists() && !output.is_dir() && !output.is_file() {
        return Err(UsageError(format!(
            "{} is not a regular file (a device, a FIFO or a socket): give the report's file name, e.g. -o goodput-report.json",
            output.display()
        ))
        .into());
    }
    if output.is_dir() {
        return Err(UsageError(format!(
            "{} is a directory: give the report's file name, e.g. -o {}",
            output.display(),
            output.join("goodput-report.json").display()
        ))
        .into());
    }
    if opts.force {
        return Ok(());
    }
    let html = output.with_extension("html");
    if opts.html && html.exists() && !written_by_goodput(&html) {
        return Err(taken(
            &html,
            "exists and was not written by goodput",
            "--force",
        ));
    }
    if !output.exists() && rec_path.exists() {
        return Err(taken(
            rec_path,
            "exists without its report (records of another run?)",
            "--force",
        ));
    }
    Ok(())
}

/// The report at the output is an incomplete run of goodput's: its `run` section.
fn check_incomplete<'a>(output: &Path, old: &'a Report) -> anyhow::Result<&'a RunInfo> {
    let Some(info) = &old.run else {
        return Err(taken(
            output,
            "holds a report that goodput did not run (no `run` section)",
            "--force",
        ));
    };
    if info.status == RunStatus::Complete {
        let trials: usize = old
            .load
            .values()
            .flat_map(|e| &e.points)
            .map(|p| p.trials.len().max(p.completed.len()))
            .sum();
        return Err(taken(
            output,
            &format!(
                "holds a complete run of `{}` ({}, {})",
                old.profile,
                count(old.load.len() as u64, "engine"),
                count(trials as u64, "trial")
            ),
            "--force",
        ));
    }
    Ok(info)
}

/// The incomplete run at the output is of this plan (the same fingerprints, shard
/// and load shard), so its trials may be kept.
fn check_same_plan(
    plan: &Plan,
    opts: &RunOptions,
    old: &Report,
    info: &RunInfo,
) -> anyhow::Result<()> {
    let mut changed = if old.profile != plan.name {
        vec!["profile name".to_string()]
    } else {
        fingerprint_changes(&info.fingerprints, &plan.fingerprints())
    };
    // A shard resumes only its own slice of the same whole plan.
    let slice = |s: &Option<report::ShardInfo>| {
        s.as_ref()
            .map(|s| (s.index, s.count, s.plan_fingerprints.clone()))
    };
    if slice(&info.shard) != slice(&opts.shard) {
        changed.push("shard".to_string());
    }
    let load_slice = opts.load_shard.as_ref().map(|l| (l.index, l.count));
    if info.load_shard.as_ref().map(|l| (l.index, l.count)) != load_slice {
        changed.push("load shard".to_string());
    }
    if changed.is_empty() {
        return Ok(());
    }
    let why = if info.fingerprints.is_empty() {
        "holds an incomplete run without a plan fingerprint (an older goodput), so it cannot be resumed safely".to_string()
    } else {
        format!(
            "holds an incomplete run of another plan (it differs in: {}), whose trials must not be mixed with this one's",
            changed.join(", ")
        )
    };
    Err(taken(&opts.output, &why, "--fresh to start over"))
}

/// Whether goodput wrote the HTML page: its generator marker is in the first 4 KiB.
fn written_by_goodput(html: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(html)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .is_ok()
        && String::from_utf8_lossy(&head).contains(HTML_GENERATOR)
}
