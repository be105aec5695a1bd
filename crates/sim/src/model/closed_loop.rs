//! A closed-loop client in virtual time: `concurrency` clients each send a
//! request, wait for its last token and immediately send the next, until
//! `requests` have been sent. The engine starts idle with a cool GPU at time 0;
//! client `i` sends its first request at `i` ms (real clients never start at
//! exactly the same instant, and a request that arrives while a step runs waits
//! for the next one); a client's next request arrives 2 ms after the last
//! token of its previous one, so it misses the step that starts at that
//! instant, as with a real engine.
//!
//! [`summarize`] reduces one trial to the reference report's scalars: median
//! TTFT, median TPOT (per request: `(e2el - ttft) / (tokens - 1)`), median ITL
//! (per chunk gap, pooled) and output throughput (tokens / trial duration).

use std::collections::HashMap;

use super::{Engine, RequestSpec};
use crate::config::SimConfig;

/// Gap between the first requests of successive clients, s.
const CLIENT_STAGGER_S: f64 = 0.001;
/// Delay from a request's last token to the arrival of the client's next
/// request, s (HTTP round trip and request parsing on loopback).
const CLIENT_DELAY_S: f64 = 0.002;

/// What happened to one request, in simulated seconds from the trial start.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestTrace {
    /// When it was sent.
    pub sent: f64,
    /// When its first token arrived.
    pub first_token: f64,
    /// When its last token arrived.
    pub end: f64,
    /// Each chunk: arrival time and tokens in it.
    pub chunks: Vec<(f64, u32)>,
}

impl RequestTrace {
    /// Time to first token, s.
    pub fn ttft(&self) -> f64 {
        self.first_token - self.sent
    }

    /// End-to-end latency, s.
    pub fn e2el(&self) -> f64 {
        self.end - self.sent
    }

    /// Output tokens received.
    pub fn tokens(&self) -> u64 {
        self.chunks.iter().map(|&(_, n)| u64::from(n)).sum()
    }

    /// Time per output token after the first, s (0 for a single token).
    pub fn tpot(&self) -> f64 {
        let n = self.tokens();
        if n <= 1 {
            return 0.0;
        }
        (self.end - self.first_token) / (n - 1) as f64
    }
}

/// Run `requests` requests of `input_tokens` prompt and `output_tokens` output
/// tokens through a closed loop of `concurrency` clients; traces in send order.
pub fn simulate_closed_loop(
    config: &SimConfig,
    concurrency: u32,
    requests: u32,
    input_tokens: u32,
    output_tokens: u32,
) -> Vec<RequestTrace> {
    let mut engine = Engine::new(config);
    let mut traces: Vec<RequestTrace> = Vec::with_capacity(requests as usize);
    // Requests queued for sending: (time, trace index).
    let mut arrivals: Vec<(f64, usize)> = Vec::new();
    let send = |at: f64, traces: &mut Vec<RequestTrace>, arrivals: &mut Vec<(f64, usize)>| {
        if traces.len() < requests as usize {
            traces.push(RequestTrace {
                sent: at,
                first_token: f64::NAN,
                end: f64::NAN,
                chunks: Vec::new(),
            });
            arrivals.push((at, traces.len() - 1));
        }
    };
    for i in 0..concurrency.max(1) {
        send(f64::from(i) * CLIENT_STAGGER_S, &mut traces, &mut arrivals);
    }
    let mut in_engine: HashMap<u64, usize> = HashMap::new();
    let mut now = 0.0_f64;
    loop {
        // Hand over every request sent by now.
        arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
        while let Some(&(at, idx)) = arrivals.first() {
            if at > now {
                break;
            }
            arrivals.remove(0);
            let spec = RequestSpec {
                prompt_tokens: input_tokens,
                output_tokens,
                endless: false,
                seed: idx as u64,
            };
            engine.arrive(idx as u64, spec, Vec::new(), at);
            in_engine.insert(idx as u64, idx);
        }
        let Some(out) = engine.step(now) else {
            let next = arrivals.first().map(|a| a.0);
            match (next, engine.next_ready()) {
                (Some(a), Some(b)) => now = a.min(b),
                (Some(t), None) | (None, Some(t)) => now = t,
                (None, None) => break,
            }
            continue;
        };
        now = out.end;
        for ev in &out.events {
            let Some(&idx) = in_engine.get(&ev.id) else {
                continue;
            };
            let t = &mut traces[idx];
            if ev.first {
                t.first_token = ev.at;
            }
            t.chunks.push((ev.at, ev.tokens));
            if ev.finished {
                t.end = ev.at;
                in_engine.remove(&ev.id);
                send(ev.at + CLIENT_DELAY_S, &mut traces, &mut arrivals);
            }
        }
    }
    traces
}

/// The reference report's scalars for one trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointSummary {
    /// Median time to first token, ms.
    pub median_ttft_ms: f64,
    /// Median of per-request time per output token, ms.
    pub median_tpot_ms: f64,
    /// Median inter-chunk latency, pooled over requests, ms.
    pub median_itl_ms: f64,
    /// Output tokens per second over the trial.
    pub output_throughput: f64,
}

/// Median (mean of the middle two for an even count); NaN for no values.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Summarise one trial's traces.
pub fn summarize(traces: &[RequestTrace]) -> PointSummary {
    let mut ttft: Vec<f64> = traces.iter().map(|t| t.ttft() * 1e3).collect();
    let mut tpot: Vec<f64> = traces.iter().map(|t| t.tpot() * 1e3).collect();
    let mut itl: Vec<f64> = traces
        .iter()
        .flat_map(|t| t.chunks.windows(2).map(|w| (w[1].0 - w[0].0) * 1e3))
        .collect();
    let start = traces.iter().map(|t| t.sent).fold(f64::INFINITY, f64::min);
    let end = traces
        .iter()
        .map(|t| t.end)
        .fold(f64::NEG_INFINITY, f64::max);
    let tokens: u64 = traces.iter().map(RequestTrace::tokens).sum();
    PointSummary {
        median_ttft_ms: median(&mut ttft),
        median_tpot_ms: median(&mut tpot),
        median_itl_ms: median(&mut itl),
        output_throughput: tokens as f64 / (end - start),
    }
}

#[cfg(test)]
#[path = "calibration_tests.rs"]
mod calibration_tests;
