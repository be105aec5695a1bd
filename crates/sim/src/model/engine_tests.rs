//! Scheduler unit tests on hand-computed cases.

use super::*;
use crate::config::{Acceptance, SpeculativeConfig, ThermalConfig};
use crate::model::StepLoad;

/// A small engine: exact costs, no async hiding, no thermal model.
fn cfg(kv_pool_tokens: u32, max_num_batched_tokens: u32) -> SimConfig {
    SimConfig {
        kv_pool_tokens,
        max_model_len: kv_pool_tokens,
        block_size: 16,
        max_num_batched_tokens,
        step_fixed_ms: 10.0,
        per_prefill_token_ms: 1.0,
        per_decode_seq_ms: 0.0,
        per_kv_token_ms: 0.0,
        async_scheduling: false,
        sched_cpu_ms: 0.0,
        ..SimConfig::default()
    }
}

fn req(prompt: u32, output: u32) -> RequestSpec {
    RequestSpec {
        prompt_tokens: prompt,
        output_tokens: output,
        endless: false,
        seed: 7,
    }
}

fn ms(out: &StepOutcome) -> f64 {
    ((out.end - out.start) * 1e6).round() / 1e3
}

#[test]
fn admission_is_blocked_while_the_pool_is_full() {
    // 4 blocks; each 40-token prompt needs 3.
    let mut e = Engine::new(&cfg(64, 1024));
    e.add_request(1, req(40, 2));
    e.add_request(2, req(40, 2));
    let out = e.step(0.0).unwrap();
    assert_eq!(out.load.prefill_tokens, 40);
    assert_eq!((e.num_running(), e.num_waiting()), (1, 1));
    assert_eq!(e.free_blocks(), 1);
    // Request 1 decodes its second token and finishes; 2 is still waiting.
    let out = e.step(out.end).unwrap();
    assert_eq!(out.events.len(), 1);
    assert!(out.events[0].finished);
    assert_eq!(e.free_blocks(), 4);
    // Now request 2 is admitted.
    let out = e.step(out.end).unwrap();
    assert_eq!(out.events[0].id, 2);
    assert!(out.events[0].first);
    assert_eq!(e.num_waiting(), 0);
}

#[test]
fn sequence_limit_blocks_admission() {
    let mut c = cfg(1024, 1024);
    c.max_num_seqs = 1;
    let mut e = Engine::new(&c);
    e.add_request(1, req(10, 3));
    e.add_request(2, req(10, 3));
    e.step(0.0).unwrap();
    assert_eq!((e.num_running(), e.num_waiting()), (1, 1));
}

#[test]
fn long_prompt_is_prefilled_in_chunks() {
    // Budget 16 tokens per step: 40 = 16 + 16 + 8; first token after the third chunk.
    let mut e = Engine::new(&cfg(1024, 16));
    e.add_request(1, req(40, 3));
    let s1 = e.step(0.0).unwrap();
    assert_eq!(s1.load.prefill_tokens, 16);
    assert!(s1.events.is_empty());
    assert_eq!(ms(&s1), 26.0);
    let s2 = e.step(s1.end).unwrap();
    assert_eq!(s2.load.prefill_tokens, 16);
    assert!(s2.events.is_empty());
    let s3 = e.step(s2.end).unwrap();
    assert_eq!(s3.load.prefill_tokens, 8);
    assert_eq!(ms(&s3), 18.0);
    assert_eq!(s3.events.len(), 1);
    assert!(s3.events[0].first);
    assert!((s3.end - 0.070).abs() < 1e-12, "first token at 26+26+18 ms");
    // Then plain decodes.
    let s4 = e.step(s3.end).unwrap();
    assert_eq!(s4.load.decode_seqs, 1);
    assert_eq!(s4.load.prefill_tokens, 0);
}

#[test]
fn decodes_come_first_then_prefill_chunks_fill_the_budget() {
    let mut e = Engine::new(&cfg(1024, 20));
    e.add_request(1, req(10, 5));
    e.step(0.0).unwrap();
    e.add_request(2, req(40, 5));
    let out = e.step(1.0).unwrap();
    assert_eq!(out.load.decode_seqs, 1);
    assert_eq!(out.load.prefill_tokens, 19);
}

#[test]
fn newest_request_is_preempted_when_the_pool_runs_out() {
    // 2 blocks. r1 (16-token prompt) and r2 (8) take one each; r1's first decode
    // needs a second block, so r2 (the newest) is preempted and recomputed later.
    let mut e = Engine::new(&cfg(32, 1024));
    e.add_request(1, req(16, 3));
    e.add_request(2, req(8, 3));
    let s1 = e.step(0.0).unwrap();
    assert_eq!(s1.events.len(), 2);
    assert_eq!(e.free_blocks(), 0);
    let s2 = e.step(s1.end).unwrap();
    assert_eq!(e.counters().num_preemptions, 1);
    assert_eq!(s2.events.len(), 1);
    assert_eq!(s2.events[0].id, 1);
    assert_eq!((e.num_running(), e.num_waiting()), (1, 1));
    // r1 finishes (3 tokens), then r2 recomputes its 8 + 1 tokens and continues.
    let s3 = e.step(s2.end).unwrap();
    assert!(s3.events[0].finished);
    let s4 = e.step(s3.end).unwrap();
    assert_eq!(s4.load.prefill_tokens, 9);
    assert_eq!(s4.events[0].id, 2);
    assert!(!s4.events[0].first);
    assert_eq!(s4.events[0].tokens, 1);
}

