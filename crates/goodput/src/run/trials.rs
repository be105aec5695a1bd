//! One engine's share of the sweep: every load level and trial, with the engine's
//! death detected after each trial and, when the profile allows, a bounded number
//! of recorded restarts.

use anyhow::Context;
use report::{Notice, NoticeKind, RunStatus, TrialInfo};

use super::gpu_release::SweepEngine;
use super::state::PointKey;
use super::{Ctx, TrialState};
use crate::client::Target;
use crate::engine::{EngineContext, EngineHandle};
use crate::load::Trial;
use crate::metrics::{trial_metrics, trial_slo, TrialMetrics};
use crate::plan::Plan;
use crate::profile::EngineSpec;
use crate::record::RequestRecord;
use crate::shard::load;
use crate::telemetry;
use crate::workload::Builder;

mod restart;
mod send;
mod setup;

use restart::{death, restart};
use send::{measure, preconnect, shard_requests, spec_decode, trial_of, warm_up, TrialLoad};
use setup::{note_connect_in_ttft, note_sources, request_builder, sample_sharegpt, target_of};

/// Runs every load level and trial of one engine; returns the handle to stop (none
/// when a restart failed: the dead engine was stopped already).
pub(crate) async fn run_engine(
    ctx: &mut Ctx<'_>,
    name: &str,
    spec: &EngineSpec,
    engine_ctx: &EngineContext,
    mut handle: SweepEngine,
    tel: &telemetry::Telemetry,
) -> anyhow::Result<Option<SweepEngine>> {
    note_sources(ctx, name, &handle, tel);
    let builder = request_builder(ctx, name, &handle).await;
    if !sample_sharegpt(ctx, name, &handle).await? {
        return Ok(Some(handle));
    }
    note_connect_in_ttft(ctx);
    let mut target = target_of(ctx, &handle);
    let mut restarts = 0u32;
    let mut attempt = 0u32;
    let mut last: Option<(u64, u32)> = None;
    while !ctx.stopped() {
        let Some((level, x, t)) = next_trial(ctx, name) else {
            break;
        };
        // A trial that neither completed nor killed the engine is not run again
        // (that would never end); the report shows it as partial.
        if last == Some((x.to_bits(), t)) && attempt == 0 {
            ctx.info.notices.push(Notice::engine(
                NoticeKind::NotRetried,
                name,
                format!(
                    "{name}: trial {} at x={x} did not complete and was not retried",
                    t + 1
                ),
            ));
            break;
        }
        last = Some((x.to_bits(), t));
        let at = At {
            name,
            x,
            t,
            attempt,
            lane: level << 32 | t as u64,
        };
        let Some(status) = run_one(ctx, &at, &mut handle, tel, &builder, &target).await? else {
            attempt = 0;
            continue;
        };
        let failure = death(ctx, &handle, &at, status);
        if restarts >= spec.max_restarts {
            ctx.sweep.engine(name).error = Some(failure);
            ctx.save()?;
            break;
        }
        // A restart the profile allows: recorded, and the trial runs again.
        restarts += 1;
        attempt += 1;
        let Some(h) = restart(ctx, name, spec, engine_ctx, handle, failure, restarts).await? else {
            return Ok(None);
        };
        handle = h;
        target = target_of(ctx, &handle);
        ctx.save()?;
    }
    Ok(Some(handle))
}

/// Which trial runs: engine, load level, trial index, restart attempt, and the
/// trial's lane of the seeded random draws (from the load level's number and the
/// trial index, so the requests are the same on every engine).
struct At<'a> {
    name: &'a str,
    x: f64,
    t: u32,
    attempt: u32,
    lane: u64,
}

