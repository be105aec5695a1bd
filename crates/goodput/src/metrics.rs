//! Every metric, derived from [`RequestRecord`]s in one place. Pure: no clock, no I/O.
//!
//! Definitions (also in README.md, "Metrics"):
//! - **TTFT** = first content-bearing chunk − send time.
//! - **E2EL** = last content-bearing chunk − send time.
//! - **output tokens** = `usage.completion_tokens`; without usage, the number of
//!   content chunks, and the request is counted as *estimated*.
//! - **TPOT** = (E2EL − TTFT) / (output tokens − 1), for requests of more than one
//!   output token. A chunk may carry several tokens (speculative decoding): TPOT
//!   counts tokens, ITL counts chunks.
//! - **ITL** = gaps between successive content chunks, pooled over the trial's requests.
//! - **good** request: succeeded, TTFT ≤ `slo.ttft_ms`, TPOT ≤ `slo.tpot_ms` (a
//!   one-token request has TPOT 0 here) and, when given, E2EL ≤ `slo.e2el_ms`.
//! - **trial duration** = first send → last completion (of any request of the trial);
//!   output_throughput = output tokens of successful requests / duration;
//!   request_throughput = successful requests / duration; goodput_rps = good / duration.
//! - Per-trial median and p99: numpy's linear interpolation ([`quantile_linear`]).
//! - Per point: each scalar summarised over trials as `{median,min,max,n}`; the
//!   quantile grids pool the per-request TTFT and TPOT of all trials with the
//!   "lower" rule ([`quantile_lower`]) — the same per-request values as the scalars.

use indexmap::IndexMap;
use report::stats::{quantile_linear, quantile_lower, sort_values};
use report::{Point, Stat};

use crate::profile::SloSpec;
use crate::record::RequestRecord;

const NS_PER_MS: f64 = 1e6;

/// Metrics of one successful request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMetrics {
    /// Time to first token, ms.
    pub ttft_ms: f64,
    /// End-to-end latency, ms.
    pub e2el_ms: f64,
    /// Time per output token, ms; `None` for a one-token request.
    pub tpot_ms: Option<f64>,
    /// Output tokens.
    pub output_tokens: u64,
    /// Met the SLO.
    pub good: bool,
}

/// Derives a request's metrics; `None` when it failed or streamed no content.
pub fn request_metrics(r: &RequestRecord, slo: &SloSpec) -> Option<RequestMetrics> {
    if !r.ok() {
        return None;
    }
    let first = r.chunks.first()?;
    let last = r.chunks.last()?;
    let ttft_ms = first.t.saturating_sub(r.sent) as f64 / NS_PER_MS;
    let e2el_ms = last.t.saturating_sub(r.sent) as f64 / NS_PER_MS;
    let output_tokens = r.completion_tokens.unwrap_or(r.chunks.len() as u64);
    let tpot_ms = (output_tokens > 1).then(|| (e2el_ms - ttft_ms) / (output_tokens - 1) as f64);
    let good = slo.ttft_ms.is_none_or(|b| ttft_ms <= b)
        && slo.tpot_ms.is_none_or(|b| tpot_ms.unwrap_or(0.0) <= b)
        && slo.e2el_ms.is_none_or(|b| e2el_ms <= b);
    Some(RequestMetrics {
        ttft_ms,
        e2el_ms,
        tpot_ms,
        output_tokens,
        good,
    })
}

