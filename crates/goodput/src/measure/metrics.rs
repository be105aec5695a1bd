//! Every metric, derived from [`RequestRecord`]s in one place. Pure: no clock, no I/O.
//!
//! Definitions (also in docs/report.md, "Metrics"):
//! - **TTFT** = first content-bearing chunk − send time (streamed answers only). The send time is taken once
//!   the request has a connection, so a connection opened for it (its `connect`, a
//!   raw fact not summarised here) is not in TTFT, unless the run asked for
//!   `--ttft-includes-connect` (then the client takes the send time before connecting).
//! - **E2EL** = last content-bearing chunk − send time.
//! - **output tokens** = `usage.completion_tokens`; without usage, the number of
//!   content chunks, and the request is counted as *estimated*.
//! - **TPOT** = (E2EL − TTFT) / (output tokens − 1), for requests of more than one
//!   output token. A chunk may carry several tokens (speculative decoding): TPOT
//!   counts tokens, ITL counts chunks.
//! - **ITL** = gaps between successive content chunks, pooled over the trial's requests.
//! - **good** request: succeeded and within every bound ([`RequestMetrics::value`]:
//!   a one-token request's TPOT is 0, no value misses); never one that reasoned
//!   and gave no answer.
//! - **Reasoning models** ([`reasoning`]): a chunk of `delta.reasoning` (or
//!   `delta.reasoning_content`) text is a *reasoning* chunk, one of `delta.content`
//!   an *answer* chunk. TTFT and TPOT count tokens of either kind (vLLM's
//!   definition). **TTFAT** (time to first answer token) = first answer chunk −
//!   send time (= TTFT for a model that does not reason). **reasoning tokens** =
//!   `usage.completion_tokens_details.reasoning_tokens`, else the number of
//!   reasoning chunks (counted as *estimated*), at most the output tokens; **answer
//!   tokens** = output tokens − reasoning tokens; **answer TPOT** = (E2EL − TTFAT) /
//!   (answer tokens − 1). A request that streamed reasoning and no answer chunk is
//!   a **no answer**: it succeeded, is never good, has no TTFAT, and counts as
//!   infinitely slow in the percentile form of a TTFAT bound.
//! - **Embeddings** ([`embeddings`], `api = "embeddings"`): the answer comes whole,
//!   so there is no TTFT, TPOT, ITL or output token (none is reported: `n = 0`);
//!   **E2EL** = the body's last bytes − send time. **inputs/s** = inputs of
//!   successful requests / trial duration; **input tokens/s** = their
//!   `usage.prompt_tokens` / trial duration; **headers** = response headers −
//!   send time.
//! - **Tool calls** ([`tool_calls`]): **TTFTC** (time to first tool call) = first
//!   chunk with a `delta.tool_calls` entry − send time; a request that asked for
//!   tool calls and streamed none has no TTFTC and misses a TTFTC bound (the plan
//!   allows the bound only with `[workload] tools`). A call is **valid** when its
//!   arguments, joined, parse as JSON.
//! - **trial duration** = first send → last completion (of any request of the trial);
//!   output_throughput = output tokens of successful requests / duration;
//!   request_throughput = successful requests / duration; goodput_rps = good / duration.
//! - **achieved rate** = (n − 1) / (last send − first send) over the trial's n requests;
//!   **scheduled rate** = (n − 1) / (last scheduled − first scheduled): the rate the
//!   trial's own arrival schedule drew (a short Poisson draw lands away from the
//!   nominal x). The client is judged by send lag and achieved vs scheduled rate.
//! - **achieved concurrency** = mean requests in flight over the trial: the integral
//!   of the in-flight count over [first send, last completion] divided by its length,
//!   i.e. Σ (done − sent) over requests with an end time / trial duration.
//! - **first error** = `label: detail` of the failed request sent first (the first
//!   trial with a failure, per point), cut to [`FIRST_ERROR_MAX_CHARS`] characters.
//! - **outliers** ([`outliers`]): per point, over the pooled per-request TTFT and E2EL,
//!   with `m` the median and `MAD` the median absolute deviation, a request whose
//!   modified Z-score `0.6745 (v − m) / MAD` exceeds 14 (hyperfine's rule) and whose
//!   value is at least 2 m (a MAD of 0 counts as infinitely far); or whose value
//!   exceeds 10 m whatever the spread (one such request is the p99 of a small
//!   trial). Slow side only; at least [`OUTLIER_MIN_REQUESTS`] requests.
//! - **per turn** (conversation workloads, [`conversation_summary`]): requests grouped
//!   by their turn index in the session (1: no history), all trials pooled: completed
//!   and failed counts, median and p99 TTFT and TPOT (linear rule), mean prompt
//!   tokens. Turn 1 against later turns shows what a prefix cache saves. **Cut
//!   sessions**: sessions with a request whose history dropped earlier turns to fit
//!   the context (`context_cut_turns`).
//! - **LoRA adapters** ([`adapters`]): a point's requests grouped by the adapter
//!   their record names (`[workload.adapters]`), all trials pooled: sent, good,
//!   attainment, goodput and every bounded metric's median and p99 per adapter;
//!   [`adapter_judgement`] judges each adapter's median against the others'.
//! - Per-trial median and p99: numpy's linear interpolation ([`quantile_linear`]).
//! - Per point: each scalar summarised over trials as `{median,min,max,n}`; the
//!   quantile grids pool the per-request TTFT and TPOT of all trials with the
//!   "lower" rule ([`quantile_lower`]) — the same per-request values as the scalars.