/// The next trial to run on `name`: `(level, x, trial index)`, or `None` when the
/// engine's share is done. A plain run takes the plan's load levels in order; a
/// search asks [`crate::search::next_step`] from what is measured so far, so a
/// resumed search continues where it stopped. `level` numbers the load level for
/// the request seeds (the grid's index, or for a search the load itself).
fn next_trial(ctx: &Ctx<'_>, name: &str) -> Option<(u64, f64, u32)> {
    let plan = ctx.plan;
    let key = |x| PointKey::new(plan.mode, x);
    let first_missing =
        |x: f64, trials: u32| (0..trials).find(|&t| !ctx.sweep.is_complete(name, key(x), t));
    // A shard's levels keep the whole plan's numbering, so that a sweep split over
    // machines sends the requests one machine would have sent.
    let level = |pi: usize, x: f64| {
        let whole = ctx.opts.shard.as_ref().map(|s| &s.plan_points);
        whole
            .and_then(|ps| ps.iter().position(|&p| p == x))
            .unwrap_or(pi) as u64
    };
    match &plan.search {
        None => plan
            .points
            .iter()
            .enumerate()
            .find_map(|(pi, &x)| first_missing(x, plan.trials).map(|t| (level(pi, x), x, t))),
        Some(cfg) => match crate::search::next_step(cfg, &ctx.sweep.observations(plan, name)) {
            crate::search::Step::Done(_) => None,
            crate::search::Step::Run { x, trials } => {
                first_missing(x, trials).map(|t| ((x * 1000.0).round() as u64, x, t))
            }
        },
    }
}

/// Runs one trial: cool the GPU, open connections, warm up, measure, record.
/// Returns the engine's exit status if it died.
async fn run_one(
    ctx: &mut Ctx<'_>,
    at: &At<'_>,
    handle: &mut EngineHandle,
    tel: &telemetry::Telemetry,
    builder: &Builder,
    target: &Target,
) -> anyhow::Result<Option<String>> {
    let trial_no = trial_no(ctx.plan, at.t);
    let Some(cooldown_wait_s) = cool_down(ctx, tel, at.x, &trial_no).await else {
        // Interrupted while the GPU cooled: the trial does not start.
        return Ok(None);
    };
    let x_sent = match &ctx.opts.load_shard {
        Some(l) => load::share(ctx.plan.mode, at.x, l.index, l.count)?,
        None => at.x,
    };
    preconnect(ctx, at.name, target, x_sent).await;
    let warmup_server = warm_up(ctx, at, handle, builder, target).await;
    let TrialLoad {
        requests,
        conversations,
        offsets,
        first,
    } = shard_requests(ctx, at, builder, x_sent)?;
    let trial = Trial {
        x: x_sent,
        ..trial_of(ctx, at, requests, ctx.plan.mode, offsets)
    };
    ctx.progress.phase(format!(
        "{}: x={} ({}) trial {trial_no}",
        ctx.engine_label,
        at.x,
        point_label(ctx, at),
    ));
    let label = format!("{} x={} trial {trial_no}", at.name, at.x);
    let mut m = measure(ctx, at, handle, tel, target, (trial, conversations), label).await;
    for r in &mut m.records {
        r.attempt = at.attempt;
        // A load shard's records carry the whole load level and trial indexes.
        r.x = at.x;
        r.index += first;
    }
    let server = m.server.finish(&m.records).await;
    abandoned_notice(ctx, at, &m.records);
    let died = handle.exit_status();
    let metrics = trial_metrics(&m.records, &ctx.plan.slo);
    let (status, error) = status_of(died.as_deref(), ctx.stopped());
    let info = TrialInfo {
        index: at.t,
        attempt: at.attempt,
        status,
        duration_s: metrics.duration_s,
        completed: metrics.completed,
        failed: metrics.failed,
        good: metrics.good,
        error,
        cooldown_wait_s,
        spec_decode: spec_decode(m.spec_before, m.spec_after),
        gpu_samples: m.gpu_samples,
        server,
        warmup_server,
        energy: m.energy,
    };
    keep_trial(ctx, at, &trial_no, &m.records, metrics, info)?;
    Ok(died)
}

/// A trial abandoned for requests that timed out in a row says so, with how many
/// of its requests were never sent.
fn abandoned_notice(ctx: &mut Ctx<'_>, at: &At<'_>, records: &[RequestRecord]) {
    if !crate::load::was_abandoned(records) {
        return;
    }
    let unsent = (ctx.plan.requests_per_trial as usize).saturating_sub(records.len());
    ctx.info.notices.push(Notice::engine(
        NoticeKind::Abandoned,
        at.name,
        format!(
            "{}: x={} trial {}: abandoned after {} requests in a row got no answer within the \
         request timeout ({} s); {unsent} requests were not sent (is the server answering at all?)",
            at.name,
            at.x,
            at.t + 1,
            crate::load::TIMEOUTS_TO_ABANDON,
            ctx.plan.request_timeout.as_secs()
        ),
    ));
}

