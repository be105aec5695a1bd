//! Sending one trial's load: its requests and arrivals (a load shard's share),
//! the warm-up, pre-opened connections, the shards' start barrier, and the
//! measurement with the GPU, server metrics and speculative-decoding counters.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use report::{GpuSample, Notice, NoticeKind, ServerTrial, SpecDecode};

use super::At;
use crate::define::profile::LoadMode;
use crate::define::requests::adapters::assign as assign_adapters;
use crate::define::requests::conversation::Conversations;
use crate::define::requests::{Builder, Prepared};
use crate::drive::client::{Limits, SseLimits, Target};
use crate::drive::engine::{EngineHandle, SpecCounters};
use crate::drive::load::share;
use crate::drive::load::stall::StallWatch;
use crate::drive::load::{arrival_offsets, run_conversation_trial, run_trial, Trial};
use crate::drive::record::RequestRecord;
use crate::measure::server_metrics::ServerSampler;
use crate::measure::telemetry;
use crate::sweep::{Ctx, Settings};

/// A trial of `requests` at the trial's load level, with the plan's limits.
pub(super) fn trial_of(
    run: &Settings<'_>,
    at: &At<'_>,
    requests: Vec<Prepared>,
    mode: LoadMode,
    offsets: Vec<u64>,
) -> Trial {
    let plan = run.plan;
    Trial {
        engine: at.name.into(),
        x: at.x,
        level: at.x,
        index: at.t,
        attempt: at.attempt,
        first_index: 0,
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
        grace: run.opts.grace,
        sent: None,
    }
}

/// The plan's warm-up requests (a closed loop, not recorded), when it has any;
/// returns what the server's metrics said over them.
pub(super) async fn warm_up(
    run: &Settings<'_>,
    at: &At<'_>,
    handle: &EngineHandle,
    builder: &Builder,
    target: &Target,
) -> Option<ServerTrial> {
    let plan = run.plan;
    if plan.warmup_requests == 0 {
        return None;
    }
    let sampler = start_server_sampler(run, handle).await;
    let mut warm_requests = builder.build(plan.warmup_requests, plan.seed, u64::MAX - at.lane);
    let adapters = plan.adapters.as_ref();
    assign_adapters(&mut warm_requests, adapters, plan.seed, u64::MAX - at.lane);
    let warm = trial_of(run, at, warm_requests, LoadMode::Concurrency, Vec::new());
    let warm_records = run_trial(
        run.client.clone(),
        target.clone(),
        warm,
        &run.stop,
        Box::new(|_| {}),
    )
    .await;
    sampler.finish(&warm_records).await
}

/// What one trial sends: its requests (none for a conversation trial, whose bodies
/// are made from its sessions as the replies come), its send offsets, and the whole
/// trial's index of its first request (a load shard's run starts past 0).
pub(super) struct TrialLoad {
    pub(super) requests: Vec<Prepared>,
    pub(super) conversations: Option<Conversations>,
    pub(super) offsets: Vec<u64>,
    pub(super) first: u32,
}

