//! From trials to the point's `server` summary. The cross-check of what the server
//! counted against what the client counted is `report::server::cross_check`.
//!
//! Gauges are pooled over every sample of the point's trials (mean, max, share of
//! samples with a request waiting); counters are summed over the trials whose
//! counters did not reset. Shares are ratios of the summed counters.

use report::{ServerCounts, ServerSummary, ServerTrial};

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
