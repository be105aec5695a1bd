//! One engine's share of the sweep: every load level and trial, with the engine's
//! death detected after each trial and, when the profile allows, a bounded number
//! of recorded restarts.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use anyhow::Context;
use report::{EngineFailure, GpuSample, RunStatus, ServerTrial, SpecDecode, TrialInfo};

use super::gpu_release::{self, SweepEngine};
use super::state::PointKey;
use super::{Ctx, TrialState};
use crate::client::{Limits, SseLimits, Target};
use crate::engine::{EngineContext, EngineHandle, SpecCounters};
use crate::load::{arrival_offsets, run_conversation_trial, run_trial, Trial};
use crate::metrics::{trial_metrics, trial_slo, TrialMetrics};
use crate::plan::Plan;
use crate::profile::{EngineSpec, LoadMode};
use crate::record::RequestRecord;
use crate::server_metrics::ServerSampler;
use crate::shard::load;
use crate::stop::Stop;
use crate::telemetry;
use crate::workload::conversation::Conversations;
use crate::workload::{calibrate, Builder, Calibration, Prepared};

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
            ctx.info.notices.push(format!(
                "{name}: trial {} at x={x} did not complete and was not retried",
                t + 1
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

/// ShareGPT: the run's sample, taken on the first engine (counted by its
/// `/tokenize` when it has one) and sent by every engine; the report's workload
/// facts gain its counts. `false` (the engine's error recorded) when it fails.
async fn sample_sharegpt(
    ctx: &mut Ctx<'_>,
    name: &str,
    handle: &SweepEngine,
) -> anyhow::Result<bool> {
    let plan = ctx.plan;
    let crate::plan::Workload::ShareGpt(w) = &plan.workload else {
        return Ok(true);
    };
    let sampled = w
        .sample_on(&ctx.client, &handle.base_url, &handle.model, plan.seed)
        .await;
    match sampled {
        Ok(s) => {
            let facts = ctx.info.workload.get_mut("facts");
            if let (Some(f), serde_json::Value::Object(add)) =
                (facts.and_then(|f| f.as_object_mut()), s.facts())
            {
                f.extend(add);
            }
            if let Some(t) = &w.truncated {
                ctx.notice_once(format!("workload: {}: {t}", w.path.display()));
            }
            Ok(true)
        }
        Err(why) => {
            say!(ctx, "{name}: sampling ShareGPT failed: {why}");
            ctx.sweep.engine(name).error = Some(EngineFailure {
                kind: "workload".into(),
                message: format!("sampling ShareGPT: {why}"),
                exit_status: None,
                log_tail: Vec::new(),
            });
            ctx.save()?;
            Ok(false)
        }
    }
}

/// Notes in the sweep where the engine's KV pool size and its telemetry come from.
fn note_sources(ctx: &mut Ctx<'_>, name: &str, handle: &SweepEngine, tel: &telemetry::Telemetry) {
    let st = ctx.sweep.engine(name);
    st.kv_pool_tokens = handle.kv_pool_tokens;
    st.kv_pool_source = handle.kv_pool_source.clone();
    st.telemetry_source = tel.source_name().map(str::to_string);
}

/// The engine's request builder, with prompt lengths calibrated by the engine's
/// tokenizer where the workload asks; how they were set goes into the environment.
async fn request_builder(ctx: &mut Ctx<'_>, name: &str, handle: &SweepEngine) -> Builder {
    let mut builder = Builder {
        workload: ctx.plan.workload.clone(),
        model: handle.model.clone(),
        api: handle.api,
        tokens_per_word: 1.0,
    };
    match calibrate(&builder, &ctx.client, &handle.base_url).await {
        Calibration::NotAsked => {}
        Calibration::Calibrated(tpw) => {
            builder.tokens_per_word = tpw;
            ctx.set_prompt_lengths(name, "tokenize");
        }
        Calibration::Failed(why) => {
            ctx.info.notices.push(format!(
                "{name}: prompt lengths are uncalibrated: calibrate = true, but {why}; \
                 input_tokens assume one token per word, so real prompt lengths differ"
            ));
            ctx.set_prompt_lengths(name, "uncalibrated");
        }
    }
    crate::workload::conversation::set_engine_context(
        &mut builder,
        &ctx.client,
        &handle.base_url,
        &mut ctx.info.notices,
        name,
    )
    .await;
    builder
}

/// One notice per run when TTFT counts connection set-up.
fn note_connect_in_ttft(ctx: &mut Ctx<'_>) {
    if ctx.opts.ttft_includes_connect {
        let note = "TTFT includes connection set-up where a request opened a new \
                    connection (--ttft-includes-connect)";
        if !ctx.info.notices.iter().any(|n| n == note) {
            ctx.info.notices.push(note.to_string());
        }
    }
}

/// Where the load goes: the engine's endpoint for its API.
fn target_of(ctx: &Ctx<'_>, handle: &EngineHandle) -> Target {
    Target::new(
        &handle.base_url,
        handle.api.path(),
        handle.api_key.as_deref(),
    )
    .with_connect_in_ttft(ctx.opts.ttft_includes_connect)
}

/// The failure an engine that exited during a trial is recorded with (its log's
/// explanation added), said on stderr.
fn death(ctx: &Ctx<'_>, handle: &EngineHandle, at: &At<'_>, status: String) -> EngineFailure {
    let name = at.name;
    let mut failure = EngineFailure {
        kind: "died_during_trial".into(),
        message: format!("{name} exited during trial {} at x={}", at.t + 1, at.x),
        exit_status: Some(status),
        log_tail: Vec::new(),
    };
    handle.explain(&mut failure);
    say!(
        ctx,
        "{name}: {} ({})",
        failure.message,
        failure.exit_status.as_deref().unwrap_or("?")
    );
    failure
}

/// Restart number `restarts` of a dead engine: the failure is recorded, the dead
/// engine stopped and a new one started. `None` when the start failed (recorded
/// as the engine's error).
async fn restart(
    ctx: &mut Ctx<'_>,
    name: &str,
    spec: &EngineSpec,
    engine_ctx: &EngineContext,
    dead: SweepEngine,
    failure: EngineFailure,
    restarts: u32,
) -> anyhow::Result<Option<SweepEngine>> {
    ctx.sweep.engine(name).restarts.push(failure);
    if let Err(f) = dead.stop().await {
        ctx.info.notices.push(format!("{name}: {}", f.message));
    }
    say!(
        ctx,
        "{name}: restarting ({restarts} of {} allowed)",
        spec.max_restarts
    );
    match gpu_release::start(name, spec, engine_ctx, &Stop::never()).await {
        Ok(h) => Ok(Some(h)),
        Err(f) => {
            ctx.sweep.engine(name).error = Some(f);
            ctx.save()?;
            Ok(None)
        }
    }
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
    };
    keep_trial(ctx, at, &trial_no, &m.records, metrics, info)?;
    Ok(died)
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

/// A trial of `requests` at the trial's load level, with the plan's limits.
fn trial_of(
    ctx: &Ctx<'_>,
    at: &At<'_>,
    requests: Vec<Prepared>,
    mode: LoadMode,
    offsets: Vec<u64>,
) -> Trial {
    let plan = ctx.plan;
    Trial {
        engine: at.name.into(),
        x: at.x,
        index: at.t,
        mode,
        max_concurrency: plan.max_concurrency,
        offsets,
        requests,
        limits: Limits {
            request_timeout: plan.request_timeout,
            stall_timeout: plan.stall_timeout,
            sse: SseLimits::default(),
        },
        timeout: plan.trial_timeout,
        grace: ctx.opts.grace,
        sent: None,
    }
}

/// The plan's warm-up requests (a closed loop, not recorded), when it has any;
/// returns what the server's metrics said over them.
async fn warm_up(
    ctx: &Ctx<'_>,
    at: &At<'_>,
    handle: &EngineHandle,
    builder: &Builder,
    target: &Target,
) -> Option<ServerTrial> {
    let plan = ctx.plan;
    if plan.warmup_requests == 0 {
        return None;
    }
    let sampler = ServerSampler::start(&ctx.client, &handle.base_url, &plan.server_metrics).await;
    let warm = trial_of(
        ctx,
        at,
        builder.build(plan.warmup_requests, plan.seed, u64::MAX - at.lane),
        LoadMode::Concurrency,
        Vec::new(),
    );
    let warm_records = run_trial(
        ctx.client.clone(),
        target.clone(),
        warm,
        ctx.stop.clone(),
        Box::new(|_| {}),
    )
    .await;
    sampler.finish(&warm_records).await
}

/// What one trial sends: its requests (none for a conversation trial, whose bodies
/// are made from its sessions as the replies come), its send offsets, and the whole
/// trial's index of its first request (a load shard's run starts past 0).
struct TrialLoad {
    requests: Vec<Prepared>,
    conversations: Option<Conversations>,
    offsets: Vec<u64>,
    first: u32,
}

/// The trial's requests, their send offsets (an open loop's arrivals at `x_sent`,
/// or the trace's), and the whole trial's index of the first: a load shard sends
/// its run of the whole trial's requests at its share of x.
fn shard_requests(
    ctx: &Ctx<'_>,
    at: &At<'_>,
    builder: &Builder,
    x_sent: f64,
) -> anyhow::Result<TrialLoad> {
    let plan = ctx.plan;
    // A conversation trial's bodies are made from its sessions as the replies come.
    let conversations = builder.conversations(plan.requests_per_trial, plan.seed, at.lane);
    if conversations.is_some() && ctx.opts.load_shard.is_some() {
        anyhow::bail!("a conversation workload cannot be split over load shards yet");
    }
    let mut requests = match conversations {
        Some(_) => Vec::new(),
        None => builder.build(plan.requests_per_trial, plan.seed, at.lane),
    };
    let (first, seed) = match &ctx.opts.load_shard {
        None => (0, plan.seed),
        Some(l) => {
            let (first, len) = load::split(requests.len() as u64, l.index, l.count);
            requests.truncate((first + len) as usize);
            requests.drain(..first as usize);
            (
                first as u32,
                load::arrival_seed(plan.seed, l.index, l.count),
            )
        }
    };
    let offsets = match plan.mode {
        // A conversation trial's arrivals are its sessions' starts: at most one a request.
        LoadMode::Rate => {
            let n = conversations
                .as_ref()
                .map_or(requests.len(), |c| c.requests as usize);
            arrival_offsets(x_sent, plan.burstiness, n, seed ^ at.lane)
        }
        LoadMode::Trace => builder.trace_offsets(at.x),
        LoadMode::Concurrency => Vec::new(),
    };
    Ok(TrialLoad {
        requests,
        conversations,
        offsets,
        first,
    })
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

/// What a measured trial returned, before its records are stamped.
struct Measured {
    records: Vec<RequestRecord>,
    gpu_samples: Vec<GpuSample>,
    spec_before: Option<SpecCounters>,
    spec_after: Option<SpecCounters>,
    /// Still to be finished with the stamped records.
    server: ServerSampler,
}

/// Sends the trial's load with a progress bar, the speculative-decoding counters
/// scraped before and after, the server's metrics and the GPU sampled during it.
async fn measure(
    ctx: &mut Ctx<'_>,
    at: &At<'_>,
    handle: &EngineHandle,
    tel: &telemetry::Telemetry,
    target: &Target,
    (trial, conversations): (Trial, Option<Conversations>),
    label: String,
) -> Measured {
    let plan = ctx.plan;
    let sent = Arc::new(AtomicU64::new(0));
    let (bar, on_record) =
        ctx.progress
            .trial_bar(label, plan.requests_per_trial as u64, sent.clone());
    let spec_before = handle.scrape_spec_counters().await;
    let server = ServerSampler::start(&ctx.client, &handle.base_url, &plan.server_metrics).await;
    start_together(ctx, at).await;
    let sampler = tel.start_trial();
    let trial = Trial {
        sent: Some(sent),
        ..trial
    };
    let (client, stop) = (ctx.client.clone(), ctx.stop.clone());
    let records = match conversations {
        Some(c) => run_conversation_trial(client, target.clone(), trial, c, stop, on_record).await,
        None => run_trial(client, target.clone(), trial, stop, on_record).await,
    };
    let gpu_samples = sampler.finish().await;
    let spec_after = handle.scrape_spec_counters().await;
    bar.finish_and_clear();
    Measured {
        records,
        gpu_samples,
        spec_before,
        spec_after,
        server,
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
        (None, true) => (RunStatus::Partial, Some("interrupted".into())),
        (None, false) => (RunStatus::Complete, None),
    }
}

/// The trial's speculative decoding, from the counters before and after it (none
/// when the engine drafted nothing).
fn spec_decode(before: Option<SpecCounters>, after: Option<SpecCounters>) -> Option<SpecDecode> {
    match (before, after) {
        (Some(a), Some(b)) if b.draft_tokens > a.draft_tokens => {
            let d = b.draft_tokens - a.draft_tokens;
            let acc = (b.accepted_tokens - a.accepted_tokens).max(0.0);
            Some(SpecDecode {
                draft_tokens: d,
                accepted_tokens: acc,
                acceptance_rate: Some(acc / d),
            })
        }
        _ => None,
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
    crate::server_metrics::notice(&mut ctx.info.notices, name, info.server.as_ref());
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
        info.error
            .as_ref()
            .map_or(String::new(), |e| format!(" ({e})")),
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

/// Opens, before a trial, the connections its load needs (kept alive between
/// trials), so that TTFT measures the engine and not TCP set-up: `x` for a closed
/// loop, one second of arrivals for an open one; at most `max_concurrency` and the
/// trial's request count. A failure is a notice: requests then connect as they go,
/// and each records its `connect` time.
async fn preconnect(ctx: &mut Ctx<'_>, name: &str, target: &Target, x: f64) {
    let plan = ctx.plan;
    let mut n = x.ceil().max(1.0) as usize;
    if let Some(c) = plan.max_concurrency {
        n = n.min(c as usize);
    }
    n = n.min(plan.requests_per_trial.max(1) as usize);
    if let Err(e) = ctx
        .stop()
        .until(target.preconnect(n))
        .await
        .unwrap_or(Ok(()))
    {
        ctx.info.notices.push(format!(
            "{name}: x={x}: could not open {n} connections before the trial ({e}); \
             requests opened their own (see each record's `connect`)"
        ));
    }
}

/// A load shard with a barrier waits for the other clients, so that the `N`
/// clients start the trial at one wall-clock instant; a barrier that fails is a
/// notice and the trial starts alone.
async fn start_together(ctx: &mut Ctx<'_>, at: &At<'_>) {
    let At {
        name,
        x,
        t,
        attempt,
        ..
    } = *at;
    let Some(l) = ctx.opts.load_shard.clone() else {
        return;
    };
    let Some(dir) = &l.barrier else {
        return;
    };
    let key: String = format!("{name}-x{x}-t{t}-a{attempt}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let waited = ctx
        .stop()
        .until(load::barrier(dir, &key, l.index, l.count))
        .await;
    if let Some(Err(why)) = waited {
        ctx.info.notices.push(format!(
            "{name}: x={x} trial {}: {why}; it started alone",
            t + 1
        ));
    }
}
