//! Step cost: how long one scheduler step takes in simulated time.
//!
//! ```text
//! gpu_ms = (step_fixed_ms + per_prefill_token_ms * prefill_tokens
//!           + per_decode_seq_ms * decode_seqs + per_kv_token_ms * kv_tokens
//!           + prefill_step_ms * [any prefill] + per_prefill_seq_ms * prefill_seqs
//!           + verify_cost_ms * [any drafts] + per_draft_token_ms * draft_tokens)
//!          * boost_clock / sm_clock
//! step_ms = max(gpu_ms, sched_cpu_ms)   with async scheduling
//!         = gpu_ms + sched_cpu_ms       without
//! ```
//!
//! The two prefill terms besides the per-token one are what a CPU engine
//! (llama.cpp) shows: a step that prefills anything costs more than the marginal
//! cost of its tokens (the first prompt's matrix products are slow, a batch of
//! them is cheaper per prompt), and every new request carries a handling cost
//! (HTTP, tokenisation, slot set-up) that the engine's one thread pays in the step.
//!
//! Two costs are not step costs: the API server's front-end, one
//! first-come-first-served queue beside the engine, takes `frontend_ms` per
//! arriving request and `frontend_chunk_ms` per output chunk it streams (one
//! request's outputs of one step); a request waits there behind both
//! ([`super::Engine::arrive`]) while the engine keeps stepping.

use crate::config::SimConfig;

/// What one step computes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepLoad {
    /// Prompt (or recomputed) tokens prefilled in the step.
    pub prefill_tokens: u64,
    /// Requests with prefill tokens in the step.
    pub prefill_seqs: u64,
    /// Requests decoding in the step.
    pub decode_seqs: u64,
    /// Speculative draft tokens verified in the step.
    pub draft_tokens: u64,
    /// KV entries attended: the context length of every scheduled request.
    pub kv_tokens: u64,
}

/// The cost coefficients of [`SimConfig`].
#[derive(Debug, Clone, Copy)]
pub struct StepCost {
    fixed_ms: f64,
    prefill_ms: f64,
    decode_ms: f64,
    kv_ms: f64,
    prefill_step_ms: f64,
    prefill_seq_ms: f64,
    verify_ms: f64,
    draft_ms: f64,
    sched_cpu_ms: f64,
    async_scheduling: bool,
}

impl StepCost {
    /// Coefficients from a configuration.
    pub fn from_config(c: &SimConfig) -> StepCost {
        StepCost {
            fixed_ms: c.step_fixed_ms,
            prefill_ms: c.per_prefill_token_ms,
            decode_ms: c.per_decode_seq_ms,
            kv_ms: c.per_kv_token_ms,
            prefill_step_ms: c.prefill_step_ms,
            prefill_seq_ms: c.per_prefill_seq_ms,
            verify_ms: c.speculative.as_ref().map_or(0.0, |s| s.verify_cost_ms),
            draft_ms: c.speculative.as_ref().map_or(0.0, |s| s.per_draft_token_ms),
            sched_cpu_ms: c.sched_cpu_ms,
            async_scheduling: c.async_scheduling,
        }
    }

    /// GPU time of a step at the boost clock, ms.
    pub fn gpu_ms(&self, load: &StepLoad) -> f64 {
        self.fixed_ms
            + self.prefill_ms * load.prefill_tokens as f64
            + self.decode_ms * load.decode_seqs as f64
            + self.kv_ms * load.kv_tokens as f64
            + if load.prefill_seqs > 0 {
                self.prefill_step_ms
            } else {
                0.0
            }
            + self.prefill_seq_ms * load.prefill_seqs as f64
            + if load.draft_tokens > 0 {
                self.verify_ms
            } else {
                0.0
            }
            + self.draft_ms * load.draft_tokens as f64
    }

    /// Step duration in simulated seconds, with GPU work slowed down by `slowdown`
    /// (boost clock / current clock).
    pub fn duration_s(&self, load: &StepLoad, slowdown: f64) -> f64 {
        let gpu = self.gpu_ms(load) * slowdown;
        let total = if self.async_scheduling {
            gpu.max(self.sched_cpu_ms)
        } else {
            gpu + self.sched_cpu_ms
        };
        total / 1000.0
    }
}