#[test]
fn the_newest_request_needing_a_block_preempts_itself() {
    // 3 blocks; two 16-token prompts take one each. r1's first decode takes the
    // last free block; r2 (the newest) then needs one and preempts itself.
    let mut e = Engine::new(&cfg(48, 1024));
    e.add_request(1, req(16, 3));
    e.add_request(2, req(16, 3));
    let s1 = e.step(0.0).unwrap();
    assert_eq!(s1.events.len(), 2);
    let s2 = e.step(s1.end).unwrap();
    assert_eq!(e.counters().num_preemptions, 1);
    assert_eq!(s2.events.len(), 1);
    assert_eq!(s2.events[0].id, 1);
    assert_eq!((e.num_running(), e.num_waiting()), (1, 1));
    assert_eq!(e.free_blocks(), 1);
}

#[test]
fn blocks_are_capped_at_max_model_len() {
    // max_model_len = pool = 32 tokens: a 16 + 40 token request still runs alone
    // because its KV footprint is capped at max_model_len (the server rejects
    // such requests; the cap keeps endless requests bounded).
    let mut e = Engine::new(&cfg(32, 1024));
    e.add_request(1, req(16, 40));
    let mut now = 0.0;
    let mut tokens = 0;
    while let Some(out) = e.step(now) {
        now = out.end;
        tokens += out.events.iter().map(|ev| ev.tokens).sum::<u32>();
    }
    assert_eq!(tokens, 40);
    assert_eq!(e.counters().num_preemptions, 0);
}

#[test]
fn cancel_frees_blocks() {
    let mut e = Engine::new(&cfg(64, 1024));
    e.add_request(1, req(40, 100));
    e.add_request(2, req(40, 100));
    e.step(0.0).unwrap();
    assert!(e.cancel(1));
    assert!(e.cancel(2));
    assert!(!e.cancel(3));
    assert_eq!(e.free_blocks(), 4);
    assert!(!e.has_work());
    assert!(e.step(1.0).is_none());
}

fn spec_cfg(mean: f64) -> SimConfig {
    SimConfig {
        per_prefill_token_ms: 0.0,
        per_decode_seq_ms: 1.0,
        speculative: Some(SpeculativeConfig {
            num_speculative_tokens: 3,
            acceptance: Acceptance::Uniform { mean, spread: 0.0 },
            verify_cost_ms: 0.5,
            per_draft_token_ms: 2.0,
        }),
        ..cfg(1024, 1024)
    }
}

#[test]
fn speculative_step_yields_one_plus_accepted_tokens_in_one_event() {
    let mut e = Engine::new(&spec_cfg(1.0));
    e.add_request(1, req(10, 10));
    let mut now = 0.0;
    let mut chunks = Vec::new();
    let mut durations = Vec::new();
    while let Some(out) = e.step(now) {
        now = out.end;
        durations.push(ms(&out));
        for ev in &out.events {
            chunks.push(ev.tokens);
        }
    }
    // Prefill -> 1; two full acceptances -> 4 + 4; the last token without drafts.
    assert_eq!(chunks, vec![1, 4, 4, 1]);
    // Decode steps with 3 drafts: 10 + 1 + 0.5 + 3 * 2 = 17.5 ms; without drafts 11 ms.
    assert_eq!(durations, vec![10.0, 17.5, 17.5, 11.0]);
    let c = e.counters();
    assert_eq!(
        (
            c.spec_num_drafts,
            c.spec_draft_tokens,
            c.spec_accepted_tokens
        ),
        (2, 6, 6)
    );
    assert_eq!(c.generation_tokens, 10);
}

#[test]
fn zero_acceptance_gives_one_token_per_step() {
    let mut e = Engine::new(&spec_cfg(0.0));
    e.add_request(1, req(10, 5));
    let mut now = 0.0;
    let mut chunks = Vec::new();
    while let Some(out) = e.step(now) {
        now = out.end;
        chunks.extend(out.events.iter().map(|ev| ev.tokens));
    }
    assert_eq!(chunks, vec![1, 1, 1, 1, 1]);
    assert_eq!(e.counters().spec_accepted_tokens, 0);
    assert_eq!(e.counters().spec_draft_tokens, 3 + 2 + 1);
}

