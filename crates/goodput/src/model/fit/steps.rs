//! Engine steps reconstructed from a trial's request records.
//!
//! A continuous-batching engine emits the tokens of one step together: every
//! request in the batch gets its chunk at the step's end. So a trial's chunks,
//! sorted by arrival, fall into clusters, one per step (a speculative step's
//! burst of accepted tokens included). Chunks closer than `eps` join a cluster;
//! `eps` is a third of the median per-request chunk gap (at most 20 ms), below a
//! step and far above the spread of one step's writes on loopback.
//!
//! For each step: it ended at its first chunk; it started when the previous step
//! ended, or, when the engine was idle, when its earliest request was sent (a
//! request it prefilled: sent and through the front-end, when the fit tries a
//! front-end time, [`trial_steps_with`]); its
//! requests are prefills (their first chunk: the whole prompt was computed) or
//! decodes; its attended context is each request's prompt plus the tokens it had
//! produced. That gives per-step observations at known batch sizes for the step
//! cost's least squares ([`super::solve`]).

use crate::drive::record::RequestRecord;

/// Chunks of one request closer than this (and than a quarter of the tolerance)
/// are one speculative step's burst, ns.
const BURST_NS: u64 = 1_000_000;

/// Most steps taken from one fit (bounds memory and the solve).
pub const MAX_STEPS: usize = 200_000;

/// One reconstructed step.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Duration, ms.
    pub ms: f64,
    /// Prompt tokens prefilled.
    pub prefill_tokens: f64,
    /// Requests prefilled (their first chunk is in the step).
    pub prefill_seqs: f64,
    /// Requests decoding.
    pub decode_seqs: f64,
    /// Context attended: prompt + produced tokens of every request in the step.
    pub kv_tokens: f64,
    /// Tokens each decoding request got in this step.
    pub decode_tokens: Vec<f64>,
    /// Requests in the step (prefills and decodes).
    pub seqs: u32,
    /// Requests in flight (sent, not done) when it ended.
    pub in_flight: u32,
    /// Load level of its trial.
    pub x: f64,
    /// Engine steps it spans (1; more when delivery coalesced several steps'
    /// tokens into one chunk, see [`super::fit`]).
    pub spans: f64,
}

/// A chunk of a request: arrival (ns), tokens it carries, whether it is the first.
struct Event {
    t: u64,
    req: usize,
    tokens: f64,
    first: bool,
}

/// Tokens each chunk of `r` carries: one each when usage matches the chunk count,
/// else usage shared out by the chunks' text lengths.
fn chunk_tokens(r: &RequestRecord) -> Vec<f64> {
    let n = r.chunks.len();
    let total = r.completion_tokens.unwrap_or(n as u64) as f64;
    if total as usize == n || n == 0 {
        return vec![1.0; n];
    }
    let bytes: f64 = r.chunks.iter().map(|c| f64::from(c.len)).sum();
    if bytes <= 0.0 {
        return vec![total / n as f64; n];
    }
    r.chunks
        .iter()
        .map(|c| total * f64::from(c.len) / bytes)
        .collect()
}

/// The clustering tolerance of one trial, ns (see the module doc).
fn tolerance_ns(records: &[&RequestRecord]) -> u64 {
    let gaps: Vec<f64> = records
        .iter()
        .filter(|r| r.chunks.len() > 1)
        .map(|r| {
            let (a, b) = (r.chunks[0].t, r.chunks[r.chunks.len() - 1].t);
            b.saturating_sub(a) as f64 / (r.chunks.len() - 1) as f64
        })
        .collect();
    let median = crate::stats::median(gaps).unwrap_or(1e6);
    (median / 3.0).clamp(1_000.0, 2e7) as u64
}

/// Whether event `e` belongs to the step of `cluster`: within `eps` of its last
/// chunk, and, for a request already in it, within a burst (a speculative step's
/// accepted tokens, streamed one by one) of its own previous chunk; a request's
/// chunk a step later, brought close by delivery jitter, starts the next step.
fn joins(cluster: &[Event], e: &Event, eps: u64) -> bool {
    let Some(last) = cluster.last() else {
        return true;
    };
    if e.t - last.t > eps {
        return false;
    }
    let burst = (eps / 4).min(BURST_NS);
    cluster
        .iter()
        .rev()
        .find(|c| c.req == e.req)
        .is_none_or(|own| e.t - own.t <= burst)
}