use indexmap::IndexMap;
use report::stats::{quantile_linear, quantile_lower, sort_values};
use report::{Point, Slo, SloMetric, Stat};

use crate::drive::record::RequestRecord;

pub mod adapter_judgement;
pub mod adapters;
pub mod cost;
pub mod embeddings;
pub mod figures;
pub mod images;
pub mod judgement;
mod outlier;
pub mod reasoning;
mod slo;
pub mod tool_calls;
pub mod tool_check;
pub mod tool_validity;
mod turns;

pub use embeddings::{embeddings_summary, TrialEmbeddings};
pub use outlier::*;
pub use reasoning::{reasoning_summary, request_reasoning, RequestReasoning, TrialReasoning};
pub use slo::*;
pub use tool_calls::{request_tool_calls, tool_call_summary, RequestToolCalls, TrialToolCalls};
pub use turns::*;

const NS_PER_MS: f64 = 1e6;

/// The first error's text is cut to this many characters.
pub const FIRST_ERROR_MAX_CHARS: usize = 200;

/// Metrics of one successful request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMetrics {
    /// Time to first token, ms; `None` for an answer that is not streamed
    /// (embeddings).
    pub ttft_ms: Option<f64>,
    /// End-to-end latency, ms.
    pub e2el_ms: f64,
    /// Time per output token, ms; `None` for a one-token request.
    pub tpot_ms: Option<f64>,
    /// Output tokens.
    pub output_tokens: u64,
    /// Reasoning and answer apart (TTFAT, tokens of each).
    pub reasoning: RequestReasoning,
    /// Tool calls (TTFTC, valid calls).
    pub tool_calls: RequestToolCalls,
    /// Met the SLO.
    pub good: bool,
}

/// Derives a request's metrics; `None` when it failed or streamed no content
/// (an embeddings request: when it failed or has no end).
pub fn request_metrics(r: &RequestRecord, slo: &Slo) -> Option<RequestMetrics> {
    if !r.ok() {
        return None;
    }
    if r.embeddings.is_some() {
        let e2el_ms = r.done?.saturating_sub(r.sent) as f64 / NS_PER_MS;
        return Some(judged(embeddings::request_metrics(e2el_ms), slo));
    }
    let first = r.chunks.first()?;
    let last = r.chunks.last()?;
    let ttft_ms = first.t.saturating_sub(r.sent) as f64 / NS_PER_MS;
    let e2el_ms = last.t.saturating_sub(r.sent) as f64 / NS_PER_MS;
    let output_tokens = r.completion_tokens.unwrap_or(r.chunks.len() as u64);
    let tpot_ms = (output_tokens > 1).then(|| (e2el_ms - ttft_ms) / (output_tokens - 1) as f64);
    let m = RequestMetrics {
        ttft_ms: Some(ttft_ms),
        e2el_ms,
        tpot_ms,
        output_tokens,
        reasoning: request_reasoning(r, output_tokens, e2el_ms),
        tool_calls: request_tool_calls(r),
        good: false,
    };
    Some(judged(m, slo))
}

/// The request's metrics with `good` set: within every bound (a value it lacks
/// misses), and not a reasoning model's missing answer.
fn judged(mut m: RequestMetrics, slo: &Slo) -> RequestMetrics {
    let good = |(metric, b): (SloMetric, f64)| m.value(metric).is_some_and(|v| v <= b);
    m.good = slo.bounds.iter().all(good) && !m.reasoning.no_answer();
    m
}

