//! `goodput merge`: shard reports of one plan back into one report, of the shape a
//! single machine's run has.
//!
//! Checks first: every input is a shard report (`run.shard`), all name the same
//! plan (profile, shard count, engines, load levels and the whole plan's
//! fingerprints) and hold the slice their index says; no slice is given twice.
//! Slices not given are allowed (a partial merge): they are listed in
//! `run.merged.missing`, in a notice, and their engines appear as `not_run`, so the
//! warnings and the verdict say what is missing.
//!
//! Then per engine, in plan order: its points from every shard that ran some of
//! them, in order of load; its environment from the shard that ran it, with that
//! shard's host and GPUs (`environment.engines.<e>.host`, `gpus`), its log file
//! relative to the merged report. Request records are concatenated in plan order
//! (engine, level, trial), as one machine would have written them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use report::{
    EngineFailure, EngineResult, MergedInfo, MergedShard, Report, RunInfo, RunStatus, ShardInfo,
};

use crate::define::plan::fingerprint_changes;
use crate::drive::record::{read_records, RequestRecord};
use crate::UsageError;

/// One shard report as given to `goodput merge`.
pub struct ShardFile {
    /// The path as given.
    pub path: PathBuf,
    /// The report read from it.
    pub report: Report,
}

/// A merged report and its records.
pub struct Merged {
    /// The merged report.
    pub report: Report,
    /// Every request record of the merged shards, in plan order.
    pub records: Vec<RequestRecord>,
    /// What the reader must be told: missing slices, shards still running or partial.
    pub warnings: Vec<String>,
}

/// Reads the shard reports at `paths` (and their request records) and merges them
/// for a report to be written at `output`.
pub fn merge_files(paths: &[PathBuf], output: &Path) -> anyhow::Result<Merged> {
    let mut shards = Vec::new();
    for p in paths {
        let report = report::read_report(p).map_err(|e| UsageError(e.to_string()))?;
        shards.push(ShardFile {
            path: p.clone(),
            report,
        });
    }
    let mut merged = merge(&shards, output)?;
    let mut records: Vec<RequestRecord> = Vec::new();
    for s in &shards {
        let Some(name) = s.report.run.as_ref().and_then(|r| r.requests_file.clone()) else {
            continue;
        };
        let path = crate::drive::record::named_records_path(&s.path, &name).map_err(UsageError)?;
        if !path.exists() {
            merged.warnings.push(format!(
                "{}: its requests file {} is missing: the merged requests file lacks its records",
                s.path.display(),
                path.display()
            ));
            continue;
        }
        records.extend(read_records(&path).map_err(UsageError)?);
    }
    let plan = &shard_of(&shards[0])?.clone();
    sort_records(&mut records, plan);
    merged.records = records;
    Ok(merged)
}

fn shard_of(s: &ShardFile) -> Result<&ShardInfo, UsageError> {
    s.report
        .run
        .as_ref()
        .and_then(|r| r.shard.as_ref())
        .ok_or_else(|| {
            UsageError(format!(
                "{} is not a shard report (it has no `run.shard`): only reports of `goodput run --shard I/N` can be merged",
                s.path.display()
            ))
        })
}

