//! The engines of a run started, driven and stopped: one after the other (each
//! started, measured, stopped; launched engines share the GPU that way), or all
//! up at once with their trials interleaved in rounds ([`super::interleave`]).
//! Every engine started is stopped by its own handle, on an error too.

use report::{Notice, NoticeKind};

use super::{http, launch, Ctx};

use crate::define::profile::{EngineKind, EngineSpec};
use crate::drive::engine::{self, EngineContext};
use crate::measure::telemetry;

/// Every engine of the plan, until the run is stopped: interleaved when the plan
/// says so ([`Plan::interleaves`](crate::define::plan::Plan::interleaves)), else one after the other.
pub(super) async fn run_engines(
    ctx: &mut Ctx<'_>,
    engine_ctx: &EngineContext,
) -> anyhow::Result<()> {
    if ctx.run.plan.interleaves() {
        return run_interleaved(ctx, engine_ctx).await;
    }
    let plan = ctx.run.plan;
    for (i, (name, spec)) in plan.engines.iter().enumerate() {
        if ctx.stopped() {
            break;
        }
        let Some(slot) = start_engine(ctx, i, name, spec, engine_ctx).await? else {
            continue;
        };
        let slots = indexmap::IndexMap::from([(name.clone(), slot)]);
        let (slots, result) = http::run_engines(ctx, engine_ctx, slots, false).await;
        stop_engines(ctx, slots).await;
        result?;
        ctx.save()?;
    }
    Ok(())
}

/// Every engine started (they can all be up at once), their trials run in
/// interleaved rounds, then every engine stopped, on an error too.
async fn run_interleaved(ctx: &mut Ctx<'_>, engine_ctx: &EngineContext) -> anyhow::Result<()> {
    let plan = ctx.run.plan;
    let mut slots = indexmap::IndexMap::new();
    for (i, (name, spec)) in plan.engines.iter().enumerate() {
        if ctx.stopped() {
            break;
        }
        match start_engine(ctx, i, name, spec, engine_ctx).await {
            Ok(Some(slot)) => {
                slots.insert(name.clone(), slot);
            }
            Ok(None) => {}
            Err(e) => {
                stop_engines(ctx, slots).await;
                return Err(e);
            }
        }
    }
    if !slots.is_empty() && !ctx.stopped() {
        say!(
            ctx,
            "{} up: their trials interleave in rounds, in an order drawn from seed {}",
            crate::render::text::count(slots.len() as u64, "engine"),
            plan.seed
        );
    }
    let (slots, result) = http::run_engines(ctx, engine_ctx, slots, true).await;
    stop_engines(ctx, slots).await;
    result?;
    ctx.save()?;
    Ok(())
}

/// Stops every engine still up, by its own handle; a stop that fails is a notice.
async fn stop_engines(ctx: &mut Ctx<'_>, slots: indexmap::IndexMap<String, http::Slot<'_>>) {
    for (name, slot) in slots {
        let Some(handle) = slot.into_handle() else {
            continue;
        };
        if let Err(f) = handle.stop().await {
            ctx.journal.info.notices.push(Notice::engine(
                NoticeKind::EngineStop,
                &name,
                format!("{name}: {}", f.message),
            ));
        }
    }
}

/// Engine `i` of the plan started (or reached), its telemetry opened and its
/// trials set up; `None` when every trial of it is complete already, or it failed
/// to start (recorded in the report, not returned).
async fn start_engine<'a>(
    ctx: &mut Ctx<'a>,
    i: usize,
    name: &str,
    spec: &'a EngineSpec,
    engine_ctx: &EngineContext,
) -> anyhow::Result<Option<http::Slot<'a>>> {
    let plan = ctx.run.plan;
    ctx.engine_label = format!("engine {}/{} {name}", i + 1, plan.engines.len());
    if ctx.journal.sweep.engine_done(plan, name) {
        say!(ctx, "{name}: every trial already complete");
        return Ok(None);
    }
    match spec.effective_kind() {
        EngineKind::Url => say!(
            ctx,
            "{name}: reaching {}{}",
            spec.url.as_deref().unwrap_or("?"),
            match engine::api_key_var(spec) {
                Some(var) if spec.api_key_env.is_none() =>
                    format!(" with the key in {var} (no api_key_env given)"),
                _ => String::new(),
            }
        ),
        kind => say!(ctx, "{name}: starting ({})", engine::kind_name(kind)),
    }
    ctx.progress
        .phase(format!("{}: starting", ctx.engine_label));
    let handle = match launch::start(name, spec, engine_ctx, &ctx.stop()).await {
        Ok(h) => h,
        Err(f) => {
            say!(ctx, "{name}: {}", f.message);
            ctx.journal.sweep.engine(name).error = Some(f);
            ctx.save()?;
            return Ok(None);
        }
    };
    say!(
        ctx,
        "{name}: ready at {} serving `{}`, KV pool {}",
        handle.base_url,
        handle.model,
        handle.kv_pool_tokens.map_or("unknown".into(), |k| format!(
            "{k} tokens ({})",
            handle.kv_pool_source.as_deref().unwrap_or("?")
        ))
    );
    for n in &handle.notices {
        ctx.journal.info.notices.push(Notice::engine(
            NoticeKind::Engine,
            name,
            format!("{name}: {n}"),
        ));
    }
    // A simulator faster than real time, said once per engine: by the plan when
    // its args name `--time-scale`, else here, from what the server reports (a
    // `--config` file's `time_scale`).
    let scale_said = ctx
        .journal
        .info
        .notices
        .iter()
        .any(|n| n.kind == NoticeKind::TimeScale && n.engine.as_deref() == Some(name));
    if let Some(k) = handle.time_scale.filter(|_| !scale_said) {
        ctx.journal.info.notices.push(Notice::engine(
            NoticeKind::TimeScale,
            name,
            format!(
                "{name}: simulated engine running {k}x faster than the GPU it models (time scale {k}): its latencies are 1/{k} and its throughputs {k}x the modelled GPU's"
            ),
        ));
    }
    ctx.journal
        .engine_envs
        .insert(name.to_string(), handle.env.clone());
    let (tel, notice) = telemetry::open(&plan.telemetry, &handle.base_url, &ctx.run.client).await;
    if let Some(n) = notice {
        // One telemetry notice per run, not one per engine (they differ only in
        // the engine's port).
        ctx.notice_once(Notice::new(NoticeKind::Telemetry, n));
    }
    if ctx.journal.gpus.is_empty() {
        ctx.journal.gpus = tel.gpus();
    }
    ctx.refresh_environment();
    http::set_up(ctx, name, spec, handle, tel).await.map(Some)
}
