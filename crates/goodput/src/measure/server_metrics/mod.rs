//! The engine's side of every trial: its Prometheus `/metrics`, sampled beside the
//! GPU while the trial runs, summarised per point, and checked against what the
//! client counted.
//!
//! # Layout
//! - [`catalogue`]: the metric names of each engine (vLLM, SGLang, llama.cpp, TGI;
//!   the simulator speaks vLLM's), with the sources they were read from.
//! - [`scrape`]: one bounded, timed GET of `/metrics`, parsed into a [`Snapshot`].
//! - [`ServerSampler`]: the first scrape just before the first request is sent,
//!   then one every `interval_ms` on its own task (it never delays a request), and
//!   the last after the last request ended; [`ServerSampler::finish`] turns them
//!   into the trial's [`ServerTrial`].
//! - [`summary`]: trials to the point's `ServerSummary`, and the cross-check of
//!   server-counted tokens and requests against the client's.
//!
//! A failing, slow or malformed endpoint never fails a trial: the trial's `server`
//! says why it has nothing, and the run gets one notice per engine.

pub mod catalogue;
pub mod scrape;
pub mod summary;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use indexmap::IndexMap;
use report::{Notice, NoticeKind, ServerCounts, ServerSample, ServerTrial};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::drive::record::RequestRecord;
use crate::measure::sampling::{sample_until_stopped, Ticks};
pub use catalogue::Catalogue;
pub use report::server::{cross_check, Mismatch};
pub use scrape::{Kind, ScrapeError, Snapshot};
pub use summary::summarize;

/// Consecutive failed scrapes after which a trial's sampler stops.
const MAX_CONSECUTIVE_FAILURES: u32 = 5;
/// Names kept in `gauges_max` and `counter_deltas` of an unknown engine.
pub const MAX_GENERIC_NAMES: usize = 200;
/// Longest wait for one scrape.
const MAX_SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);
/// Shortest wait for one scrape.
const MIN_SCRAPE_TIMEOUT: Duration = Duration::from_millis(250);
/// Extra scrapes after the trial, until the counters stop moving (an engine may
/// publish its counters a step after the stream ended).
const SETTLE_SCRAPES: u32 = 4;
/// Between settling scrapes.
const SETTLE_GAP: Duration = Duration::from_millis(50);

pub use crate::define::profile::ServerMetricsSpec;

/// The `/metrics` URL of an engine at `base_url`.
pub fn metrics_url(base_url: &str) -> String {
    format!("{}/metrics", base_url.trim_end_matches('/'))
}

/// Samples shared between the background task and [`ServerSampler::finish`].
#[derive(Debug, Default)]
struct Shared {
    samples: Vec<ServerSample>,
    stride: u64,
    ticks: u64,
    gauges_max: IndexMap<String, f64>,
    last: Option<Snapshot>,
    reset: bool,
    error: Option<String>,
    truncated: bool,
    /// Non-finite values dropped from the trial's scrapes.
    non_finite: usize,
}

/// One trial's sampling of the engine's `/metrics`.
#[derive(Debug)]
pub struct ServerSampler {
    client: reqwest::Client,
    url: String,
    spec: ServerMetricsSpec,
    catalogue: &'static Catalogue,
    first: Option<Snapshot>,
    start: Instant,
    /// Cancelled when the trial's sampling ends.
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
    shared: Arc<Mutex<Shared>>,
}

impl ServerSampler {
    /// Takes the first scrape (the counters' baseline) and starts sampling every
    /// interval in the background. Disabled, or without an answer, it samples
    /// nothing and [`ServerSampler::finish`] says why. Call just before the first
    /// request is sent.
    pub async fn start(
        client: &reqwest::Client,
        base_url: &str,
        spec: &ServerMetricsSpec,
    ) -> ServerSampler {
        let url = metrics_url(base_url);
        let mut s = ServerSampler {
            client: client.clone(),
            url,
            spec: spec.clone(),
            catalogue: &catalogue::GENERIC,
            first: None,
            start: Instant::now(),
            stop: CancellationToken::new(),
            task: None,
            shared: Arc::new(Mutex::new(Shared {
                stride: 1,
                ..Shared::default()
            })),
        };
        if !spec.enabled {
            return s;
        }
        let first = scrape::scrape(&s.client, &s.url, s.timeout(), spec.max_bytes).await;
        let first = match first {
            Ok(f) => f,
            Err(e) => {
                s.lock().error = Some(format!("{}: {e}", s.url));
                return s;
            }
        };
        s.catalogue = catalogue::detect(first.values.keys().map(String::as_str));
        {
            let mut sh = s.lock();
            sh.truncated = first.truncated;
            sh.non_finite = first.non_finite;
            sh.last = Some(first.clone());
        }
        s.first = Some(first);
        s.start = Instant::now();
        s.task = Some(tokio::spawn(sample_loop(
            s.client.clone(),
            s.url.clone(),
            s.spec.clone(),
            s.timeout(),
            s.catalogue,
            s.start,
            s.stop.clone(),
            s.shared.clone(),
        )));
        s
    }

