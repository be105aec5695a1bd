//! One benchmark run each: a closed-loop fidelity run at a number of streams, or an
//! open-loop run at a request rate, against a freshly started simulator, through
//! goodput's own load generator ([`goodput::drive::load::run_trial`]) and client.

use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::figures::{RateFigures, StreamFigures, Usage};
use crate::os::{cpu_time, load_average, machine_cpu_time, process_cpu_time, rss_bytes, RssPeak};
use crate::sim::{Schedule, Sim, SimKind};
use goodput::define::profile::LoadMode;
use goodput::define::requests::Prepared;
use goodput::drive::client::{http_client, Limits, SseLimits, Target};
use goodput::drive::load::{arrival_offsets, run_trial, Trial};
use goodput::drive::record::RequestRecord;
use goodput::stop::Stop;

/// A closed-loop run: `streams` workers for `duration`, each request `tokens` long.
#[derive(Debug, Clone, Copy)]
pub struct StreamRun {
    /// Concurrent streams.
    pub streams: usize,
    /// The simulator's schedule.
    pub schedule: Schedule,
    /// Output tokens per request.
    pub tokens: u32,
    /// How long new requests are sent; in-flight ones then finish.
    pub duration: Duration,
}

/// An open-loop run: Poisson arrivals at `rps` for `duration`.
#[derive(Debug, Clone, Copy)]
pub struct RateRun {
    /// Requests per second.
    pub rps: f64,
    /// The simulator's schedule.
    pub schedule: Schedule,
    /// Output tokens per request.
    pub tokens: u32,
    /// Span of the planned arrivals.
    pub duration: Duration,
    /// Seed of the arrivals.
    pub seed: u64,
}

