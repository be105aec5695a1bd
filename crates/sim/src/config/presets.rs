//! Named configurations.
//!
//! The `vllm-*` presets mimic the reference report
//! (`shared/reference/l4-gpu1-vllm.json`): an NVIDIA L4 serving a model whose
//! KV pool is 2,928 tokens (183 blocks of 16), thermally throttled from about
//! 2 GHz to 400 MHz after a quarter second of load, so the first request of a
//! trial (cool card) gets its first token in ~280 ms and later ones in ~1.4 s.
//! Step costs are given at the boost clock; the throttled card is 5.1x slower.
//!
//! The workload that reproduces the reference is 576-token prompts and
//! 128-token outputs: a whole request is 44 blocks, so the pool holds four of
//! them (176 of 183 blocks) and no more; with 800-token prompts only three fit
//! and the fourth would wait ~35 s, which the reference's TTFTs (max 5.4 s)
//! rule out. At concurrency 4 the reference's TTFTs come in clusters of three
//! near-identical values: three requests that finished in the same step are
//! replaced together, wait behind the prefill of the fourth client's request,
//! and are then prefilled together (3 x 576 tokens at 400 MHz), hence ~5 s.
//! The calibration tests in `model::closed_loop` check each preset against the
//! reference medians (TTFT, TPOT, output throughput within 25%).

use super::{
    Acceptance, EmbeddingsConfig, ScheduleConfig, SimConfig, SpeculativeConfig, ThermalConfig,
};

/// Names accepted by [`preset`].
pub const PRESETS: &[&str] = &[
    "vllm-fast-b",
    "vllm-ngram",
    "vllm-no-async",
    "default",
    "fixed",
    "embed",
];

/// The L4 card of the reference report: boosts to 2,040 MHz, throttles to 400 MHz.
fn l4_thermal() -> ThermalConfig {
    ThermalConfig {
        boost_mhz: 2040.0,
        throttled_mhz: 400.0,
        heat_after_s: 0.25,
        recover_after_s: 3.0,
        idle_temp_c: 45.0,
        hot_temp_c: 88.0,
    }
}

/// vLLM on an L4 with async scheduling, no speculative decoding.
fn vllm_fast_b() -> SimConfig {
    SimConfig {
        model: "goodput-sim".to_string(),
        max_model_len: 2048,
        kv_pool_tokens: 2928,
        block_size: 16,
        prefix_caching: true,
        max_num_seqs: 128,
        max_num_batched_tokens: 2048,
        load_time_ms: 2000.0,
        time_scale: 1.0,
        step_fixed_ms: 45.0,
        per_prefill_token_ms: 0.392,
        per_decode_seq_ms: 1.3,
        per_kv_token_ms: 0.001,
        prefill_step_ms: 0.0,
        per_prefill_seq_ms: 0.0,
        frontend_ms: 0.0,
        frontend_chunk_ms: 0.0,
        async_scheduling: true,
        sched_cpu_ms: 8.0,
        speculative: None,
        reasoning: None,
        embeddings: None,
        thermal: Some(l4_thermal()),
        seed: 0,
        schedule: None,
        probe: false,
        faults: Vec::new(),
        jitter: None,
        adapters: None,
        tool_call_invalid_share: 0.0,
        tool_call_schema_invalid_share: 0.0,
        fit: None,
    }
}

/// n-gram speculative decoding with `k` drafts a step, as the reference's
/// `vllm-ngram` engine: each request's acceptance rate drawn from Beta(0.3, 0.2),
/// its verification costs calibrated on the L4. Also what `--speculative-config`
/// gives a configuration that had no speculative decoding.
pub(super) fn ngram(k: u32) -> SpeculativeConfig {
    SpeculativeConfig {
        num_speculative_tokens: k,
        acceptance: Acceptance::Beta {
            alpha: 0.3,
            beta: 0.2,
        },
        verify_cost_ms: 4.5,
        per_draft_token_ms: 0.05,
    }
}

/// The named preset, or `None` for an unknown name.
pub fn preset(name: &str) -> Option<SimConfig> {
    match name {
        "vllm-fast-b" => Some(vllm_fast_b()),
        "vllm-no-async" => Some(SimConfig {
            async_scheduling: false,
            ..vllm_fast_b()
        }),
        "vllm-ngram" => Some(SimConfig {
            speculative: Some(ngram(5)),
            ..vllm_fast_b()
        }),
        "default" => Some(SimConfig::default()),
        "fixed" => Some(SimConfig {
            schedule: Some(ScheduleConfig {
                ttft_ms: 50.0,
                itl_ms: 20.0,
            }),
            ..SimConfig::default()
        }),
        // An embedding model (`/v1/embeddings`), on an unthrottled card.
        "embed" => Some(SimConfig {
            model: "goodput-sim-embed".into(),
            embeddings: Some(EmbeddingsConfig::default()),
            ..SimConfig::default()
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid() {
        for name in PRESETS {
            let c = preset(name).unwrap_or_else(|| panic!("missing preset {name}"));
            c.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(preset("nope").is_none());
    }

    #[test]
    fn l4_pool_is_183_blocks() {
        let c = preset("vllm-fast-b").unwrap();
        assert_eq!(c.num_gpu_blocks(), 183);
        assert_eq!(c.kv_capacity_tokens(), 2928);
    }
}