/// Merges shard reports (already read) for a report to be written at `output`;
/// records are left to [`merge_files`].
pub fn merge(shards: &[ShardFile], output: &Path) -> Result<Merged, UsageError> {
    let Some(first) = shards.first() else {
        return Err(UsageError("merge: no shard report given".into()));
    };
    let plan = shard_of(first)?;
    let by_index = check(shards, plan)?;
    let missing: Vec<u32> = (0..plan.count)
        .filter(|i| !by_index.contains_key(i))
        .collect();
    let mut warnings = Vec::new();
    if !missing.is_empty() {
        warnings.push(format!(
            "partial merge: {} of {} shards missing ({}): their slices are not in the report",
            missing.len(),
            plan.count,
            missing
                .iter()
                .map(|i| describe_slice(plan, *i))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let ordered: Vec<&ShardFile> = by_index.values().map(|&k| &shards[k]).collect();
    for s in &ordered {
        // Every input has a `run.shard` (`shard_of`).
        let Some(run) = s.report.run.as_ref() else {
            continue;
        };
        if run.status != RunStatus::Complete {
            warnings.push(format!(
                "{} (shard {}) is {}{}",
                s.path.display(),
                run.shard.as_ref().map_or(0, |x| x.index),
                status_name(run.status),
                run.reason
                    .as_ref()
                    .map_or(String::new(), |r| format!(": {r}"))
            ));
        }
    }
    let report = merged_report(plan, &ordered, &missing, &warnings, output);
    Ok(Merged {
        report,
        records: Vec::new(),
        warnings,
    })
}

fn status_name(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Complete => "complete",
        RunStatus::Partial => "partial",
        RunStatus::Running => "still running (or was killed)",
    }
}

/// The engines and load levels shard `index` of the plan runs (all levels when it
/// holds whole engines).
fn slice_of(plan: &ShardInfo, index: u32) -> (Vec<String>, Vec<f64>, bool) {
    let (engines, points) = super::assignment(
        plan.plan_engines.len(),
        plan.plan_points.len(),
        index,
        plan.count,
    );
    let names = engines
        .iter()
        .filter_map(|&e| plan.plan_engines.get(e).cloned())
        .collect();
    match points {
        None => (names, plan.plan_points.clone(), true),
        Some(ps) => (
            names,
            ps.iter()
                .filter_map(|&p| plan.plan_points.get(p).copied())
                .collect(),
            false,
        ),
    }
}

/// What shard `index` would have run, for messages.
fn describe_slice(plan: &ShardInfo, index: u32) -> String {
    let (names, points, whole) = slice_of(plan, index);
    if whole {
        format!("shard {index}: {}", names.join(", "))
    } else {
        let xs: Vec<String> = points.iter().map(f64::to_string).collect();
        format!("shard {index}: {} at x={}", names.join(", "), xs.join(","))
    }
}

/// Checks that the shards belong to one plan and hold the slices their indexes
/// say, once each; returns their positions by shard index.
fn check(shards: &[ShardFile], plan: &ShardInfo) -> Result<BTreeMap<u32, usize>, UsageError> {
    let name0 = shards[0].path.display().to_string();
    let mut by_index: BTreeMap<u32, usize> = BTreeMap::new();
    for (k, s) in shards.iter().enumerate() {
        let sh = shard_of(s)?;
        let here = s.path.display();
        let most = plan.plan_engines.len() * plan.plan_points.len().max(1);
        if sh.count == 0 || sh.index >= sh.count || sh.count as usize > most {
            return Err(UsageError(format!(
                "{here}: `run.shard` says shard {}/{}, which no plan of {} engine(s) and {} load level(s) has",
                sh.index,
                sh.count,
                plan.plan_engines.len(),
                plan.plan_points.len()
            )));
        }
        let mut differs = Vec::new();
        if s.report.profile != shards[0].report.profile {
            differs.push("profile name".to_string());
        }
        if sh.count != plan.count {
            differs.push(format!("shard count ({} against {})", sh.count, plan.count));
        }
        if sh.plan_engines != plan.plan_engines {
            differs.push("engines".into());
        }
        if sh.plan_points != plan.plan_points {
            differs.push("load levels".into());
        }
        let fp = fingerprint_changes(&plan.plan_fingerprints, &sh.plan_fingerprints);
        differs.extend(fp);
        if !differs.is_empty() {
            return Err(UsageError(format!(
                "{here} is a shard of another plan than {name0} (it differs in: {}): shards of different plans cannot be merged",
                differs.join(", ")
            )));
        }
        let (want_engines, want_points, _) = slice_of(plan, sh.index);
        if sh.engines != want_engines || sh.points != want_points {
            return Err(UsageError(format!(
                "{here}: shard {}/{} holds engines {:?} at {:?}, not the slice goodput cuts for that index ({})",
                sh.index,
                sh.count,
                sh.engines,
                sh.points,
                describe_slice(plan, sh.index)
            )));
        }
        if let Some(&other) = by_index.get(&sh.index) {
            return Err(UsageError(format!(
                "shard {}/{} is given twice: {} and {}; keep one",
                sh.index,
                sh.count,
                shards[other].path.display(),
                here
            )));
        }
        by_index.insert(sh.index, k);
    }
    Ok(by_index)
}

/// The merged report from shards in index order.
fn merged_report(
    plan: &ShardInfo,
    ordered: &[&ShardFile],
    missing: &[u32],
    warnings: &[String],
    output: &Path,
) -> Report {
    let base = &ordered[0].report;
    let out_dir = output.parent().unwrap_or(Path::new(""));
    let mut load = IndexMap::new();
    let mut engines_env = IndexMap::new();
    let mut capacity = IndexMap::new();
    for name in &plan.plan_engines {
        let mut result: Option<EngineResult> = None;
        for s in ordered {
            let Some(e) = s.report.load.get(name) else {
                continue;
            };
            match &mut result {
                None => result = Some(e.clone()),
                Some(r) => absorb(r, e),
            }
            if let Some(c) = s.report.capacity.get(name) {
                capacity.entry(name.clone()).or_insert_with(|| c.clone());
            }
            let env = s.report.environment.as_ref();
            if let Some(mut ee) = env.and_then(|v| v.engines.get(name)).cloned() {
                if engines_env.contains_key(name) {
                    continue;
                }
                ee.host = env.and_then(|v| v.host.clone());
                ee.gpus = env.map(|v| v.gpus.clone()).unwrap_or_default();
                ee.log_file = ee
                    .log_file
                    .map(|f| relative_to(out_dir, &s.path.with_file_name(f)));
                engines_env.insert(name.clone(), ee);
            }
        }
        if let Some(mut r) = result {
            r.points.sort_by(|a, b| a.x.total_cmp(&b.x));
            load.insert(name.clone(), r);
        } else if let Some(i) = missing
            .iter()
            .find(|&&i| slice_of(plan, i).0.contains(name))
        {
            load.insert(name.clone(), not_merged(name, *i, plan.count));
        }
    }
    let mut environment = base.environment.clone().unwrap_or_default();
    environment.engines = engines_env;
    let run = merged_run(plan, ordered, missing, warnings, output);
    Report {
        profile: base.profile.clone(),
        slo: base.slo.clone(),
        environment: Some(environment),
        quantiles: base.quantiles.clone(),
        load,
        run: Some(run),
        capacity,
        extra: base.extra.clone(),
    }
}

/// Adds another shard's part of one engine (other load levels) to `into`.
fn absorb(into: &mut EngineResult, e: &EngineResult) {
    into.points.extend(e.points.iter().cloned());
    into.kv_pool_tokens = into.kv_pool_tokens.or(e.kv_pool_tokens);
    if into.kv_pool_source.is_none() {
        into.kv_pool_source = e.kv_pool_source.clone();
    }
    if into.error.is_none() {
        into.error = e.error.clone();
    }
    into.restarts.extend(e.restarts.iter().cloned());
}

/// An engine whose shard was not merged: listed as not run, as an interrupted run
/// lists the engines it never reached.
fn not_merged(name: &str, index: u32, count: u32) -> EngineResult {
    EngineResult {
        kv_pool_tokens: None,
        points: Vec::new(),
        kv_pool_source: None,
        error: Some(EngineFailure {
            kind: report::FailureKind::NotRun,
            message: format!(
                "not run: {name} is in shard {index}/{count}, whose report was not merged"
            ),
            ..Default::default()
        }),
        restarts: Vec::new(),
        extra: Default::default(),
    }
}

fn merged_run(
    plan: &ShardInfo,
    ordered: &[&ShardFile],
    missing: &[u32],
    warnings: &[String],
    output: &Path,
) -> RunInfo {
    let runs: Vec<&RunInfo> = ordered
        .iter()
        .filter_map(|s| s.report.run.as_ref())
        .collect();
    let mut run = runs[0].clone();
    run.otel = merged_otel(&runs);
    let all_complete = missing.is_empty() && runs.iter().all(|r| r.status == RunStatus::Complete);
    run.status = if all_complete {
        RunStatus::Complete
    } else {
        RunStatus::Partial
    };
    run.reason = (!all_complete).then(|| warnings.join("; "));
    run.requests_file = Some(
        crate::drive::record::records_path(output)
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
    );
    run.started_unix_s = runs
        .iter()
        .filter_map(|r| r.started_unix_s)
        .reduce(f64::min);
    run.updated_unix_s = runs
        .iter()
        .filter_map(|r| r.updated_unix_s)
        .reduce(f64::max);
    run.fingerprints = plan.plan_fingerprints.clone();
    // Interleaved only if every shard interleaved all the plan's engines; engines
    // split over shards ran apart (on other machines, at other times).
    run.interleaved = (plan.plan_engines.len() > 1).then(|| {
        runs.iter().all(|r| {
            r.interleaved == Some(true)
                && r.shard
                    .as_ref()
                    .is_some_and(|s| s.engines.len() == plan.plan_engines.len())
        })
    });
    run.notices = Vec::new();
    let partial = warnings
        .iter()
        .filter(|w| w.starts_with("partial merge"))
        .map(|w| report::Notice::new(report::NoticeKind::Merged, w.clone()));
    for n in partial.chain(runs.iter().flat_map(|r| r.notices.iter().cloned())) {
        if !run.notices.contains(&n) {
            run.notices.push(n);
        }
    }
    run.shard = None;
    run.merged = Some(MergedInfo {
        count: plan.count,
        shards: ordered
            .iter()
            // Every input has a `run.shard` (`shard_of`).
            .filter_map(|s| {
                let r = s.report.run.as_ref()?;
                let sh = r.shard.as_ref()?;
                Some(MergedShard {
                    index: sh.index,
                    file: relative_to(output.parent().unwrap_or(Path::new("")), &s.path),
                    host: s
                        .report
                        .environment
                        .as_ref()
                        .and_then(|e| e.host.as_ref())
                        .and_then(|h| h.hostname.clone()),
                    status: r.status,
                    engines: sh.engines.clone(),
                    points: if sh.points == plan.plan_points {
                        Vec::new()
                    } else {
                        sh.points.clone()
                    },
                })
            })
            .collect(),
        missing: missing.to_vec(),
    });
    run
}

/// `path` relative to `dir` when it lies below it, else as absolute as it can be made.
fn relative_to(dir: &Path, path: &Path) -> String {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (d, p) = (abs(dir), abs(path));
    p.strip_prefix(&d)
        .map(Path::to_path_buf)
        .unwrap_or(p)
        .display()
        .to_string()
}

/// Plan order: engine, then load level, then trial and attempt; a trial's own
/// records keep their order.
fn sort_records(records: &mut [RequestRecord], plan: &ShardInfo) {
    let engine = |name: &str| {
        plan.plan_engines
            .iter()
            .position(|e| e == name)
            .unwrap_or(usize::MAX)
    };
    records.sort_by(|a, b| {
        engine(&a.engine)
            .cmp(&engine(&b.engine))
            .then(a.x.total_cmp(&b.x))
            .then(a.trial.cmp(&b.trial))
            .then(a.attempt.cmp(&b.attempt))
    });
}

/// What `goodput merge` was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeOptions {
    /// Shard reports, in any order (at least one).
    pub shards: Vec<PathBuf>,
    /// The merged report.
    pub output: PathBuf,
    /// Overwrite an existing report at the output.
    pub force: bool,
    /// Write the HTML page beside the report.
    pub html: bool,
}

/// `goodput merge SHARD.json... -o REPORT.json`: writes the merged report, its
/// requests file and HTML page; exit 0, or 3 when the merge is partial (slices
/// missing, or shards that did not complete).
pub fn command(args: &MergeOptions) -> anyhow::Result<i32> {
    let out = &args.output;
    let requests = crate::drive::record::records_path(out);
    for p in [out, &requests] {
        if p.exists() && !args.force {
            return Err(UsageError(format!(
                "{} exists; goodput merge does not overwrite it without being asked: choose another output with -o, or pass --force",
                p.display()
            ))
            .into());
        }
    }
    let Some(first) = args.shards.first() else {
        return Err(UsageError("goodput merge: no shard report given".into()).into());
    };
    let first = report::read_report(first).map_err(|e| UsageError(e.to_string()))?;
    let merged = if super::load_merge::is_load_shard(&first) {
        super::load_merge::merge_load_files(&args.shards)?
    } else {
        merge_files(&args.shards, out)?
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let text = crate::redact::jsonl(&merged.records)?;
    crate::redact::write_file(&requests, &text)?;
    crate::redact::write_report(out, &merged.report)?;
    if args.html {
        let html = out.with_extension("html");
        crate::redact::write_html(&html, &merged.report)?;
    }
    for w in &merged.warnings {
        eprintln!("warning: {}", crate::term::safe(w));
    }
    let info = merged.report.run.as_ref().and_then(|r| r.merged.as_ref());
    eprintln!(
        "merged {} of {} shards into {} ({} requests in {})",
        info.map_or(0, |m| m.shards.len()),
        info.map_or(0, |m| m.count),
        out.display(),
        merged.records.len(),
        requests.display()
    );
    let complete = merged
        .report
        .run
        .as_ref()
        .is_some_and(|r| r.status == RunStatus::Complete);
    Ok(if complete { 0 } else { 3 })
}

/// The OpenTelemetry export of merged reports: every shard's spans, exported,
/// dropped and failed counts summed; the first shard's endpoint and protocol, with
/// the others' endpoints added when they differ. `None` when no shard exported.
pub(super) fn merged_otel(runs: &[&RunInfo]) -> Option<report::OtelExport> {
    let mut exports = runs.iter().filter_map(|r| r.otel.as_ref());
    let mut out = exports.next()?.clone();
    for o in exports {
        out.spans += o.spans;
        out.exported += o.exported;
        out.dropped += o.dropped;
        out.failed += o.failed;
        if !out.endpoint.split(", ").any(|e| e == o.endpoint) {
            out.endpoint = format!("{}, {}", out.endpoint, o.endpoint);
        }
    }
    Some(out)
}