/// The trial's requests, their send offsets (an open loop's arrivals at `x_sent`,
/// or the trace's), and the whole trial's index of the first: a load shard sends
/// its run of the whole trial's requests at its share of x.
pub(super) fn shard_requests(
    run: &Settings<'_>,
    at: &At<'_>,
    builder: &Builder,
    x_sent: f64,
) -> anyhow::Result<TrialLoad> {
    let plan = run.plan;
    // A conversation trial's bodies are made from its sessions as the replies come.
    let conversations = builder.conversations(plan.requests_per_trial, plan.seed, at.lane);
    if conversations.is_some() && run.opts.load_shard.is_some() {
        anyhow::bail!("a conversation workload cannot be split over load shards yet");
    }
    let mut requests = match conversations {
        Some(_) => Vec::new(),
        None => builder.build(plan.requests_per_trial, plan.seed, at.lane),
    };
    assign_adapters(&mut requests, plan.adapters.as_ref(), plan.seed, at.lane);
    let (first, seed) = match &run.opts.load_shard {
        None => (0, plan.seed),
        Some(l) => {
            let (first, len) = share::split(requests.len() as u64, l.index, l.count);
            requests.truncate((first + len) as usize);
            requests.drain(..first as usize);
            (
                first as u32,
                share::arrival_seed(plan.seed, l.index, l.count),
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

/// What a measured trial returned.
pub(super) struct Measured {
    pub(super) records: Vec<RequestRecord>,
    pub(super) gpu_samples: Vec<GpuSample>,
    pub(super) energy: Option<report::TrialEnergy>,
    pub(super) spec_before: Option<SpecCounters>,
    pub(super) spec_after: Option<SpecCounters>,
    /// Still to be finished with the records.
    pub(super) server: ServerSampler,
    /// Unix time (seconds) when the load started.
    pub(super) started_unix_s: f64,
    /// The latest the client's timer woke during the load, ms ([`StallWatch`]).
    pub(super) client_stall_ms: f64,
}

/// Sends the trial's load with a progress bar, the speculative-decoding counters
/// scraped before and after, the server's metrics and the GPU sampled during it.
pub(super) async fn measure(
    ctx: &mut Ctx<'_>,
    at: &At<'_>,
    handle: &EngineHandle,
    tel: &telemetry::Telemetry,
    target: &Target,
    (trial, conversations): (Trial, Option<Conversations>),
    label: String,
) -> Measured {
    let plan = ctx.run.plan;
    let sent = Arc::new(AtomicU64::new(0));
    let (bar, on_record) =
        ctx.progress
            .trial_bar(label, plan.requests_per_trial as u64, sent.clone());
    let spec_before = spec_counters(ctx, handle).await;
    let server = start_server_sampler(&ctx.run, handle).await;
    start_together(ctx, at).await;
    let started_unix_s = crate::sweep::unix_now();
    let sampler = tel.start_trial();
    let trial = Trial {
        sent: Some(sent),
        ..trial
    };
    let (client, stop) = (ctx.run.client.clone(), &ctx.run.stop);
    let watch = StallWatch::start();
    let records = match conversations {
        Some(c) => run_conversation_trial(client, target.clone(), trial, c, stop, on_record).await,
        None => run_trial(client, target.clone(), trial, stop, on_record).await,
    };
    let client_stall_ms = watch.finish().await;
    let (gpu_samples, energy) = sampler.finish_with_energy().await;
    let spec_after = spec_counters(ctx, handle).await;
    bar.finish_and_clear();
    Measured {
        records,
        gpu_samples,
        energy,
        spec_before,
        spec_after,
        server,
        started_unix_s,
        client_stall_ms,
    }
}

/// The trial's sampler of the engine's `/metrics`: the profile's, or a disabled
/// one once a first scrape has failed in this run (that trial's notice says why),
/// so a `/metrics` that hangs costs one scrape timeout per run, not two per trial.
async fn start_server_sampler(run: &Settings<'_>, handle: &EngineHandle) -> ServerSampler {
    let spec = &run.plan.server_metrics;
    if handle.metrics_given_up() {
        let off = crate::measure::server_metrics::ServerMetricsSpec {
            enabled: false,
            ..spec.clone()
        };
        return ServerSampler::start(&run.client, &handle.base_url, &off).await;
    }
    let sampler = ServerSampler::start(&run.client, &handle.base_url, spec).await;
    if sampler.first_failed() {
        handle.give_up_metrics();
    }
    sampler
}

/// The engine's speculative-decoding counters, unless `[server_metrics]` is
/// disabled (then `/metrics` is not asked at all); a scrape that fails is a notice,
/// once, and the engine's `/metrics` is not asked for them again.
async fn spec_counters(ctx: &mut Ctx<'_>, handle: &EngineHandle) -> Option<SpecCounters> {
    if !ctx.run.plan.server_metrics.enabled {
        return None;
    }
    match handle.scrape_spec_counters().await {
        Ok(c) => c,
        Err(why) => {
            ctx.journal.info.notices.push(Notice::engine(
                NoticeKind::SpecDecode,
                &handle.name,
                format!(
                    "{}: speculative-decoding counters: {why}; /metrics is not asked again this run (neither for them nor for the server metrics)",
                    handle.name
                ),
            ));
            None
        }
    }
}

/// The trial's speculative decoding, from the counters before and after it (none
/// when the engine drafted nothing).
pub(super) fn spec_decode(
    before: Option<SpecCounters>,
    after: Option<SpecCounters>,
) -> Option<SpecDecode> {
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

/// Opens, before a trial, the connections its load needs (kept alive between
/// trials), so that TTFT measures the engine and not TCP set-up: `x` for a closed
/// loop, one second of arrivals for an open one; at most `max_concurrency` and the
/// trial's request count. A failure is a notice: requests then connect as they go,
/// and each records its `connect` time.
pub(super) async fn preconnect(ctx: &mut Ctx<'_>, name: &str, target: &Target, x: f64) {
    let plan = ctx.run.plan;
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
        ctx.journal.info.notices.push(Notice::engine(
            NoticeKind::Connections,
            name,
            format!(
                "{name}: x={x}: could not open {n} connections before the trial ({e}); \
                 requests opened their own (see each record's `connect`)"
            ),
        ));
    }
}

/// A load shard with a barrier waits for the other clients, so that the `N`
/// clients start the trial at one wall-clock instant; a barrier that fails is a
/// notice and the trial starts alone.
pub(super) async fn start_together(ctx: &mut Ctx<'_>, at: &At<'_>) {
    let At {
        name,
        x,
        t,
        attempt,
        ..
    } = *at;
    let Some(l) = ctx.run.opts.load_shard.clone() else {
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
        .until(share::barrier(dir, &key, l.index, l.count))
        .await;
    if let Some(Err(why)) = waited {
        ctx.journal.info.notices.push(Notice::engine(
            NoticeKind::LoadShard,
            name,
            format!("{name}: x={x} trial {}: {why}; it started alone", t + 1),
        ));
    }
}
