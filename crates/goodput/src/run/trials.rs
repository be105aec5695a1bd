//! One engine's share of the sweep: every load level and trial, with the engine's
//! death detected after each trial and, when the profile allows, a bounded number
//! of recorded restarts.

use anyhow::Context;
use report::{EngineFailure, RunStatus, TrialInfo};

use super::gpu_release::{self, SweepEngine};
use super::{Ctx, TrialState};
use crate::client::{Limits, SseLimits, Target};
use crate::engine::{EngineContext, EngineHandle};
use crate::load::{arrival_offsets, run_trial, Trial};
use crate::metrics::trial_metrics;
use crate::profile::{EngineSpec, LoadMode};
use crate::shard::load;
use crate::stop::Stop;
use crate::telemetry;
use crate::workload::{calibrate, Builder, Calibration};

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
    let plan = ctx.plan;
    {
        let st = ctx.sweep.engine(name);
        st.kv_pool_tokens = handle.kv_pool_tokens;
        st.kv_pool_source = handle.kv_pool_source.clone();
        st.telemetry_source = tel.source_name().map(str::to_string);
    }
    let mut builder = Builder {
        workload: plan.workload.clone(),
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
    if !sample_sharegpt(ctx, name, &handle).await? {
        return Ok(Some(handle));
    }
    let mut target = Target::new(
        &handle.base_url,
        handle.api.path(),
        handle.api_key.as_deref(),
    )
    .with_connect_in_ttft(ctx.opts.ttft_includes_connect);
    if ctx.opts.ttft_includes_connect {
        let note = "TTFT includes connection set-up where a request opened a new \
                    connection (--ttft-includes-connect)";
        if !ctx.info.notices.iter().any(|n| n == note) {
            ctx.info.notices.push(note.to_string());
        }
    }
    let mut restarts = 0u32;
    let mut attempt = 0u32;
    let mut last: Option<(u64, u32)> = None;
    loop {
        if ctx.stopped() {
            break;
        }
        let Some((pi, x, t)) = next_trial(ctx, name) else {
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
        let died = run_one(
            ctx,
            name,
            &mut handle,
            tel,
            &builder,
            &target,
            pi,
            x,
            t,
            attempt,
        )
        .await?;
        let Some(status) = died else {
            attempt = 0;
            continue;
        };
        let mut failure = EngineFailure {
            kind: "died_during_trial".into(),
            message: format!("{name} exited during trial {} at x={x}", t + 1),
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
        if restarts >= spec.max_restarts {
            ctx.sweep.engine(name).error = Some(failure);
            ctx.save()?;
            break;
        }
        // A restart the profile allows: recorded, and the trial runs again.
        restarts += 1;
        attempt += 1;
        ctx.sweep.engine(name).restarts.push(failure);
        if let Err(f) = handle.stop().await {
            ctx.info.notices.push(format!("{name}: {}", f.message));
        }
        say!(
            ctx,
            "{name}: restarting ({restarts} of {} allowed)",
            spec.max_restarts
        );
        match gpu_release::start(name, spec, engine_ctx, &Stop::never()).await {
            Ok(h) => {
                handle = h;
                target = Target::new(
                    &handle.base_url,
                    handle.api.path(),
                    handle.api_key.as_deref(),
                )
                .with_connect_in_ttft(ctx.opts.ttft_includes_connect);
            }
            Err(f) => {
                ctx.sweep.engine(name).error = Some(f);
                ctx.save()?;
                return Ok(None);
            }
        }
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

/// The next trial to run on `name`: `(stream, x, trial index)`, or `None` when the
/// engine's share is done. A plain run takes the plan's load levels in order; a
/// search asks [`crate::search::next_step`] from what is measured so far, so a
/// resumed search continues where it stopped. `stream` numbers the load level for
/// the request seeds (the grid's index, or for a search the load itself).
fn next_trial(ctx: &Ctx<'_>, name: &str) -> Option<(u64, f64, u32)> {
    let plan = ctx.plan;
    let key = |x| super::state::PointKey::new(plan.mode, x);
    let first_missing =
        |x: f64, trials: u32| (0..trials).find(|&t| !ctx.sweep.is_complete(name, key(x), t));
    // A shard's levels keep the whole plan's numbering, so that a sweep split over
    // machines sends the requests one machine would have sent.
    let stream = |pi: usize, x: f64| {
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
            .find_map(|(pi, &x)| first_missing(x, plan.trials).map(|t| (stream(pi, x), x, t))),
        Some(cfg) => match crate::search::next_step(cfg, &ctx.sweep.observations(plan, name)) {
            crate::search::Step::Done(_) => None,
            crate::search::Step::Run { x, trials } => {
                first_missing(x, trials).map(|t| ((x * 1000.0).round() as u64, x, t))
            }
        },
    }
}

/// Runs trial `t` at load `x`; returns the engine's exit status if it died.
#[allow(clippy::too_many_arguments)]
async fn run_one(
    ctx: &mut Ctx<'_>,
    name: &str,
    handle: &mut EngineHandle,
    tel: &telemetry::Telemetry,
    builder: &Builder,
    target: &Target,
    pi: u64,
    x: f64,
    t: u32,
    attempt: u32,
) -> anyhow::Result<Option<String>> {
    let plan = ctx.plan;
    let limits = Limits {
        request_timeout: plan.request_timeout,
        stall_timeout: plan.stall_timeout,
        sse: SseLimits::default(),
    };
    // `trial 2/3`; a search's extra confirmation trials go past the planned count
    // and are shown as `trial 4 (extra)`.
    let trial_no = if t < plan.trials {
        format!("{}/{}", t + 1, plan.trials)
    } else {
        format!("{} (extra)", t + 1)
    };
    let label = format!("{name} x={x} trial {trial_no}");
    if plan.telemetry.cooldown.is_some() {
        ctx.progress.phase(format!(
            "{}: x={x} trial {trial_no}: cooling the GPU",
            ctx.engine_label,
        ));
    }
    let cooldown_wait_s = match &plan.telemetry.cooldown {
        Some(c) => match ctx.stop().until(tel.cooldown(c)).await {
            Some(waited) => waited,
            // Interrupted while the GPU cooled: the trial does not start.
            None => return Ok(None),
        },
        None => None,
    };
    // Requests: the same on every engine; different per trial and load level (the
    // trial's lane of the seeded random draws).
    let lane = pi << 32 | t as u64;
    let trial = |requests, mode, offsets| Trial {
        engine: name.into(),
        x,
        index: t,
        mode,
        max_concurrency: plan.max_concurrency,
        offsets,
        requests,
        limits,
        timeout: plan.trial_timeout,
        grace: ctx.opts.grace,
        sent: None,
    };
    let x_conn = match &ctx.opts.load_shard {
        Some(l) => load::share(plan.mode, x, l.index, l.count)?,
        None => x,
    };
    preconnect(ctx, name, target, x_conn).await;
    let mut warmup_server = None;
    if plan.warmup_requests > 0 {
        let sampler = crate::server_metrics::ServerSampler::start(
            &ctx.client,
            &handle.base_url,
            &plan.server_metrics,
        )
        .await;
        let warm = trial(
            builder.build(plan.warmup_requests, plan.seed, u64::MAX - lane),
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
        warmup_server = sampler.finish(&warm_records).await;
    }
    let mut requests = builder.build(plan.requests_per_trial, plan.seed, lane);
    // A load shard sends its run of the whole trial's requests at its share of x.
    let (first, x_sent, seed) = match &ctx.opts.load_shard {
        None => (0, x, plan.seed),
        Some(l) => {
            let (first, len) = load::split(requests.len() as u64, l.index, l.count);
            requests.truncate((first + len) as usize);
            requests.drain(..first as usize);
            let x_sent = load::share(plan.mode, x, l.index, l.count)?;
            (
                first as u32,
                x_sent,
                load::arrival_seed(plan.seed, l.index, l.count),
            )
        }
    };
    let offsets = match plan.mode {
        LoadMode::Rate => arrival_offsets(x_sent, plan.burstiness, requests.len(), seed ^ lane),
        LoadMode::Trace => builder.trace_offsets(x),
        LoadMode::Concurrency => Vec::new(),
    };
    let point = match &plan.search {
        None => format!(
            "point {}/{}",
            plan.points.iter().position(|&p| p == x).unwrap_or(0) + 1,
            plan.points.len()
        ),
        Some(_) => format!(
            "probe {}",
            ctx.sweep.engines.get(name).map_or(0, |e| e.points.len())
                + usize::from(!ctx.sweep.engines.get(name).is_some_and(|e| {
                    e.points
                        .contains_key(&super::state::PointKey::new(plan.mode, x))
                }))
        ),
    };
    ctx.progress.phase(format!(
        "{}: x={x} ({point}) trial {trial_no}",
        ctx.engine_label,
    ));
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (bar, on_record) =
        ctx.progress
            .trial_bar(label, plan.requests_per_trial as u64, sent.clone());
    let spec_before = handle.scrape_spec_counters().await;
    let server = crate::server_metrics::ServerSampler::start(
        &ctx.client,
        &handle.base_url,
        &plan.server_metrics,
    )
    .await;
    start_together(ctx, name, x, t, attempt).await;
    let sampler = tel.start_trial();
    let mut records = run_trial(
        ctx.client.clone(),
        target.clone(),
        Trial {
            sent: Some(sent),
            x: x_sent,
            ..trial(requests, plan.mode, offsets)
        },
        ctx.stop.clone(),
        on_record,
    )
    .await;
    let samples = sampler.finish().await;
    let spec_after = handle.scrape_spec_counters().await;
    bar.finish_and_clear();
    for r in &mut records {
        r.attempt = attempt;
        // A load shard's records carry the whole load level and trial indexes.
        r.x = x;
        r.index += first;
    }
    let server = server.finish(&records).await;
    let died = handle.exit_status();
    let metrics = trial_metrics(&records, &plan.slo);
    let slo = crate::metrics::trial_slo(&records, &plan.slo);
    let interrupted = ctx.stopped();
    let status = if died.is_some() || interrupted {
        RunStatus::Partial
    } else {
        RunStatus::Complete
    };
    let error = match (&died, interrupted) {
        (Some(s), _) => Some(format!("the engine exited during the trial ({s})")),
        (None, true) => Some("interrupted".into()),
        _ => None,
    };
    let spec_decode = match (spec_before, spec_after) {
        (Some(a), Some(b)) if b.draft_tokens > a.draft_tokens => {
            let d = b.draft_tokens - a.draft_tokens;
            let acc = (b.accepted_tokens - a.accepted_tokens).max(0.0);
            Some(report::SpecDecode {
                draft_tokens: d,
                accepted_tokens: acc,
                acceptance_rate: Some(acc / d),
            })
        }
        _ => None,
    };
    let info = TrialInfo {
        index: t,
        attempt,
        status,
        duration_s: metrics.duration_s,
        completed: metrics.completed,
        failed: metrics.failed,
        good: metrics.good,
        error,
        cooldown_wait_s,
        spec_decode,
        gpu_samples: samples,
        server,
        warmup_server,
    };
    crate::server_metrics::notice(&mut ctx.info.notices, name, info.server.as_ref());
    // Durable order: records first, then the report that refers to them.
    ctx.records
        .append(&records)
        .with_context(|| format!("cannot append to {}", ctx.records.path().display()))?;
    let first_failure = records.iter().find(|r| !r.ok()).map(|r| {
        let detail: String = r
            .error_detail
            .as_deref()
            .unwrap_or("")
            .chars()
            .take(200)
            .collect();
        format!(
            "; first failure: {}{}",
            r.error_label().unwrap_or_else(|| "failed".into()),
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            }
        )
    });
    say!(
        ctx,
        "{name} x={x} trial {trial_no}: {} ok, {} failed, {} good{}{}",
        metrics.completed,
        metrics.failed,
        metrics.good,
        info.error
            .as_ref()
            .map_or(String::new(), |e| format!(" ({e})")),
        first_failure.unwrap_or_default()
    );
    ctx.sweep.add_trial(
        name,
        super::state::PointKey::new(plan.mode, x),
        TrialState { metrics, info, slo },
    );
    ctx.progress.trial_done();
    ctx.save()?;
    Ok(died)
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
async fn start_together(ctx: &mut Ctx<'_>, name: &str, x: f64, t: u32, attempt: u32) {
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