/// Metrics of one trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialMetrics {
    /// Successful requests.
    pub completed: u64,
    /// Failed requests.
    pub failed: u64,
    /// Good requests.
    pub good: u64,
    /// Failed requests by error label.
    pub errors: IndexMap<String, u64>,
    /// Requests whose token count was estimated.
    pub estimated: u64,
    /// First send to last completion, s; `None` when nothing was sent.
    pub duration_s: Option<f64>,
    /// Output tokens / s.
    pub output_throughput: Option<f64>,
    /// Successful requests / s.
    pub request_throughput: Option<f64>,
    /// Good requests / s.
    pub goodput_rps: Option<f64>,
    /// Median and p99 TTFT, ms.
    pub median_ttft_ms: Option<f64>,
    /// p99 TTFT, ms.
    pub p99_ttft_ms: Option<f64>,
    /// Median TPOT, ms.
    pub median_tpot_ms: Option<f64>,
    /// p99 TPOT, ms.
    pub p99_tpot_ms: Option<f64>,
    /// Median ITL, ms.
    pub median_itl_ms: Option<f64>,
    /// p99 ITL, ms.
    pub p99_itl_ms: Option<f64>,
    /// Median E2EL, ms.
    pub median_e2el_ms: Option<f64>,
    /// p99 E2EL, ms.
    pub p99_e2el_ms: Option<f64>,
    /// Mean prompt tokens (from usage).
    pub mean_input_tokens: Option<f64>,
    /// Mean output tokens.
    pub mean_output_tokens: Option<f64>,
    /// Requests sent per second between the first and last send (rate mode).
    pub achieved_rate: Option<f64>,
    /// p99 of sent − scheduled, ms.
    pub p99_send_lag_ms: Option<f64>,
    /// Per-request TTFTs of successful requests, ms (for the pooled grid).
    pub ttfts_ms: Vec<f64>,
    /// Per-request TPOTs (multi-token successful requests), ms.
    pub tpots_ms: Vec<f64>,
}

fn median_p99(v: &mut Vec<f64>) -> (Option<f64>, Option<f64>) {
    sort_values(v);
    (quantile_linear(v, 0.5), quantile_linear(v, 0.99))
}

/// Derives a trial's metrics from its records.
pub fn trial_metrics(records: &[RequestRecord], slo: &SloSpec) -> TrialMetrics {
    let mut m = TrialMetrics::default();
    let mut e2els = Vec::new();
    let mut itls = Vec::new();
    let mut out_tokens = 0u64;
    let mut in_tokens = (0u64, 0u64);
    let mut lags = Vec::with_capacity(records.len());
    for r in records {
        lags.push(r.sent.saturating_sub(r.scheduled) as f64 / NS_PER_MS);
        match request_metrics(r, slo) {
            Some(rm) => {
                m.completed += 1;
                m.good += rm.good as u64;
                m.estimated += r.tokens_estimated as u64;
                out_tokens += rm.output_tokens;
                if let Some(p) = r.prompt_tokens {
                    in_tokens = (in_tokens.0 + p, in_tokens.1 + 1);
                }
                m.ttfts_ms.push(rm.ttft_ms);
                m.tpots_ms.extend(rm.tpot_ms);
                e2els.push(rm.e2el_ms);
                itls.extend(
                    r.chunks
                        .windows(2)
                        .map(|w| w[1].t.saturating_sub(w[0].t) as f64 / NS_PER_MS),
                );
            }
            None => {
                m.failed += 1;
                let label = r.error_label().unwrap_or_else(|| "empty".into());
                *m.errors.entry(label).or_default() += 1;
            }
        }
    }
    let first_send = records.iter().map(|r| r.sent).min();
    let last_done = records.iter().filter_map(|r| r.done).max();
    let last_send = records.iter().map(|r| r.sent).max();
    if let (Some(a), Some(b)) = (first_send, last_done) {
        let d = b.saturating_sub(a) as f64 / 1e9;
        if d > 0.0 {
            m.duration_s = Some(d);
            m.output_throughput = Some(out_tokens as f64 / d);
            m.request_throughput = Some(m.completed as f64 / d);
            m.goodput_rps = Some(m.good as f64 / d);
        }
    }
    if let (Some(a), Some(b)) = (first_send, last_send) {
        if b > a && records.len() > 1 {
            m.achieved_rate = Some((records.len() - 1) as f64 / ((b - a) as f64 / 1e9));
        }
    }
    let mut ttfts = m.ttfts_ms.clone();
    (m.median_ttft_ms, m.p99_ttft_ms) = median_p99(&mut ttfts);
    let mut tpots = m.tpots_ms.clone();
    (m.median_tpot_ms, m.p99_tpot_ms) = median_p99(&mut tpots);
    (m.median_itl_ms, m.p99_itl_ms) = median_p99(&mut itls);
    (m.median_e2el_ms, m.p99_e2el_ms) = median_p99(&mut e2els);
    sort_values(&mut lags);
    m.p99_send_lag_ms = quantile_linear(&lags, 0.99);
    if m.completed > 0 {
        m.mean_output_tokens = Some(out_tokens as f64 / m.completed as f64);
    }
    if in_tokens.1 > 0 {
        m.mean_input_tokens = Some(in_tokens.0 as f64 / in_tokens.1 as f64);
    }
    m
}