#[test]
fn async_scheduling_hides_cpu_time_and_sync_adds_it() {
    let base = SimConfig {
        step_fixed_ms: 10.0,
        per_prefill_token_ms: 0.5,
        per_decode_seq_ms: 2.0,
        per_kv_token_ms: 0.01,
        sched_cpu_ms: 3.0,
        ..cfg(1024, 1024)
    };
    let load = StepLoad {
        prefill_tokens: 100,
        prefill_seqs: 1,
        decode_seqs: 0,
        draft_tokens: 0,
        kv_tokens: 100,
    };
    let run = |async_scheduling: bool, sched_cpu_ms: f64| {
        let c = SimConfig {
            async_scheduling,
            sched_cpu_ms,
            ..base.clone()
        };
        let mut e = Engine::new(&c);
        e.add_request(1, req(100, 2));
        let prefill = e.step(0.0).unwrap();
        let decode = e.step(prefill.end).unwrap();
        (ms(&prefill), ms(&decode))
    };
    // Prefill: 10 + 0.5*100 + 0.01*100 = 61; decode: 10 + 2 + 0.01*101 = 13.01.
    assert_eq!(StepCost::from_config(&base).gpu_ms(&load), 61.0);
    assert_eq!(run(true, 3.0), (61.0, 13.01));
    assert_eq!(run(false, 3.0), (64.0, 16.01));
    // A CPU cost larger than the GPU step dominates with async scheduling.
    assert_eq!(run(true, 20.0), (61.0, 20.0));
}

#[test]
fn prefill_step_and_per_request_costs_are_paid_in_steps_that_prefill() {
    let c = SimConfig {
        prefill_step_ms: 7.0,
        per_prefill_seq_ms: 3.0,
        ..cfg(1024, 1024)
    };
    let mut e = Engine::new(&c);
    e.add_request(1, req(10, 2));
    e.add_request(2, req(20, 2));
    // Both prompts in one step: 10 + 1 × 30 + 7 + 3 × 2 = 53; then a decode: 10.
    let prefill = e.step(0.0).unwrap();
    assert_eq!(prefill.load.prefill_seqs, 2);
    assert_eq!(ms(&prefill), 53.0);
    let decode = e.step(prefill.end).unwrap();
    assert_eq!(decode.load.prefill_seqs, 0);
    assert_eq!(ms(&decode), 10.0);
}

#[test]
fn throttling_slows_steps_by_the_clock_ratio() {
    let c = SimConfig {
        per_prefill_token_ms: 0.0,
        thermal: Some(ThermalConfig {
            boost_mhz: 2000.0,
            throttled_mhz: 500.0,
            heat_after_s: 0.045,
            recover_after_s: 1.0,
            idle_temp_c: 40.0,
            hot_temp_c: 85.0,
        }),
        ..cfg(1024, 1024)
    };
    let mut e = Engine::new(&c);
    e.add_request(1, req(10, 8));
    let mut now = 0.0;
    let mut durations = Vec::new();
    while let Some(out) = e.step(now) {
        now = out.end;
        durations.push(ms(&out));
    }
    // 10 ms steps until 45 ms of busy time have passed, then 4x slower.
    assert_eq!(
        durations,
        vec![10.0, 10.0, 10.0, 10.0, 10.0, 40.0, 40.0, 40.0]
    );
    assert!(e.gpu().throttled());
    assert_eq!(e.gpu().state().sm_clock_mhz, 500.0);
    // After recover_after_s idle the card is cool again.
    e.add_request(2, req(10, 1));
    let out = e.step(now + 1.5).unwrap();
    assert_eq!(ms(&out), 10.0);
}

#[test]
fn a_cached_prefix_is_not_prefilled_again_and_is_counted_like_vllm() {
    use crate::model::prefix::block_hashes;
    // Two prompts of 40 tokens sharing their first 32 (two 16-token blocks).
    let a: Vec<u32> = (0..40).collect();
    let mut b = a.clone();
    b[35] = 999;
    let mut e = Engine::new(&cfg(1024, 1024));
    e.add_request_with_prefix(1, req(40, 1), block_hashes(&a, 16));
    let out = e.step(0.0).unwrap();
    assert_eq!(out.load.prefill_tokens, 40, "cold: the whole prompt");
    e.add_request_with_prefix(2, req(40, 1), block_hashes(&b, 16));
    let out = e.step(out.end).unwrap();
    assert_eq!(
        out.load.prefill_tokens, 8,
        "the two shared blocks are skipped"
    );
    assert_eq!(ms(&out), 18.0, "10 ms fixed + 8 prefill tokens");
    let c = e.counters();
    assert_eq!((c.prefix_cache_queries, c.prefix_cache_hits), (80, 32));
    // The same prompt again: every full block hits, one token is still computed.
    e.add_request_with_prefix(3, req(32, 1), block_hashes(&a[..32], 16));
    let out = e.step(out.end).unwrap();
    assert_eq!(out.load.prefill_tokens, 1);
    assert_eq!(e.counters().prefix_cache_hits, 32 + 31);
    // With prefix caching off, nothing is skipped or counted.
    let mut off = Engine::new(&SimConfig {
        prefix_caching: false,
        ..cfg(1024, 1024)
    });
    off.add_request_with_prefix(1, req(40, 1), block_hashes(&a, 16));
    let t = off.step(0.0).unwrap().end;
    off.add_request_with_prefix(2, req(40, 1), block_hashes(&a, 16));
    assert_eq!(off.step(t).unwrap().load.prefill_tokens, 40);
    assert_eq!(off.counters().prefix_cache_queries, 0);
}