/// One completion request of `tokens` output tokens (exactly that many).
pub(super) fn request(tokens: u32) -> Prepared {
    let body = serde_json::json!({
        "model": "goodput-sim",
        "prompt": "bench",
        "max_tokens": tokens,
        "min_tokens": tokens,
        "ignore_eos": true,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    Prepared {
        body: Bytes::from(body.to_string()),
        asked: goodput::define::requests::Asked {
            max_tokens: Some(tokens),
            ..Default::default()
        },
        adapter: None,
    }
}

/// `n` requests of `tokens` output tokens on average, each drawn uniformly from
/// `[tokens/2, tokens*3/2]` (seeded): streams that start together drift apart, as
/// real traffic does, instead of finishing and restarting in lockstep forever.
fn varied(tokens: u32, n: usize) -> Vec<Prepared> {
    let (lo, hi) = ((tokens / 2).max(1), tokens + tokens / 2);
    let bodies: Vec<Prepared> = (lo..=hi).map(request).collect();
    let mut rng = StdRng::seed_from_u64(7);
    (0..n)
        .map(|_| bodies[rng.gen_range(0..bodies.len())].clone())
        .collect()
}

fn limits() -> Limits {
    Limits {
        request_timeout: Duration::from_secs(600),
        stall_timeout: Some(Duration::from_secs(60)),
        sse: SseLimits::default(),
    }
}

/// A trial of `requests` at level `x`, as `goodput run` builds one.
pub(super) fn trial(
    engine: &str,
    x: f64,
    mode: LoadMode,
    offsets: Vec<u64>,
    requests: Vec<Prepared>,
) -> Trial {
    Trial {
        engine: engine.into(),
        x,
        level: x,
        index: 0,
        mode,
        max_concurrency: None,
        offsets,
        requests,
        limits: limits(),
        timeout: None,
        grace: Duration::from_secs(120),
        sent: None,
        attempt: 0,
        first_index: 0,
    }
}

/// One run's simulator, its target and the HTTP client, with this process's RSS
/// from before the simulator started (the base of the run's RSS growth).
pub(super) struct Session {
    sim: Sim,
    target: Target,
    client: reqwest::Client,
    rss_before: u64,
}

impl Session {
    /// Starts a simulator serving `schedule` and a client for `connections`.
    pub(super) async fn start(
        kind: &SimKind,
        schedule: Schedule,
        connections: usize,
    ) -> anyhow::Result<Session> {
        let rss_before = rss_bytes();
        let sim = Sim::start(kind, schedule)
            .await
            .context("cannot start the simulator")?;
        let target = Target::new(&sim.base_url, "/v1/completions", None);
        let client = match http_client(connections) {
            Ok(c) => c,
            Err(e) => {
                sim.stop().await;
                return Err(anyhow::Error::new(e).context("cannot build the HTTP client"));
            }
        };
        Ok(Session {
            sim,
            target,
            client,
            rss_before,
        })
    }

    /// The HTTP client and the target, for a trial of the caller's own.
    pub(super) fn client_and_target(&self) -> (reqwest::Client, Target) {
        (self.client.clone(), self.target.clone())
    }

    /// Opens the connections the measured run uses, as `goodput run` does before a
    /// trial ([`Target::preconnect`]).
    pub(super) async fn warm_up(&self, connections: usize) -> anyhow::Result<()> {
        self.target
            .preconnect(connections)
            .await
            .map_err(|e| anyhow::anyhow!("cannot open {connections} connections: {e}"))
    }

    /// Runs `t` with the client's CPU time and peak RSS measured around it;
    /// `stop_after` turns the trial's stop signal on after that long.
    async fn measured(
        &self,
        t: Trial,
        stop_after: Option<Duration>,
    ) -> (Vec<RequestRecord>, Usage) {
        let stop = Stop::unset();
        let timer = stop_after.map(|d| {
            let stop = stop.clone();
            tokio::spawn(async move {
                tokio::time::sleep(d).await;
                stop.set();
            })
        });
        let peak = RssPeak::start(Duration::from_millis(50));
        let sim_pid = self.sim.pid();
        let sim_cpu = || sim_pid.and_then(process_cpu_time);
        let (sim0, machine0, wall0, cpu0) =
            (sim_cpu(), machine_cpu_time(), Instant::now(), cpu_time());
        let (client, target) = (self.client.clone(), self.target.clone());
        let records = run_trial(client, target, t, &stop, Box::new(|_| {})).await;
        let cpu = cpu_time().saturating_sub(cpu0);
        let wall = wall0.elapsed();
        let sim_cpu = sim_cpu().zip(sim0).map(|(b, a)| b.saturating_sub(a));
        let machine_cpu = machine_cpu_time()
            .zip(machine0)
            .map(|(b, a)| b.saturating_sub(a));
        let rss_peak = peak.finish();
        let rss_delta = rss_peak.saturating_sub(self.rss_before);
        if let Some(t) = timer {
            t.abort();
        }
        let usage = Usage {
            cpu,
            rss_delta,
            rss_peak,
            load_avg: load_average(),
            sim_cpu,
            machine_cpu,
            wall,
        };
        (records, usage)
    }

    /// Drops the client (closing its connections), then stops the simulator.
    pub(super) async fn stop(self) {
        drop(self.client);
        self.sim.stop().await;
    }
}

/// A closed-loop fidelity run: its figures and its records.
pub async fn streams(
    kind: &SimKind,
    run: StreamRun,
) -> anyhow::Result<(StreamFigures, Vec<RequestRecord>)> {
    let session = Session::start(kind, run.schedule, run.streams).await?;
    let result = async {
        session.warm_up(run.streams).await?;
        // Enough requests that no worker runs out before the stop signal.
        let per_request_s =
            (run.schedule.ttft_ms + run.schedule.itl_ms * f64::from(run.tokens)) / 1e3;
        let rounds =
            (run.duration.as_secs_f64() / per_request_s.max(0.01) * 2.0).ceil() as usize + 2;
        let n = run.streams.saturating_mul(rounds).min(5_000_000);
        let requests = varied(run.tokens, n);
        let t = trial(
            &format!("streams-itl{}ms", run.schedule.itl_ms),
            run.streams as f64,
            LoadMode::Concurrency,
            Vec::new(),
            requests,
        );
        let (records, usage) = session.measured(t, Some(run.duration)).await;
        let figures = StreamFigures::from_records(
            run.streams,
            run.schedule.ttft_ms,
            run.schedule.itl_ms,
            &records,
            usage,
        );
        Ok::<_, anyhow::Error>((figures, records))
    }
    .await;
    session.stop().await;
    result
}

/// An open-loop run at a request rate: its figures and its records.
pub async fn rate(
    kind: &SimKind,
    run: RateRun,
) -> anyhow::Result<(RateFigures, Vec<RequestRecord>)> {
    let per_request_s = (run.schedule.ttft_ms + run.schedule.itl_ms * f64::from(run.tokens)) / 1e3;
    // Twice the mean number in flight, so sends rarely wait for a new connection.
    let connections = ((run.rps * per_request_s * 2.0).ceil() as usize).clamp(1, 4000);
    let session = Session::start(kind, run.schedule, connections).await?;
    let result = async {
        session.warm_up(connections).await?;
        let n = (run.rps * run.duration.as_secs_f64()).round().max(1.0) as usize;
        let offsets = arrival_offsets(run.rps, 1.0, n, run.seed);
        let t = trial(
            "rate",
            run.rps,
            LoadMode::Rate,
            offsets.clone(),
            vec![request(run.tokens); n],
        );
        let (records, usage) = session.measured(t, None).await;
        let figures = RateFigures::from_records(run.rps, &offsets, &records, usage);
        Ok::<_, anyhow::Error>((figures, records))
    }
    .await;
    session.stop().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIM: SimKind = SimKind::InProcess { threads: 1 };

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_closed_loop_run_measures_every_chunk() {
        let run = StreamRun {
            streams: 4,
            schedule: Schedule {
                ttft_ms: 5.0,
                itl_ms: 1.0,
            },
            tokens: 8,
            duration: Duration::from_millis(200),
        };
        let (f, records) = streams(&SIM, run).await.unwrap();
        assert_eq!(records.len(), f.ok + f.failed);
        assert_eq!(f.failed, 0);
        assert!(f.ok >= 4, "{f:?}");
        // Lengths vary around 8 (4..=12 tokens); every one arrived whole.
        assert_eq!(f.tokens, f.chunks);
        let asked: u64 = records
            .iter()
            .map(|r| u64::from(r.requested_tokens.unwrap()))
            .sum();
        assert_eq!(f.chunks, asked);
        // Every chunk carried the probe, and nothing arrives before it was written
        // or before the schedule allowed (causality, not a timing tolerance).
        assert_eq!(f.lag.n, f.chunks as usize);
        assert!(f.lag.p50.unwrap() >= 0.0);
        assert!(f.ttft_err.p50.unwrap() >= 0.0);
        assert_eq!(f.itl_err.n as u64, f.chunks - f.ok as u64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_rate_run_sends_every_planned_request() {
        let run = RateRun {
            rps: 50.0,
            schedule: Schedule {
                ttft_ms: 1.0,
                itl_ms: 1.0,
            },
            tokens: 2,
            duration: Duration::from_millis(200),
            seed: 1,
        };
        let (f, _) = rate(&SIM, run).await.unwrap();
        assert_eq!(f.planned, 10);
        assert_eq!((f.sent, f.ok), (10, 10));
        assert!(f.send_lag.p50.unwrap() >= 0.0);
    }
}
