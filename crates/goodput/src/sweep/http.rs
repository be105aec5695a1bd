//! The engines' share of the sweep: every load level and trial of each (one
//! engine after the other, or interleaved in rounds), with an engine's death
//! detected after each trial and, when the profile allows, a bounded number of
//! recorded restarts.

use anyhow::Context;
use indexmap::IndexMap;
use report::{Notice, NoticeKind, RunStatus, TrialInfo};

use super::launch::SweepEngine;
use super::state::PointKey;
use super::trial_loop::{drive, drive_interleaved, AfterDeath, At, Backend, Ran};
use super::{Ctx, TrialState};
use crate::define::plan::Plan;
use crate::define::profile::EngineSpec;
use crate::define::requests::Builder;
use crate::drive::client::Target;
use crate::drive::engine::{EngineContext, EngineHandle};
use crate::drive::load::Trial;
use crate::drive::load::{share, stall};
use crate::drive::record::{ErrorKind, RequestRecord};
use crate::measure::metrics::{trial_metrics, trial_slo, TrialMetrics};
use crate::measure::telemetry;

mod restart;
mod send;
mod setup;

use restart::{death, restart};
use send::{measure, preconnect, shard_requests, spec_decode, trial_of, warm_up, TrialLoad};
use setup::{note_connect_in_ttft, note_sources, request_builder, sample_sharegpt, target_of};

/// An engine up and set up for its trials: its handle, telemetry, request
/// builder and load target.
pub(crate) struct Slot<'a> {
    spec: &'a EngineSpec,
    /// The engine; `None` once a restart failed (the dead one is stopped).
    handle: Option<SweepEngine>,
    tel: telemetry::Telemetry,
    builder: Builder,
    target: Target,
    restarts: u32,
    /// `engine 2/3 NAME`, for the progress display.
    label: String,
    /// False when its set-up failed (recorded as the engine's error): it runs no
    /// trial, and is stopped.
    usable: bool,
}

impl Slot<'_> {
    /// The engine's handle to stop, if it is still up.
    pub(crate) fn into_handle(self) -> Option<SweepEngine> {
        self.handle
    }
}

/// Sets up a started engine for its trials: where its KV pool and telemetry come
/// from, its request builder, the ShareGPT sample, its load target.
pub(crate) async fn set_up<'a>(
    ctx: &mut Ctx<'a>,
    name: &str,
    spec: &'a EngineSpec,
    handle: SweepEngine,
    tel: telemetry::Telemetry,
) -> anyhow::Result<Slot<'a>> {
    note_sources(ctx, name, &handle, &tel);
    let builder = request_builder(ctx, name, &handle).await;
    let usable = sample_sharegpt(ctx, name, &handle).await?;
    note_connect_in_ttft(ctx);
    let target = target_of(&ctx.run, &handle);
    Ok(Slot {
        spec,
        handle: Some(handle),
        tel,
        builder,
        target,
        restarts: 0,
        label: ctx.engine_label.clone(),
        usable,
    })
}

/// Runs every load level and trial of the engines in `slots`: one after the
/// other's, or `interleaved` in rounds ([`super::interleave`]). The slots come
/// back beside the result, so that every engine is stopped on an error too.
pub(crate) async fn run_engines<'a>(
    ctx: &mut Ctx<'a>,
    engine_ctx: &EngineContext,
    slots: IndexMap<String, Slot<'a>>,
    interleaved: bool,
) -> (IndexMap<String, Slot<'a>>, anyhow::Result<()>) {
    let plan = ctx.run.plan;
    let whole = ctx.run.opts.shard.as_ref().map(|s| s.plan_points.clone());
    let mut http = Http {
        ctx,
        engine_ctx,
        slots,
    };
    let names: Vec<String> = http
        .slots
        .iter()
        .filter(|(_, s)| s.usable)
        .map(|(n, _)| n.clone())
        .collect();
    let mut result = Ok(());
    if interleaved {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        result = drive_interleaved(plan, &names, whole.as_deref(), &mut http).await;
    } else {
        for name in &names {
            result = drive(plan, name, whole.as_deref(), &mut http).await;
            if result.is_err() || http.stopped() {
                break;
            }
        }
    }
    (http.slots, result)
}

/// The HTTP backend of the trial loop: launched or reached engines, sent load by
/// the load generator, their trials made durable in the run's files.
struct Http<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    engine_ctx: &'c EngineContext,
    slots: IndexMap<String, Slot<'a>>,
}

impl Backend for Http<'_, '_> {
    fn sweep(&self) -> &super::Sweep {
        &self.ctx.journal.sweep
    }

    fn stopped(&self) -> bool {
        self.ctx.stopped()
    }

    fn notice(&mut self, notice: Notice) {
        self.ctx.journal.info.notices.push(notice);
    }

    async fn trial(&mut self, at: &At<'_>) -> anyhow::Result<Ran> {
        let Some(slot) = self.slots.get_mut(at.name) else {
            return Ok(Ran::NotStarted);
        };
        let Some(handle) = slot.handle.as_mut() else {
            return Ok(Ran::NotStarted);
        };
        self.ctx.engine_label.clone_from(&slot.label);
        run_one(self.ctx, at, handle, &slot.tel, &slot.builder, &slot.target).await
    }