impl RequestMetrics {
    /// The request's value of a bounded metric, ms, as its bound judges it (a
    /// one-token request's TPOT is 0; `None`, no answer, misses the bound): the one
    /// place a metric is read off a request.
    pub fn value(&self, metric: SloMetric) -> Option<f64> {
        match metric {
            SloMetric::Ttft => self.ttft_ms,
            SloMetric::Tpot => Some(self.tpot_ms.unwrap_or(0.0)),
            SloMetric::E2el => Some(self.e2el_ms),
            SloMetric::Ttfat => self.reasoning.ttfat_ms,
            SloMetric::Ttftc => self.tool_calls.ttftc_ms,
        }
    }
}

/// Metrics of one trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialMetrics {
    /// Successful requests.
    pub completed: u64,
    /// Failed requests.
    pub failed: u64,
    /// Good requests (successful and within every SLO bound).
    pub good: u64,
    /// Failed requests by error label.
    pub errors: IndexMap<String, u64>,
    /// Requests whose token count was estimated.
    pub estimated: u64,
    /// Successful requests that asked for an exact output length.
    pub exact_asked: u64,
    /// Of those, the ones with fewer tokens, by `finish_reason` (`none` when the
    /// stream gave none).
    pub short: IndexMap<String, u64>,
    /// Successful requests that set `max_tokens`.
    pub max_asked: u64,
    /// Of those, the ones whose stream carried more content chunks than
    /// `max_tokens` allows (without usage: counted at `max_tokens`, see
    /// `count_long`).
    pub long: u64,
    /// Requests whose stream carried choices other than index 0 (not counted).
    pub other_choices: u64,
    /// Requests that sent data after `[DONE]` (ignored).
    pub after_done: u64,
    /// First send to last completion, s; `None` when nothing was sent.
    pub duration_s: Option<f64>,
    /// Output tokens / s.
    pub output_throughput: Option<f64>,
    /// Successful requests / s.
    pub request_throughput: Option<f64>,
    /// Good requests / s.
    pub goodput_rps: Option<f64>,
    /// Median TTFT (numpy's linear rule), ms.
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
    /// Requests per second of the schedule, first to last scheduled send.
    pub scheduled_rate: Option<f64>,
    /// Mean requests in flight between the first send and the last completion.
    pub achieved_concurrency: Option<f64>,
    /// `label: detail` of the failed request sent first.
    pub first_error: Option<String>,
    /// The trial's index (from its records; 0 when it has none).
    pub trial: u32,
    /// p99 of sent − scheduled, ms.
    pub p99_send_lag_ms: Option<f64>,
    /// Per-request TTFTs of successful requests, ms (for the pooled grid).
    pub ttfts_ms: Vec<f64>,
    /// Per-request E2ELs of the same requests, in the same order, ms.
    pub e2els_ms: Vec<f64>,
    /// Request indexes of the same requests, in the same order.
    pub request_indexes: Vec<u32>,
    /// Per-request TPOTs (multi-token successful requests), ms.
    pub tpots_ms: Vec<f64>,
    /// Conversation workloads: the trial's requests by turn.
    pub turns: Option<TrialTurns>,
    /// Reasoning models: first answer token, reasoning and answer tokens, no answers.
    pub reasoning: TrialReasoning,
    /// Tool calls: TTFTC, valid calls.
    pub tool_calls: TrialToolCalls,
    /// LoRA adapters: the trial's requests by adapter.
    pub adapters: Option<adapters::TrialAdapters>,
    /// Images the requests carried.
    pub images: images::TrialImages,
    /// Embeddings requests: inputs, input tokens, their rates.
    pub embeddings: TrialEmbeddings,
    /// Output tokens of successful requests (see [`cost`]).
    pub output_tokens: u64,
    /// Output tokens of good requests (see [`cost`]).
    pub good_output_tokens: u64,
    /// The trial's figures as `compare` tests them ([`figures`]).
    pub figures: IndexMap<String, report::Figure>,
}

impl TrialMetrics {
    /// The successful requests' values of a bounded metric, ms, as the trial's
    /// medians and p99s read them (TPOT: multi-token requests only).
    pub fn values(&self, metric: SloMetric) -> &[f64] {
        match metric {
            SloMetric::Ttft => &self.ttfts_ms,
            SloMetric::Tpot => &self.tpots_ms,
            SloMetric::E2el => &self.e2els_ms,
            SloMetric::Ttfat => &self.reasoning.ttfats_ms,
            SloMetric::Ttftc => &self.tool_calls.ttftcs_ms,
        }
    }
}