    /// Sampling was enabled and the first scrape failed (no answer, not
    /// Prometheus text): the engine's `/metrics` is not worth asking again.
    pub fn first_failed(&self) -> bool {
        self.spec.enabled && self.first.is_none()
    }

    fn timeout(&self) -> Duration {
        (Duration::from_millis(self.spec.interval_ms) * 2)
            .clamp(MIN_SCRAPE_TIMEOUT, MAX_SCRAPE_TIMEOUT)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        match self.shared.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Stops sampling, takes the last scrape (repeated until the counters settle),
    /// and returns the trial's server side with the client's counts from `records`
    /// beside it. `None` when sampling is disabled.
    pub async fn finish(mut self, records: &[RequestRecord]) -> Option<ServerTrial> {
        if !self.spec.enabled {
            return None;
        }
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let mut last = None;
        if self.first.is_some() {
            last = self.settled_last().await;
        }
        let c = self.catalogue;
        let first = self.first.take();
        let mut sh = std::mem::take(&mut *self.lock());
        let mut trial = ServerTrial {
            catalogue: c.name.to_string(),
            ..ServerTrial::default()
        };
        client_counts(&mut trial, records);
        match (&first, &last) {
            (Some(a), Some(b)) => {
                sh.reset |= went_down(a, b);
                if let Some(prev) = &sh.last {
                    sh.reset |= went_down(prev, b);
                }
                if !sh.reset {
                    counter_deltas(&mut trial, c, a, b);
                }
                trial.counter_reset = sh.reset;
                if b.truncated {
                    sh.truncated = true;
                }
                sh.non_finite += b.non_finite;
            }
            (Some(_), None) => {
                sh.error.get_or_insert_with(|| {
                    format!("{}: no answer after the trial; counters unknown", self.url)
                });
            }
            _ => {}
        }
        if sh.truncated && sh.error.is_none() {
            sh.error = Some(format!(
                "{}: answer longer than {} bytes; the rest was ignored",
                self.url, self.spec.max_bytes
            ));
        }
        if sh.non_finite > 0 && sh.error.is_none() {
            sh.error = Some(format!(
                "{}: values that were not finite (+Inf, NaN or an overflowing sum) were left out ({} over the trial's scrapes)",
                self.url, sh.non_finite
            ));
        }
        trial.error = sh.error;
        trial.gauges_max = sh.gauges_max;
        trial.samples = sh.samples;
        Some(trial)
    }

    /// The last scrape, repeated (bounded) until the counters stop moving.
    async fn settled_last(&self) -> Option<Snapshot> {
        let timeout = self.timeout();
        let max = self.spec.max_bytes;
        let mut last = scrape::scrape(&self.client, &self.url, timeout, max)
            .await
            .ok()?;
        for _ in 0..SETTLE_SCRAPES {
            tokio::time::sleep(SETTLE_GAP).await;
            let Ok(next) = scrape::scrape(&self.client, &self.url, timeout, max).await else {
                break;
            };
            let same = counters(&last, self.catalogue) == counters(&next, self.catalogue);
            last = next;
            if same {
                break;
            }
        }
        Some(last)
    }
}

impl Drop for ServerSampler {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The notice about an engine whose `/metrics` could not be read in this trial
/// (`None` when it could); a run keeps the first one (`RunInfo::notice_once`).
pub fn notice(engine: &str, trial: Option<&ServerTrial>) -> Option<Notice> {
    let why = trial.and_then(|t| t.error.as_deref())?;
    Some(Notice::engine(
        NoticeKind::ServerMetrics,
        engine,
        format!(
            "{engine}: server metrics: {why} (the trials ran; their `server` fields are incomplete; after a first scrape that failed, /metrics is not asked again this run)"
        ),
    ))
}

/// The catalogue's counters in a snapshot, in role order.
fn counters(s: &Snapshot, c: &Catalogue) -> Vec<Option<f64>> {
    catalogue::counter_roles(c)
        .iter()
        .map(|names| s.first(names))
        .collect()
}

/// A counter (of the catalogue, or any declared counter) is lower in `b` than in `a`.
fn went_down(a: &Snapshot, b: &Snapshot) -> bool {
    a.values.iter().any(|(name, va)| {
        a.kinds.get(name) == Some(&Kind::Counter) && b.values.get(name).is_some_and(|vb| vb < va)
    }) || {
        let c = catalogue::detect(a.values.keys().map(String::as_str));
        counters(a, c)
            .iter()
            .zip(counters(b, c))
            .any(|(x, y)| matches!((x, y), (Some(x), Some(y)) if y < *x))
    }
}

/// What the client counted, beside the server's counts.
fn client_counts(t: &mut ServerTrial, records: &[RequestRecord]) {
    t.client_completed = Some(records.iter().filter(|r| r.ok()).count() as u64);
    // A lying usage block (kept in its `bad_usage` record) must not overflow a sum.
    let sum = |v: &mut dyn Iterator<Item = u64>| v.fold(0u64, u64::saturating_add);
    t.client_generation_tokens = Some(sum(&mut records.iter().filter_map(|r| r.completion_tokens)));
    let prompts: Vec<u64> = records.iter().filter_map(|r| r.prompt_tokens).collect();
    t.client_prompt_tokens = (!prompts.is_empty()).then(|| sum(&mut prompts.iter().copied()));
}

/// Counter deltas between the first and the last scrape.
fn counter_deltas(t: &mut ServerTrial, c: &Catalogue, a: &Snapshot, b: &Snapshot) {
    let d = |names: &[&str]| match (a.first(names), b.first(names)) {
        (Some(x), Some(y)) => Some(y - x).filter(|v| v.is_finite()),
        (None, Some(y)) => Some(y),
        _ => None,
    };
    t.counts = ServerCounts {
        preemptions: d(c.preemptions),
        prompt_tokens: d(c.prompt_tokens),
        generation_tokens: d(c.generation_tokens),
        requests_finished: d(c.requests_finished),
    };
    t.prefix_queries = d(c.prefix_queries);
    t.prefix_hits = d(c.prefix_hits);
    t.spec_draft_tokens = d(c.spec_draft);
    t.spec_accepted_tokens = d(c.spec_accepted);
    t.iteration_tokens_sum = d(c.iteration_sum);
    t.iteration_steps = d(c.iteration_count);
    if c.name == catalogue::GENERIC.name {
        for (name, vb) in &b.values {
            if t.counter_deltas.len() >= MAX_GENERIC_NAMES {
                break;
            }
            if b.kinds.get(name) == Some(&Kind::Counter) {
                let va = a.values.get(name).copied().unwrap_or(0.0);
                if (vb - va).is_finite() {
                    t.counter_deltas.insert(name.clone(), vb - va);
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn sample_loop(
    client: reqwest::Client,
    url: String,
    spec: ServerMetricsSpec,
    timeout: Duration,
    c: &'static Catalogue,
    start: Instant,
    stop: CancellationToken,
    shared: Arc<Mutex<Shared>>,
) {
    let interval = Duration::from_millis(spec.interval_ms.max(1));
    let ticks = Ticks {
        start,
        first: start + interval,
        interval,
    };
    let max_samples = spec.max_samples.max(2) as usize;
    let lock = || match shared.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let (client, url_ref) = (&client, &url);
    let read = move || scrape::scrape(client, url_ref, timeout, spec.max_bytes);
    let keep = |t_s, snap| record(&mut lock(), c, t_s, snap, max_samples);
    if let Some(e) = sample_until_stopped(ticks, stop, MAX_CONSECUTIVE_FAILURES, read, keep).await {
        lock().error = Some(format!(
            "{url}: {e} ({MAX_CONSECUTIVE_FAILURES} scrapes in a row failed; sampling stopped)"
        ));
    }
}

/// Adds one scrape to the trial's samples (thinned to `max_samples`).
fn record(sh: &mut Shared, c: &Catalogue, t_s: f64, snap: Snapshot, max_samples: usize) {
    if let Some(prev) = &sh.last {
        sh.reset |= went_down(prev, &snap);
    }
    sh.truncated |= snap.truncated;
    sh.non_finite += snap.non_finite;
    if c.name == catalogue::GENERIC.name {
        for (name, v) in &snap.values {
            if snap.kinds.get(name) != Some(&Kind::Gauge) {
                continue;
            }
            let full = sh.gauges_max.len() >= MAX_GENERIC_NAMES;
            match sh.gauges_max.get_mut(name) {
                Some(m) => *m = m.max(*v),
                None if !full => {
                    sh.gauges_max.insert(name.clone(), *v);
                }
                None => {}
            }
        }
    }
    let ticks = sh.ticks;
    sh.ticks += 1;
    if ticks.is_multiple_of(sh.stride) {
        sh.samples.push(ServerSample {
            t_s,
            running: snap.first(c.running),
            waiting: snap.first(c.waiting),
            kv_usage: snap.first(c.kv_usage),
        });
        if sh.samples.len() >= max_samples {
            // Keep every other sample and sample half as often from now on.
            let mut i = 0;
            sh.samples.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            sh.stride *= 2;
        }
    }
    sh.last = Some(snap);
}

#[cfg(test)]
mod tests;
