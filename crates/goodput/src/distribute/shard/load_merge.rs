//! `goodput merge` of load shards (`run --load-shard I/N`): the `N` clients that
//! shared every load level, pooled into one report.
//!
//! Checks first: every input is a load shard report (`run.load_shard`; plan
//! shards and whole runs are refused), all of one profile, one client count and
//! one plan (its fingerprints), every client `0..N` given exactly once (a missing
//! client would leave its share of the load out of every point, so there is no
//! partial merge here).
//!
//! Then every trial's records of the `N` clients are pooled by `(engine, x,
//! trial, attempt)` and the trial's and point's figures derived from the pooled
//! records by `metrics.rs`, the one place they are computed: never averaged per
//! client. A trial counts as complete when it completed on every client. GPU
//! samples, server metrics and the environment are client 0's (the engine is one).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use report::{MergedInfo, MergedShard, Point, Report, RunStatus, TrialInfo};

use super::merge::Merged;
use crate::define::plan::fingerprint_changes;
use crate::drive::record::{read_records, RequestRecord};
use crate::measure::metrics::{point_slo_at, point_summary, trial_metrics, trial_slo};
use crate::UsageError;

type TrialKey = (String, u64, u32, u32);

/// Whether a report is one client's of a load shared by several.
pub fn is_load_shard(r: &Report) -> bool {
    r.run.as_ref().is_some_and(|r| r.load_shard.is_some())
}

/// Reads the load shard reports at `paths` and their records, checks them, and
/// merges them.
pub fn merge_load_files(paths: &[PathBuf]) -> anyhow::Result<Merged> {
    let mut shards = Vec::new();
    for p in paths {
        let r = report::read_report(p).map_err(|e| UsageError(e.to_string()))?;
        shards.push((p.clone(), r));
    }
    let ordered = check(&shards)?;
    let mut records = Vec::new();
    for &k in &ordered {
        let (path, r) = &shards[k];
        let name = r.run.as_ref().and_then(|r| r.requests_file.clone());
        let file = crate::drive::record::named_records_path(path, &name.unwrap_or_default())
            .map_err(UsageError)?;
        let recs = read_records(&file).map_err(|e| {
            UsageError(format!(
                "{}: its requests file cannot be read ({e}); a load shard's figures come \
                 from its records, so it cannot be merged without them",
                path.display()
            ))
        })?;
        records.extend(recs);
    }
    let reports: Vec<&Report> = ordered.iter().map(|&k| &shards[k].1).collect();
    let files: Vec<&Path> = ordered.iter().map(|&k| shards[k].0.as_path()).collect();
    let report = pooled(&reports, &files, &records);
    let order: Vec<&String> = report.load.keys().collect();
    let at = |e: &str| order.iter().position(|n| *n == e).unwrap_or(usize::MAX);
    records.sort_by(|a, b| {
        at(&a.engine)
            .cmp(&at(&b.engine))
            .then(a.x.total_cmp(&b.x))
            .then(a.trial.cmp(&b.trial))
            .then(a.attempt.cmp(&b.attempt))
            .then(a.index.cmp(&b.index))
    });
    let warnings = reports
        .iter()
        .zip(&files)
        .filter(|(r, _)| {
            r.run
                .as_ref()
                .is_some_and(|r| r.status != RunStatus::Complete)
        })
        .map(|(_, f)| {
            format!(
                "{} did not complete: its incomplete trials are partial",
                f.display()
            )
        })
        .collect();
    Ok(Merged {
        report,
        records,
        warnings,
    })
}

/// Checks that the inputs are the `N` clients of one plan, each once; returns
/// their positions in client order.
fn check(shards: &[(PathBuf, Report)]) -> Result<Vec<usize>, UsageError> {
    let (p0, r0) = &shards[0];
    let slice = |p: &Path, r: &Report| {
        r.run
            .as_ref()
            .and_then(|r| r.load_shard.clone())
            .ok_or_else(|| {
                UsageError(format!(
                    "{} is not a load shard report (no `run.load_shard`): reports of \
                 `run --load-shard I/N` merge only with each other",
                    p.display()
                ))
            })
    };
    let count = slice(p0, r0)?.count;
    let fingerprints = |r: &Report| r.run.as_ref().map(|run| run.fingerprints.clone());
    let fp0 = fingerprints(r0).unwrap_or_default();
    let mut by_index: BTreeMap<u32, usize> = BTreeMap::new();
    for (k, (p, r)) in shards.iter().enumerate() {
        let s = slice(p, r)?;
        let here = p.display();
        if r.profile != r0.profile || s.count != count {
            return Err(UsageError(format!(
                "{here} is client {}/{} of `{}`, but {} is one of {count} of `{}`: \
                 load shards of different runs do not merge",
                s.index,
                s.count,
                r.profile,
                p0.display(),
                r0.profile
            )));
        }
        // `slice` found a `run` in every input.
        let changed = fingerprint_changes(&fp0, &fingerprints(r).unwrap_or_default());
        if !changed.is_empty() {
            return Err(UsageError(format!(
                "{here} ran another plan than {} (it differs in: {})",
                p0.display(),
                changed.join(", ")
            )));
        }
        if let Some(&other) = by_index.get(&s.index) {
            return Err(UsageError(format!(
                "load shard {}/{count} is given twice: {} and {here}",
                s.index,
                shards[other].0.display()
            )));
        }
        by_index.insert(s.index, k);
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(UsageError(format!(
            "load shard(s) {} missing: every client's share is part of every point, so \
             all {count} are needed",
            missing.join(", ")
        )));
    }
    Ok(by_index.into_values().collect())
}

