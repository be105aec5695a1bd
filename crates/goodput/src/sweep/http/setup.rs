//! An engine's set-up before its first trial: the ShareGPT sample, where its KV
//! pool and telemetry come from, its request builder and its load target.

use report::{EngineFailure, FailureKind, Notice, NoticeKind};

use crate::define::requests::{calibrate, Builder, Calibration};
use crate::drive::client::Target;
use crate::drive::engine::EngineHandle;
use crate::measure::telemetry;
use crate::sweep::launch::SweepEngine;
use crate::sweep::{Ctx, Settings};

/// ShareGPT: the run's sample, taken on the first engine (counted by its
/// `/tokenize` when it has one) and sent by every engine; its counts join the
/// journal's workload facts. `false` (the engine's error recorded) when it fails.
pub(super) async fn sample_sharegpt(
    ctx: &mut Ctx<'_>,
    name: &str,
    handle: &SweepEngine,
) -> anyhow::Result<bool> {
    let plan = ctx.run.plan;
    let crate::define::plan::Workload::ShareGpt(w) = &plan.workload else {
        return Ok(true);
    };
    let sampled = w
        .sample_on(&ctx.run.client, &handle.base_url, &handle.model, plan.seed)
        .await;
    match sampled {
        Ok(s) => {
            // A fact of the run, kept in the journal; the report's workload shows it.
            if let serde_json::Value::Object(add) = s.facts() {
                ctx.journal.workload_facts.extend(add);
            }
            if let Some(t) = &w.truncated {
                ctx.notice_once(Notice::new(
                    NoticeKind::Workload,
                    format!("workload: {}: {t}", w.path.display()),
                ));
            }
            Ok(true)
        }
        Err(why) => {
            say!(ctx, "{name}: sampling ShareGPT failed: {why}");
            ctx.journal.sweep.engine(name).error = Some(EngineFailure {
                kind: FailureKind::Workload,
                message: format!("sampling ShareGPT: {why}"),
                ..Default::default()
            });
            ctx.save()?;
            Ok(false)
        }
    }
}

/// Notes in the sweep where the engine's KV pool size and its telemetry come from.
pub(super) fn note_sources(
    ctx: &mut Ctx<'_>,
    name: &str,
    handle: &SweepEngine,
    tel: &telemetry::Telemetry,
) {
    let st = ctx.journal.sweep.engine(name);
    st.kv_pool_tokens = handle.kv_pool_tokens;
    st.kv_pool_source = handle.kv_pool_source.clone();
    st.telemetry_source = tel.source_name().map(str::to_string);
}

/// The engine's request builder, with prompt lengths calibrated by the engine's
/// tokenizer where the workload asks; how they were set goes into the environment.
pub(super) async fn request_builder(
    ctx: &mut Ctx<'_>,
    name: &str,
    handle: &SweepEngine,
) -> Builder {
    let mut builder = Builder {
        workload: ctx.run.plan.workload.clone(),
        model: handle.model.clone(),
        api: handle.api,
        tokens_per_word: 1.0,
        chat_fields: ctx
            .run
            .plan
            .engines
            .get(name)
            .map(|e| crate::define::plan::chat_fields(e, ctx.run.plan.tools.as_ref()))
            .unwrap_or_default(),
        salt: ctx.journal.info.prompt_salt.clone(),
        images: ctx.run.plan.images,
    };
    match calibrate(&builder, &ctx.run.client, &handle.base_url).await {
        Calibration::NotAsked => {}
        Calibration::Calibrated(tpw) => {
            builder.tokens_per_word = tpw;
            ctx.set_prompt_lengths(name, "tokenize");
        }
        Calibration::Failed(why) => {
            ctx.journal.info.notices.push(Notice::engine(
                NoticeKind::PromptLengths,
                name,
                format!(
                    "{name}: prompt lengths are uncalibrated: calibrate = true, but {why}; \
                     input_tokens assume one token per word, so real prompt lengths differ"
                ),
            ));
            ctx.set_prompt_lengths(name, "uncalibrated");
        }
    }
    let context = crate::define::requests::conversation::set_engine_context(
        &mut builder,
        handle.max_model_len,
        name,
    );
    ctx.journal.info.notices.extend(context);
    builder
}

/// One notice per run when TTFT counts connection set-up.
pub(super) fn note_connect_in_ttft(ctx: &mut Ctx<'_>) {
    if ctx.run.opts.ttft_includes_connect {
        let note = "TTFT includes connection set-up where a request opened a new \
                    connection (--ttft-includes-connect)";
        ctx.notice_once(Notice::new(NoticeKind::TtftConnect, note));
    }
}

/// Where the load goes: the engine's endpoint for its API.
pub(super) fn target_of(run: &Settings<'_>, handle: &EngineHandle) -> Target {
    Target::new(
        &handle.base_url,
        handle.api.path(),
        handle.api_key.as_deref(),
    )
    .with_connect_in_ttft(run.opts.ttft_includes_connect)
}