/// The report point of a load level, from its trials' metrics (in trial order).
/// GPU telemetry, speculative decoding and per-trial details are filled by the caller.
pub fn point_summary(x: f64, trials: &[TrialMetrics], quantiles: &[f64], rate_mode: bool) -> Point {
    let stat = |f: fn(&TrialMetrics) -> Option<f64>| Stat::from_trials(trials.iter().map(f));
    let grid = |values: &mut Vec<f64>| -> Vec<f64> {
        sort_values(values);
        if values.is_empty() {
            return Vec::new();
        }
        quantiles
            .iter()
            .filter_map(|&q| quantile_lower(values, q))
            .collect()
    };
    let mut ttfts: Vec<f64> = trials
        .iter()
        .flat_map(|t| t.ttfts_ms.iter().copied())
        .collect();
    let mut tpots: Vec<f64> = trials
        .iter()
        .flat_map(|t| t.tpots_ms.iter().copied())
        .collect();
    let mut errors = IndexMap::new();
    for t in trials {
        for (k, v) in &t.errors {
            *errors.entry(k.clone()).or_insert(0u64) += v;
        }
    }
    Point {
        x,
        output_throughput: stat(|t| t.output_throughput),
        median_ttft_ms: stat(|t| t.median_ttft_ms),
        p99_ttft_ms: stat(|t| t.p99_ttft_ms),
        median_tpot_ms: stat(|t| t.median_tpot_ms),
        p99_tpot_ms: stat(|t| t.p99_tpot_ms),
        p99_itl_ms: stat(|t| t.p99_itl_ms),
        median_itl_ms: stat(|t| t.median_itl_ms),
        goodput_rps: stat(|t| t.goodput_rps),
        request_throughput: stat(|t| t.request_throughput),
        completed: trials.iter().map(|t| t.completed).collect(),
        gpu: None,
        ttft_quantiles_ms: grid(&mut ttfts),
        tpot_quantiles_ms: grid(&mut tpots),
        status: None,
        planned_trials: None,
        good: Some(trials.iter().map(|t| t.good).collect()),
        failed: Some(trials.iter().map(|t| t.failed).collect()),
        errors,
        estimated_tokens: Some(trials.iter().map(|t| t.estimated).sum()),
        median_e2el_ms: Some(stat(|t| t.median_e2el_ms)),
        p99_e2el_ms: Some(stat(|t| t.p99_e2el_ms)),
        mean_input_tokens: Some(stat(|t| t.mean_input_tokens)),
        mean_output_tokens: Some(stat(|t| t.mean_output_tokens)),
        offered_rate: rate_mode.then_some(x),
        achieved_rate: rate_mode.then(|| stat(|t| t.achieved_rate)),
        p99_send_lag_ms: Some(stat(|t| t.p99_send_lag_ms)),
        spec_decode: None,
        trials: Vec::new(),
        extra: Default::default(),
        server: None,
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