    async fn died(&mut self, at: &At<'_>, status: String) -> anyhow::Result<AfterDeath> {
        let Some(slot) = self.slots.get_mut(at.name) else {
            return Ok(AfterDeath::Over);
        };
        let Some(handle) = slot.handle.take() else {
            return Ok(AfterDeath::Over);
        };
        let failure = death(self.ctx, &handle, at, status);
        if slot.restarts >= slot.spec.max_restarts {
            self.ctx.journal.sweep.engine(at.name).error = Some(failure);
            self.ctx.save()?;
            slot.handle = Some(handle);
            return Ok(AfterDeath::Over);
        }
        // A restart the profile allows: recorded, and the trial runs again.
        slot.restarts += 1;
        let restarted = restart(
            self.ctx,
            at.name,
            slot.spec,
            self.engine_ctx,
            handle,
            failure,
            slot.restarts,
        )
        .await?;
        let Some(h) = restarted else {
            return Ok(AfterDeath::Over);
        };
        slot.target = target_of(&self.ctx.run, &h);
        slot.handle = Some(h);
        self.ctx.save()?;
        Ok(AfterDeath::Restarted)
    }
}

/// Runs one trial: cool the GPU, open connections, warm up, measure, record.
async fn run_one(
    ctx: &mut Ctx<'_>,
    at: &At<'_>,
    handle: &mut EngineHandle,
    tel: &telemetry::Telemetry,
    builder: &Builder,
    target: &Target,
) -> anyhow::Result<Ran> {
    let trial_no = trial_no(ctx.run.plan, at.t);
    let Some(cooldown_wait_s) = cool_down(ctx, tel, at.x, &trial_no).await else {
        // Interrupted while the GPU cooled: the trial does not start.
        return Ok(Ran::NotStarted);
    };
    let x_sent = match &ctx.run.opts.load_shard {
        Some(l) => share::share(ctx.run.plan.mode, at.x, l.index, l.count)?,
        None => at.x,
    };
    preconnect(ctx, at.name, target, x_sent).await;
    let warmup_server = warm_up(&ctx.run, at, handle, builder, target).await;
    let TrialLoad {
        requests,
        conversations,
        offsets,
        first,
    } = shard_requests(&ctx.run, at, builder, x_sent)?;
    // A load shard sends its share of the level, and its records carry the whole
    // level and the whole trial's request indexes.
    let trial = Trial {
        x: x_sent,
        first_index: first,
        ..trial_of(&ctx.run, at, requests, ctx.run.plan.mode, offsets)
    };
    ctx.progress.phase(format!(
        "{}: x={} ({}) trial {trial_no}",
        ctx.engine_label,
        at.x,
        point_label(ctx, at),
    ));
    let label = format!("{} x={} trial {trial_no}", at.name, at.x);
    let m = measure(ctx, at, handle, tel, target, (trial, conversations), label).await;
    let server = m.server.finish(&m.records).await;
    abandoned_notice(ctx, at, &m.records);
    stall_notice(ctx, at, &trial_no, m.client_stall_ms, &m.records);
    let died = match handle.exit_status() {
        Some(s) => Some(s),
        None => stopped_answering(handle, &m.records).await,
    };
    let metrics = trial_metrics(&m.records, &ctx.run.plan.slo);
    stream_notice(ctx, at, &metrics, m.records.len());
    let (status, error) = status_of(died.as_deref(), ctx.stopped(), handle.launched());
    let info = TrialInfo {
        index: at.t,
        attempt: at.attempt,
        status,
        started_unix_s: Some(m.started_unix_s),
        duration_s: metrics.duration_s,
        completed: metrics.completed,
        failed: metrics.failed,
        good: metrics.good,
        error,
        client_stall_ms: Some(m.client_stall_ms),
        cooldown_wait_s,
        spec_decode: spec_decode(m.spec_before, m.spec_after),
        gpu_samples: m.gpu_samples,
        server,
        warmup_server,
        energy: m.energy,
        figures: Default::default(),
    };
    keep_trial(ctx, at, &trial_no, &m.records, metrics, info)?;
    Ok(died.map_or(Ran::Kept, Ran::Died))
}

/// A server goodput did not launch (`url`) that went away during the trial: some
/// requests could not connect or lost their connection, and a new connection is
/// refused now. `None` for a launched engine (its process says whether it died),
/// and when the server still takes connections (the failures stay the server's
/// answers, counted by kind).
async fn stopped_answering(handle: &EngineHandle, records: &[RequestRecord]) -> Option<String> {
    if handle.launched() {
        return None;
    }
    let lost = records
        .iter()
        .filter(|r| matches!(r.error, Some(ErrorKind::Connect | ErrorKind::Reset)))
        .count();
    if lost == 0 || handle.accepts_connections(GONE_PROBE).await {
        return None;
    }
    Some(format!(
        "the server at {} stopped answering: {lost} of {} requests could not connect or lost \
         their connection, and it refuses connections now",
        handle.base_url,
        records.len()
    ))
}