/// The merged report: client 0's, with every point derived again from the pooled
/// records.
fn pooled(reports: &[&Report], files: &[&Path], records: &[RequestRecord]) -> Report {
    let base = reports[0];
    let slo = base.slo.clone();
    let mut by_trial: BTreeMap<TrialKey, Vec<RequestRecord>> = BTreeMap::new();
    for r in records {
        let key = (r.engine.clone(), r.x.to_bits(), r.trial, r.attempt);
        by_trial.entry(key).or_default().push(r.clone());
    }
    let mut out = base.clone();
    let open_loop = base
        .run
        .as_ref()
        .is_some_and(|r| r.load_mode != report::LoadMode::Concurrency);
    for (name, e) in &mut out.load {
        for p in &mut e.points {
            *p = pooled_point(
                name,
                p,
                reports,
                &by_trial,
                &slo,
                &base.quantiles,
                open_loop,
            );
        }
    }
    let runs: Vec<&report::RunInfo> = reports.iter().filter_map(|r| r.run.as_ref()).collect();
    let otel = super::merge::merged_otel(&runs);
    if let Some(run) = out.run.as_mut() {
        let count = reports.len() as u32;
        run.load_shard = None;
        run.otel = otel;
        run.status = if reports.iter().all(|r| {
            r.run
                .as_ref()
                .is_some_and(|r| r.status == RunStatus::Complete)
        }) {
            RunStatus::Complete
        } else {
            RunStatus::Partial
        };
        run.notices.push(report::Notice::new(
            report::NoticeKind::Merged,
            format!(
                "merged from {count} clients sharing every load level (run --load-shard I/{count}): \
                 figures are derived from their pooled records"
            ),
        ));
        run.merged = Some(MergedInfo {
            count,
            shards: reports
                .iter()
                .zip(files)
                .enumerate()
                .map(|(i, (r, f))| MergedShard {
                    index: i as u32,
                    file: f.display().to_string(),
                    host: r
                        .environment
                        .as_ref()
                        .and_then(|e| e.host.as_ref())
                        .and_then(|h| h.hostname.clone()),
                    status: r.run.as_ref().map_or(RunStatus::Partial, |r| r.status),
                    engines: r.load.keys().cloned().collect(),
                    points: Vec::new(),
                })
                .collect(),
            missing: Vec::new(),
        });
    }
    out
}

/// The pooled point's energy and cost: client 0's GPU energy of each trial (every
/// client sampled the same GPUs; its note kept) over the pooled trial, at client
/// 0's price.
fn pooled_energy_and_cost(
    out: &mut Point,
    p: &Point,
    metrics: &[crate::measure::metrics::TrialMetrics],
    energies: &[Option<&report::TrialEnergy>],
) {
    let per_trial: Vec<_> = metrics.iter().zip(energies.iter().copied()).collect();
    let usd_per_hour = p.cost.as_ref().map(|c| c.usd_per_hour);
    crate::measure::metrics::cost::fill_point(out, &per_trial, usd_per_hour, true);
    if let Some(e) = out.energy.as_mut() {
        e.note = p.energy.as_ref().and_then(|o| o.note.clone());
    }
}

/// One point of client 0's report, its trials pooled over every client.
fn pooled_point(
    engine: &str,
    p: &Point,
    reports: &[&Report],
    by_trial: &BTreeMap<TrialKey, Vec<RequestRecord>>,
    slo: &report::Slo,
    quantiles: &[f64],
    open_loop: bool,
) -> Point {
    let done_everywhere = |t: &TrialInfo| {
        reports.iter().all(|r| {
            r.load
                .get(engine)
                .and_then(|e| e.points.iter().find(|q| q.x == p.x))
                .is_some_and(|q| {
                    q.trials.iter().any(|u| {
                        u.index == t.index
                            && u.attempt == t.attempt
                            && u.status == RunStatus::Complete
                    })
                })
        })
    };
    let (mut metrics, mut slos, mut trials) = (Vec::new(), Vec::new(), Vec::new());
    let mut energies = Vec::new();
    for t in &p.trials {
        let key = (engine.to_string(), p.x.to_bits(), t.index, t.attempt);
        let recs = by_trial.get(&key).map_or(&[][..], Vec::as_slice);
        let m = trial_metrics(recs, slo);
        let mut info = t.clone();
        info.completed = m.completed;
        info.failed = m.failed;
        info.good = m.good;
        info.duration_s = m.duration_s;
        if done_everywhere(t) {
            slos.push(trial_slo(recs, slo));
            metrics.push(m);
            energies.push(t.energy.as_ref());
        } else {
            info.status = RunStatus::Partial;
        }
        trials.push(info);
    }
    let mut out = point_summary(p.x, &metrics, quantiles, open_loop);
    out.planned_trials = p.planned_trials;
    out.status = Some(if metrics.len() as u32 >= p.planned_trials.unwrap_or(1) {
        RunStatus::Complete
    } else {
        RunStatus::Partial
    });
    out.gpu = p.gpu.clone();
    out.server = p.server.clone();
    out.spec_decode = p.spec_decode.clone();
    out.trials = trials;
    pooled_energy_and_cost(&mut out, p, &metrics, &energies);
    if !slos.is_empty() {
        // Judged at the level the clients' point was read at (a sequential look's).
        let level = p.slo_check.as_ref().and_then(|c| c.level);
        let z = level.map_or(report::stats::Z95, report::stats::sequential::z_of);
        let (attainment, check) = point_slo_at(&slos, slo, z);
        out.attainment = Some(attainment);
        out.slo_check = Some(check);
    }
    out
}