/// When each request was through a front-end of `frontend_ns` per request (one
/// at a time, in send order, as the model's [`goodput_sim::model::Engine::arrive`]):
/// the earliest a step could schedule it, ns.
fn ready_times(ok: &[&RequestRecord], frontend_ns: u64) -> Vec<u64> {
    let mut order: Vec<usize> = (0..ok.len()).collect();
    order.sort_by_key(|&i| ok[i].sent);
    let mut ready = vec![0u64; ok.len()];
    let mut free = 0u64;
    for i in order {
        free = ok[i].sent.max(free).saturating_add(frontend_ns);
        ready[i] = free;
    }
    ready
}

/// The steps of one trial (successful requests with chunks only), with no
/// front-end time.
pub fn trial_steps(records: &[&RequestRecord]) -> Vec<Step> {
    trial_steps_with(records, 0)
}

/// Every chunk of the successful requests `ok` as an event, in time order.
fn events_of(ok: &[&RequestRecord]) -> Vec<Event> {
    let mut events = Vec::new();
    for (i, r) in ok.iter().enumerate() {
        for (j, (c, tok)) in r.chunks.iter().zip(chunk_tokens(r)).enumerate() {
            events.push(Event {
                t: c.t,
                req: i,
                tokens: tok,
                first: j == 0,
            });
        }
    }
    events.sort_by_key(|e| e.t);
    events
}

/// The requests of one step's events, each once: (request, its tokens in the
/// step summed, whether the step gave its first token).
fn members_of(cluster: &[Event]) -> Vec<(usize, f64, bool)> {
    let mut members: Vec<(usize, f64, bool)> = Vec::new();
    for e in cluster {
        match members.iter_mut().find(|m| m.0 == e.req) {
            Some(m) => m.1 += e.tokens,
            None => members.push((e.req, e.tokens, e.first)),
        }
    }
    members
}

/// The steps of one trial when every request spent `frontend_ns` in the
/// server's front-end (queued one at a time) before a step could schedule it: a
/// step that prefilled a request started no earlier than that request was ready.
pub fn trial_steps_with(records: &[&RequestRecord], frontend_ns: u64) -> Vec<Step> {
    let ok: Vec<&RequestRecord> = records
        .iter()
        .copied()
        .filter(|r| r.ok() && !r.chunks.is_empty())
        .collect();
    let ready = ready_times(&ok, frontend_ns);
    let eps = tolerance_ns(&ok);
    let events = events_of(&ok);
    let prompt = |i: usize| ok[i].prompt_tokens.unwrap_or(0) as f64;
    let mut produced = vec![0.0f64; ok.len()];
    let mut steps = Vec::new();
    let mut prev_end: Option<u64> = None;
    let mut k = 0;
    while k < events.len() && steps.len() < MAX_STEPS {
        let mut m = k + 1;
        while m < events.len() && joins(&events[k..m], &events[m], eps) {
            m += 1;
        }
        let cluster = &events[k..m];
        let end = cluster[0].t;
        let members = members_of(cluster);
        // The engine was idle until its earliest request here could be scheduled
        // (a prefill: once through the front-end), unless a step ran until later.
        let earliest = members
            .iter()
            .map(|m| if m.2 { ready[m.0] } else { ok[m.0].sent })
            .min()
            .unwrap_or(end)
            .min(end);
        let start = prev_end.map_or(earliest, |p| p.max(earliest));
        let mut step = Step {
            ms: end.saturating_sub(start) as f64 / 1e6,
            prefill_tokens: 0.0,
            prefill_seqs: 0.0,
            decode_seqs: 0.0,
            kv_tokens: 0.0,
            decode_tokens: Vec::new(),
            seqs: members.len() as u32,
            in_flight: ok
                .iter()
                .filter(|r| r.sent < end && r.done.is_none_or(|d| d >= end))
                .count() as u32,
            x: ok[0].x,
            spans: 1.0,
        };
        for &(req, tokens, first) in &members {
            if first {
                step.prefill_tokens += prompt(req);
                step.prefill_seqs += 1.0;
                step.kv_tokens += prompt(req);
            } else {
                step.decode_seqs += 1.0;
                step.kv_tokens += prompt(req) + produced[req];
                step.decode_tokens.push(tokens);
            }
            produced[req] += tokens;
        }
        if step.ms > 0.0 {
            steps.push(step);
        }
        prev_end = Some(end);
        k = m;
    }
    steps
}