/// How long a server that failed requests is given to take a new connection
/// before it is called gone.
const GONE_PROBE: std::time::Duration = std::time::Duration::from_secs(2);

/// A trial whose client was paused or starved (its timer woke more than
/// `CLIENT_STALL_LIMIT_MS` late) says so, with how late: its latencies hold the
/// pause (the report's warning says the same). Likewise a trial whose chunks'
/// times may be late (`stall::late_stamps`).
fn stall_notice(ctx: &mut Ctx<'_>, at: &At<'_>, n: &str, late_ms: f64, rs: &[RequestRecord]) {
    use report::CLIENT_STALL_LIMIT_MS;
    if let Some(late) = stall::late_stamps(rs) {
        let text = format!("{}: x={} trial {n}: {late}", at.name, at.x);
        let notice = Notice::engine(NoticeKind::ClientStall, at.name, text);
        ctx.journal.info.notices.push(notice);
    }
    if late_ms <= CLIENT_STALL_LIMIT_MS {
        return;
    }
    ctx.journal.info.notices.push(Notice::engine(
        NoticeKind::ClientStall,
        at.name,
        format!(
            "{}: x={} trial {n}: the client stalled: its timer woke {} ms late (limit \
             {CLIENT_STALL_LIMIT_MS} ms; paused, or starved of CPU), so the latencies of \
             the requests in flight include the stall",
            at.name,
            at.x,
            late_ms.round()
        ),
    ));
}

/// A trial abandoned for requests that timed out in a row says so, with how many
/// of its requests were never sent.
fn abandoned_notice(ctx: &mut Ctx<'_>, at: &At<'_>, records: &[RequestRecord]) {
    if !crate::drive::load::was_abandoned(records) {
        return;
    }
    let unsent = (ctx.run.plan.requests_per_trial as usize).saturating_sub(records.len());
    ctx.journal.info.notices.push(Notice::engine(
        NoticeKind::Abandoned,
        at.name,
        format!(
            "{}: x={} trial {}: abandoned after {} requests in a row got no answer within the \
         request timeout ({} s); {unsent} requests were not sent (is the server answering at all?)",
            at.name,
            at.x,
            at.t + 1,
            crate::drive::load::TIMEOUTS_TO_ABANDON,
            ctx.run.plan.request_timeout.as_secs()
        ),
    ));
}

/// A trial whose streams broke a rule the client handles says how many did:
/// data after `[DONE]` (ignored, docs/measurements.md), choices other than index 0
/// (a server answering `n > 1`; only choice 0 is counted).
fn stream_notice(ctx: &mut Ctx<'_>, at: &At<'_>, m: &TrialMetrics, sent: usize) {
    let mut what = Vec::new();
    if m.after_done > 0 {
        what.push(format!(
            "{} of {sent} requests sent data after `data: [DONE]`, which was ignored",
            m.after_done
        ));
    }
    if m.other_choices > 0 {
        what.push(format!(
            "{} of {sent} requests streamed choices other than index 0 (n > 1?), which were \
             not counted",
            m.other_choices
        ));
    }
    if what.is_empty() {
        return;
    }
    ctx.journal.info.notices.push(Notice::engine(
        NoticeKind::Stream,
        at.name,
        format!(
            "{}: x={} trial {}: {}",
            at.name,
            at.x,
            at.t + 1,
            what.join("; ")
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
    let Some(c) = &ctx.run.plan.telemetry.cooldown else {
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
    let plan = ctx.run.plan;
    match &plan.search {
        None => format!(
            "point {}/{}",
            plan.points.iter().position(|&p| p == at.x).unwrap_or(0) + 1,
            plan.points.len()
        ),
        Some(_) => {
            let points = ctx.journal.sweep.engines.get(at.name).map(|e| &e.points);
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
fn status_of(died: Option<&str>, interrupted: bool, launched: bool) -> (RunStatus, Option<String>) {
    match (died, interrupted) {
        (Some(s), _) => (
            RunStatus::Partial,
            Some(if launched {
                format!("the engine exited during the trial ({s})")
            } else {
                format!("the engine went away during the trial ({s})")
            }),
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
    let slo = trial_slo(records, &ctx.run.plan.slo);
    if let Some(n) = crate::measure::server_metrics::notice(name, info.server.as_ref()) {
        ctx.journal.info.notice_once(n);
    }
    // Durable order: records first, then the report that refers to them.
    ctx.journal
        .records
        .append(records)
        .with_context(|| format!("cannot append to {}", ctx.journal.records.path().display()))?;
    ctx.run.otel.trial(
        records,
        &crate::measure::otel::TrialSpans {
            started_unix_s: info.started_unix_s.unwrap_or(f64::NAN),
            engine: ctx.journal.engine_envs.get(name),
            slo: &ctx.run.plan.slo,
        },
    );
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
    ctx.journal.sweep.add_trial(
        name,
        PointKey::new(ctx.run.plan.mode, at.x),
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
    let detail = crate::redact::cut_chars(r.error_detail.as_deref().unwrap_or(""), 200);
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
