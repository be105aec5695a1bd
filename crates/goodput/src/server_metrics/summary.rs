//! From trials to the point's `server` summary, and the cross-check of what the
//! server counted against what the client counted.
//!
//! Gauges are pooled over every sample of the point's trials (mean, max, share of
//! samples with a request waiting); counters are summed over the trials whose
//! counters did not reset. Shares are ratios of the summed counters.

use report::{ServerCounts, ServerSummary, ServerTrial};

/// Generated tokens may differ by this share of the client's count...
pub const TOKEN_TOLERANCE_SHARE: f64 = 0.01;
/// ...or by this many tokens, whichever is larger.
pub const TOKEN_TOLERANCE_ABS: f64 = 2.0;

/// Summarises the trials that have a server side; `None` when none has.
pub fn summarize<'a>(trials: impl IntoIterator<Item = &'a ServerTrial>) -> Option<ServerSummary> {
    let trials: Vec<&ServerTrial> = trials.into_iter().collect();
    let first = trials.first()?;
    let samples = || trials.iter().flat_map(|t| t.samples.iter());
    let values = |f: fn(&report::ServerSample) -> Option<f64>| -> Vec<f64> {
        samples().filter_map(f).filter(|v| v.is_finite()).collect()
    };
    let running = values(|s| s.running);
    let waiting = values(|s| s.waiting);
    let kv = values(|s| s.kv_usage);
    let counted: Vec<&&ServerTrial> = trials.iter().filter(|t| !t.counter_reset).collect();
    let sum = |f: fn(&ServerTrial) -> Option<f64>| -> Option<f64> {
        counted.iter().filter_map(|t| f(t)).reduce(|a, b| a + b)
    };
    let ratio = |num: Option<f64>, den: Option<f64>| match (num, den) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    };
    Some(ServerSummary {
        catalogue: first.catalogue.clone(),
        samples: samples().count() as u64,
        mean_running: mean(&running),
        max_running: max(&running),
        mean_waiting: mean(&waiting),
        max_waiting: max(&waiting),
        waiting_share: (!waiting.is_empty())
            .then(|| waiting.iter().filter(|w| **w > 0.0).count() as f64 / waiting.len() as f64),
        max_kv_usage: max(&kv),
        counts: ServerCounts {
            preemptions: sum(|t| t.counts.preemptions),
            prompt_tokens: sum(|t| t.counts.prompt_tokens),
            generation_tokens: sum(|t| t.counts.generation_tokens),
            requests_finished: sum(|t| t.counts.requests_finished),
        },
        prefix_cache_hit_share: ratio(sum(|t| t.prefix_hits), sum(|t| t.prefix_queries)),
        spec_acceptance: ratio(
            sum(|t| t.spec_accepted_tokens),
            sum(|t| t.spec_draft_tokens),
        ),
        mean_iteration_tokens: ratio(sum(|t| t.iteration_tokens_sum), sum(|t| t.iteration_steps)),
    })
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn max(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::max)
}

/// One count on which server and client disagree in a trial.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// `generation tokens`, `prompt tokens` or `requests finished`.
    pub what: &'static str,
    /// The server's count.
    pub server: f64,
    /// The client's count.
    pub client: f64,
}

/// The counts of one trial on which the server and the client disagree beyond
/// the tolerance: generated tokens (1 % or 2 tokens), prompt tokens (the same;
/// only where the engine's counter includes cached tokens), finished requests
/// (exact when no request failed; else between the successes and all requests).
/// Nothing for a trial whose counters reset or that has no counts.
pub fn cross_check(t: &ServerTrial, failed: u64) -> Vec<Mismatch> {
    let mut out = Vec::new();
    if t.counter_reset {
        return out;
    }
    // Token counts: within 1 % or 2 tokens.
    let mut tokens = |what, server: Option<f64>, client: Option<u64>| {
        if let (Some(s), Some(c)) = (server, client.map(|c| c as f64)) {
            if (s - c).abs() > (c * TOKEN_TOLERANCE_SHARE).max(TOKEN_TOLERANCE_ABS) {
                out.push(Mismatch {
                    what,
                    server: s,
                    client: c,
                });
            }
        }
    };
    tokens(
        "generation tokens",
        t.counts.generation_tokens,
        t.client_generation_tokens,
    );
    let prompt_counts_cached = super::catalogue::KNOWN
        .iter()
        .find(|c| c.name == t.catalogue)
        .is_some_and(|c| c.prompt_counts_cached);
    if prompt_counts_cached {
        tokens(
            "prompt tokens",
            t.counts.prompt_tokens,
            t.client_prompt_tokens,
        );
    }
    if let (Some(s), Some(c)) = (t.counts.requests_finished, t.client_completed) {
        let (lo, hi) = (c as f64, (c + failed) as f64);
        if s < lo - 0.5 || s > hi + 0.5 {
            out.push(Mismatch {
                what: "requests finished",
                server: s,
                client: c as f64,
            });
        }
    }
    out
}