/// Derives a trial's metrics from its records.
pub fn trial_metrics(records: &[RequestRecord], slo: &Slo) -> TrialMetrics {
    let mut m = TrialMetrics {
        trial: records.first().map(|r| r.trial).unwrap_or(0),
        ..TrialMetrics::default()
    };
    let mut itls = Vec::new();
    let mut tokens = Vec::new();
    let mut out_tokens = 0u64;
    let mut in_tokens = (0u64, 0u64);
    let mut lags = Vec::with_capacity(records.len());
    for r in records {
        lags.push(r.sent.saturating_sub(r.scheduled) as f64 / NS_PER_MS);
        m.other_choices += r.other_choices as u64;
        m.after_done += r.data_after_done as u64;
        match request_metrics(r, slo) {
            Some(rm) => {
                m.completed += 1;
                m.good += rm.good as u64;
                m.estimated += r.tokens_estimated as u64;
                count_short(&mut m, r, rm.output_tokens);
                count_long(&mut m, r);
                out_tokens = out_tokens.saturating_add(rm.output_tokens);
                tokens.push(rm.output_tokens as f64);
                if rm.good {
                    m.good_output_tokens = m.good_output_tokens.saturating_add(rm.output_tokens);
                }
                if let Some(p) = r.prompt_tokens {
                    in_tokens = (in_tokens.0.saturating_add(p), in_tokens.1 + 1);
                }
                m.ttfts_ms.extend(rm.ttft_ms);
                m.tpots_ms.extend(rm.tpot_ms);
                m.e2els_ms.push(rm.e2el_ms);
                m.request_indexes.push(r.index);
                m.reasoning.add(&rm.reasoning);
                m.tool_calls.add(&rm.tool_calls);
                m.images.add(r);
                m.embeddings.add(r);
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
    m.first_error = records
        .iter()
        .filter(|r| request_metrics(r, slo).is_none())
        .min_by_key(|r| (r.sent, r.index))
        .map(error_text);
    m.output_tokens = out_tokens;
    rates(&mut m, records, out_tokens);
    let mut ttfts = m.ttfts_ms.clone();
    (m.median_ttft_ms, m.p99_ttft_ms) = crate::stats::median_p99(&mut ttfts);
    let mut tpots = m.tpots_ms.clone();
    (m.median_tpot_ms, m.p99_tpot_ms) = crate::stats::median_p99(&mut tpots);
    (m.median_itl_ms, m.p99_itl_ms) = crate::stats::median_p99(&mut itls);
    let mut e2els = m.e2els_ms.clone();
    (m.median_e2el_ms, m.p99_e2el_ms) = crate::stats::median_p99(&mut e2els);
    sort_values(&mut lags);
    m.p99_send_lag_ms = quantile_linear(&lags, 0.99);
    if m.completed > 0 {
        m.mean_output_tokens = Some(out_tokens as f64 / m.completed as f64);
    }
    if in_tokens.1 > 0 {
        m.mean_input_tokens = Some(in_tokens.0 as f64 / in_tokens.1 as f64);
    }
    m.turns = trial_turns(records, slo);
    m.adapters = adapters::trial_adapters(records, slo);
    m.reasoning.finish();
    m.tool_calls.finish();
    m.embeddings.finish(records, m.duration_s);
    if m.embeddings.is_embeddings() {
        // Embeddings generate no tokens: no output throughput is reported.
        m.output_throughput = None;
    }
    m.figures = figures::figures(&m, &itls, &tokens);
    m
}

/// Counts a successful request that asked for an exact length, and whether its
/// answer came short (the one definition of a short output).
fn count_short(m: &mut TrialMetrics, r: &RequestRecord, output_tokens: u64) {
    let Some(asked) = r.requested_tokens.filter(|_| r.exact_tokens) else {
        return;
    };
    m.exact_asked += 1;
    if output_tokens < u64::from(asked) {
        let why = r.finish_reason.clone().unwrap_or_else(|| "none".into());
        *m.short.entry(why).or_insert(0) += 1;
    }
}

/// Counts a successful request that set `max_tokens`, and whether its stream was
/// longer than that allows (the one definition of a long output): more content
/// chunks than `max_tokens`. Each chunk carries at least a token, so the server
/// generated past the limit or split tokens over chunks; with a usage block that
/// says so the request has already failed (`bad_usage`), so a long output is one
/// counted from chunks, at the limit.
fn count_long(m: &mut TrialMetrics, r: &RequestRecord) {
    let Some(asked) = r.requested_tokens else {
        return;
    };
    m.max_asked += 1;
    m.long += (r.chunks.len() as u64 > u64::from(asked)) as u64;
}

/// A trial's duration and what is per second of it (throughputs, achieved
/// concurrency), and its achieved and scheduled rates (the module doc's
/// definitions); `out_tokens`: the output tokens of its successful requests.
fn rates(m: &mut TrialMetrics, records: &[RequestRecord], out_tokens: u64) {
    let first_send = records.iter().map(|r| r.sent).min();
    let last_done = records.iter().filter_map(|r| r.done).max();
    if let (Some(a), Some(b)) = (first_send, last_done) {
        let d = b.saturating_sub(a) as f64 / 1e9;
        if d > 0.0 {
            m.duration_s = Some(d);
            m.output_throughput = Some(out_tokens as f64 / d);
            m.request_throughput = Some(m.completed as f64 / d);
            m.goodput_rps = Some(m.good as f64 / d);
            let busy_ns: u64 = records
                .iter()
                .filter_map(|r| r.done.map(|done| done.saturating_sub(r.sent)))
                .sum();
            m.achieved_concurrency = Some(busy_ns as f64 / 1e9 / d);
        }
    }
    m.achieved_rate = rate_between(records.iter().map(|r| r.sent));
    m.scheduled_rate = rate_between(records.iter().map(|r| r.scheduled));
}

/// `(n - 1) / (last - first)` per second of n nanosecond times; `None` for fewer
/// than two or when they all coincide.
fn rate_between(times: impl Iterator<Item = u64> + Clone) -> Option<f64> {
    let n = times.clone().count();
    let (a, b) = (times.clone().min()?, times.max()?);
    (n > 1 && b > a).then(|| (n - 1) as f64 / ((b - a) as f64 / 1e9))
}

/// `label: detail` of a failed request, redacted, then cut to
/// [`FIRST_ERROR_MAX_CHARS`] characters.
fn error_text(r: &RequestRecord) -> String {
    let label = r.error_label().unwrap_or_else(|| "empty".into());
    let text = match r.error_detail.as_deref().map(str::trim) {
        Some(d) if !d.is_empty() => format!("{label}: {d}"),
        _ => label,
    };
    let text = crate::redact::text(&text).into_owned();
    if text.chars().count() <= FIRST_ERROR_MAX_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(FIRST_ERROR_MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The point's short outputs, summed over its trials (`None` when no request
/// asked for an exact length).
fn short_outputs(trials: &[TrialMetrics]) -> Option<report::ShortOutputs> {
    let of: u64 = trials.iter().map(|t| t.exact_asked).sum();
    if of == 0 {
        return None;
    }
    let mut finish_reasons = IndexMap::new();
    for t in trials {
        for (k, v) in &t.short {
            *finish_reasons.entry(k.clone()).or_insert(0u64) += v;
        }
    }
    Some(report::ShortOutputs {
        requests: finish_reasons.values().sum(),
        of,
        finish_reasons,
    })
}

/// The point's long outputs, summed over its trials (`None` when there were none).
fn long_outputs(trials: &[TrialMetrics]) -> Option<report::LongOutputs> {
    let requests: u64 = trials.iter().map(|t| t.long).sum();
    (requests > 0).then(|| report::LongOutputs {
        requests,
        of: trials.iter().map(|t| t.max_asked).sum(),
    })
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
        short_outputs: short_outputs(trials),
        long_outputs: long_outputs(trials),
        median_e2el_ms: Some(stat(|t| t.median_e2el_ms)),
        p99_e2el_ms: Some(stat(|t| t.p99_e2el_ms)),
        mean_input_tokens: Some(stat(|t| t.mean_input_tokens)),
        mean_output_tokens: Some(stat(|t| t.mean_output_tokens)),
        offered_rate: rate_mode.then_some(x),
        achieved_rate: rate_mode.then(|| stat(|t| t.achieved_rate)),
        p99_send_lag_ms: Some(stat(|t| t.p99_send_lag_ms)),
        scheduled_rate: rate_mode.then(|| stat(|t| t.scheduled_rate)),
        achieved_concurrency: Some(stat(|t| t.achieved_concurrency)),
        first_error: trials.iter().find_map(|t| t.first_error.clone()),
        outliers: (!trials.is_empty()).then(|| outliers(trials)),
        spec_decode: None,
        trials: Vec::new(),
        attainment: None,
        slo_check: None,
        predicted_interval: None,
        extrapolated: false,
        trials_stopped: None,
        extra: Default::default(),
        server: None,
        conversation: conversation_summary(trials),
        reasoning: reasoning_summary(trials),
        tool_calls: tool_call_summary(trials),
        adapters: adapters::adapter_summary(trials),
        images: images::image_summary(trials),
        embeddings: embeddings_summary(trials),
        energy: None,
        cost: None,
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