/// `2/3`; a search's extra confirmation trials go past the planned count and are
/// shown as `4 (extra)`.
fn trial_no(plan: &Plan, t: u32) -> String {
    if t < plan.trials {
        format!("{}/{}", t + 1, plan.trials)
    } else {
        format!("{} (extra)", t + 1)
    }
}

/// Waits until the GPU is cool, when the profile asks: `Some(seconds waited)`, or
/// `None` when the run was interrupted meanwhile.
async fn cool_down(
    ctx: &Ctx<'_>,
    tel: &telemetry::Telemetry,
    x: f64,
    trial_no: &str,
) -> Option<Option<f64>> {
    let Some(c) = &ctx.plan.telemetry.cooldown else {
        return Some(None);
    };
    ctx.progress.phase(format!(
        "{}: x={x} trial {trial_no}: cooling the GPU",
        ctx.engine_label,
    ));
    ctx.stop().until(tel.cooldown(c)).await
}

/// `point 2/5` of a plain run; `probe 3` of a search (its load levels so far,
/// this one counted).
fn point_label(ctx: &Ctx<'_>, at: &At<'_>) -> String {
    let plan = ctx.plan;
    match &plan.search {
        None => format!(
            "point {}/{}",
            plan.points.iter().position(|&p| p == at.x).unwrap_or(0) + 1,
            plan.points.len()
        ),
        Some(_) => {
            let points = ctx.sweep.engines.get(at.name).map(|e| &e.points);
            let known = points.is_some_and(|p| p.contains_key(&PointKey::new(plan.mode, at.x)));
            format!(
                "probe {}",
                points.map_or(0, |p| p.len()) + usize::from(!known)
            )
        }
    }
}

/// A trial is partial when the engine died during it or the run was interrupted;
/// the error says which.
fn status_of(died: Option<&str>, interrupted: bool) -> (RunStatus, Option<String>) {
    match (died, interrupted) {
        (Some(s), _) => (
            RunStatus::Partial,
            Some(format!("the engine exited during the trial ({s})")),
        ),
        (None, true) => (RunStatus::Partial, Some(report::INTERRUPTED.into())),
        (None, false) => (RunStatus::Complete, None),
    }
}

/// Keeps a trial: its records appended, a status line, the trial in the sweep,
/// and the report rewritten.
fn keep_trial(
    ctx: &mut Ctx<'_>,
    at: &At<'_>,
    trial_no: &str,
    records: &[RequestRecord],
    metrics: TrialMetrics,
    info: TrialInfo,
) -> anyhow::Result<()> {
    let name = at.name;
    let slo = trial_slo(records, &ctx.plan.slo);
    crate::server_metrics::notice(&mut ctx.info, name, info.server.as_ref());
    // Durable order: records first, then the report that refers to them.
    ctx.records
        .append(records)
        .with_context(|| format!("cannot append to {}", ctx.records.path().display()))?;
    say!(
        ctx,
        "{name} x={} trial {trial_no}: {} ok, {} failed, {} good{}{}",
        at.x,
        metrics.completed,
        metrics.failed,
        metrics.good,
        info.error.as_ref().map_or(String::new(), |e| format!(
            " ({e}: kept as a partial trial, which the point's figures do not count)"
        )),
        first_failure(records).unwrap_or_default()
    );
    ctx.sweep.add_trial(
        name,
        PointKey::new(ctx.plan.mode, at.x),
        TrialState { metrics, info, slo },
    );
    ctx.progress.trial_done();
    ctx.save()?;
    Ok(())
}

/// `; first failure: LABEL: DETAIL` (the detail cut to 200 characters) for the
/// status line of a trial with a failed request.
fn first_failure(records: &[RequestRecord]) -> Option<String> {
    let r = records.iter().find(|r| !r.ok())?;
    let detail: String = r
        .error_detail
        .as_deref()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    Some(format!(
        "; first failure: {}{}",
        r.error_label().unwrap_or_else(|| "failed".into()),
        if detail.is_empty() {
            String::new()
        } else {
            format!(": {detail}")
        }
    ))
}
