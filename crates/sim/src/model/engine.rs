//! The continuous-batching scheduler, in the style of vLLM V1.
//!
//! Each [`Engine::step`] schedules one batch at an explicit simulated time:
//! running requests first (decodes and unfinished prefill chunks, oldest
//! first), then waiting requests in FCFS order while the token budget, the
//! sequence limit and the KV pool allow. A waiting request is admitted only
//! when blocks for its whole prompt are free. When a running request needs a
//! block and none is free, the newest running request is preempted: its
//! blocks are freed and it goes back to the front of the waiting queue, to be
//! recomputed (prompt and generated tokens) when it is admitted again.
//!
//! Token accounting follows vLLM: a request holds `prompt + generated` tokens,
//! of which `computed` have KV entries; a step schedules the uncomputed ones
//! (a prefill chunk, or the one last sampled token of a decode, plus draft
//! tokens with speculative decoding), and when all are computed it samples
//! `1 + accepted` new tokens.

use std::collections::VecDeque;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::cost::StepCost;
use super::gpu::Gpu;
use super::{draw_acceptance, Counters, RequestSpec, StepOutcome, TokenEvent};
use crate::config::SimConfig;

/// Identifier the caller gives each request.
pub type RequestId = u64;

#[derive(Debug)]
struct Req {
    id: RequestId,
    prompt: u32,
    /// Tokens to generate; `None` for an endless request.
    target: Option<u32>,
    generated: u32,
    computed: u32,
    blocks: u32,
    acceptance: f64,
    rng: StdRng,
    /// The request's work factor (seeded noise; 1 without jitter).
    work: f64,
    prompt_counted: bool,
    /// Chained hashes of the prompt's full blocks (prefix caching).
    prefix: Vec<u64>,
}

impl Req {
    fn num_tokens(&self) -> u32 {
        self.prompt.saturating_add(self.generated)
    }

    fn remaining(&self) -> u32 {
        match self.target {
            Some(t) => t.saturating_sub(self.generated),
            None => u32::MAX,
        }
    }

    fn is_decode(&self) -> bool {
        self.generated > 0 && self.num_tokens() - self.computed == 1
    }
}

/// One scheduled entry of a step.
#[derive(Debug, Clone, Copy)]
struct Scheduled {
    id: RequestId,
    tokens: u32,
    drafts: u32,
    decode: bool,
}

/// The simulated engine: scheduler, KV pool, GPU, counters.
#[derive(Debug)]
pub struct Engine {
    cost: StepCost,
    block_size: u32,
    total_blocks: u32,
    free_blocks: u32,
    max_num_seqs: usize,
    max_batched: u32,
    kv_cap: u32,
    spec_k: u32,
    config: SimConfig,
    waiting: VecDeque<Req>,
    running: Vec<Req>,
    /// The front-end: requests it is handling (ready time, request), in order.
    arriving: VecDeque<(f64, Req)>,
    /// When the front-end finishes the requests it has been given.
    frontend_free: f64,
    /// Output chunks the front-end has still to stream: (when the step that
    /// produced them ended, front-end seconds they take), in time order
    /// (each chunk's own time is in its [`TokenEvent::at`]).
    chunk_work: VecDeque<(f64, f64)>,
    gpu: Gpu,
    counters: Counters,
    prefix_cache: super::prefix::PrefixCache,
    noise: super::noise::Noise,
}

impl Engine {
    /// An idle engine with an empty KV pool and a cool GPU at time 0.
    pub fn new(config: &SimConfig) -> Engine {
        let total_blocks = config.num_gpu_blocks();
        Engine {
            cost: StepCost::from_config(config),
            block_size: config.block_size.max(1),
            total_blocks,
            free_blocks: total_blocks,
            max_num_seqs: config.max_num_seqs.max(1) as usize,
            max_batched: config.max_num_batched_tokens.max(1),
            kv_cap: config.max_model_len,
            spec_k: config
                .speculative
                .as_ref()
                .map_or(0, |s| s.num_speculative_tokens),
            config: config.clone(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            arriving: VecDeque::new(),
            frontend_free: 0.0,
            chunk_work: VecDeque::new(),
            gpu: Gpu::new(config.thermal.clone()),
            counters: Counters::default(),
            prefix_cache: super::prefix::PrefixCache::new(total_blocks as usize),
            noise: super::noise::Noise::new(config.jitter.as_ref(), config.seed),
        }
    }

    /// Queue a request (it arrives at the end of the waiting queue).
    pub fn add_request(&mut self, id: RequestId, spec: RequestSpec) {
        self.add_request_with_prefix(id, spec, Vec::new());
    }

    /// Queue a request whose prompt's full blocks hash to `prefix`
    /// ([`super::prefix::block_hashes`]): leading blocks computed before for
    /// another request are not prefilled again. It joins the waiting queue at
    /// once (no front-end time; see [`Engine::arrive`]).
    pub fn add_request_with_prefix(&mut self, id: RequestId, spec: RequestSpec, prefix: Vec<u64>) {
        let mut r = self.new_req(id, spec, prefix);
        r.work = self.noise.request_factor();
        self.waiting.push_back(r);
    }

    /// A request arriving at the server at `at` (simulated seconds, in arrival
    /// order): the front-end handles one request at a time, `frontend_ms` each,
    /// first come first served, and hands it to the waiting queue when done
    /// (a step starting at or after that time can schedule it). The output
    /// chunks of the steps that ended before `at` are ahead of it in the same
    /// queue (`frontend_chunk_ms` each). Without front-end time it joins the
    /// waiting queue at once.
    pub fn arrive(&mut self, id: RequestId, spec: RequestSpec, prefix: Vec<u64>, at: f64) {
        let mut r = self.new_req(id, spec, prefix);
        r.work = self.noise.request_factor();
        self.stream_chunks(at);
        let ms = self.config.frontend_ms * r.work;
        let ms = if ms.is_finite() { ms.max(0.0) } else { 0.0 };
        let ready = at.max(self.frontend_free) + ms / 1000.0;
        if ready <= at {
            self.waiting.push_back(r);
            return;
        }
        self.frontend_free = ready;
        self.arriving.push_back((ready, r));
    }

    /// The front-end streams the output chunks of the steps that ended by `now`
    /// (first come first served, after what it was already given).
    fn stream_chunks(&mut self, now: f64) {
        while self.chunk_work.front().is_some_and(|c| c.0 <= now) {
            if let Some((t, s)) = self.chunk_work.pop_front() {
                self.frontend_free = self.frontend_free.max(t) + s;
            }
        }
    }

    /// The step's output chunks (ended at `end`) join the front-end's queue,
    /// `frontend_chunk_ms` each, behind what it was given before; each chunk's
    /// `at` is when it is through. Requests arriving during the step (after
    /// `now`) are not known yet: they queue behind these chunks' times in
    /// [`Engine::arrive`] only if they came after `end`, and the chunks do not
    /// wait for them (a simplification of at most a front-end time a chunk).
    fn stream_outputs(&mut self, now: f64, end: f64, events: &mut [TokenEvent]) {
        self.stream_chunks(now);
        let each = self.config.frontend_chunk_ms / 1000.0;
        if !(each > 0.0 && each.is_finite()) || events.is_empty() {
            return;
        }
        let mut free = self.frontend_free;
        for &(t, s) in &self.chunk_work {
            free = free.max(t) + s;
        }
        let mut t = free.max(end);
        for ev in events.iter_mut() {
            t += each;
            ev.at = t;
        }
        self.chunk_work.push_back((end, each * events.len() as f64));
    }

    /// When the front-end hands its next request to the waiting queue, if it
    /// has one.
    pub fn next_ready(&self) -> Option<f64> {
        self.arriving.front().map(|a| a.0)
    }

    /// Requests the front-end has finished by `now` join the waiting queue.
    fn admit_arrived(&mut self, now: f64) {
        while self.arriving.front().is_some_and(|a| a.0 <= now) {
            if let Some((_, r)) = self.arriving.pop_front() {
                self.waiting.push_back(r);
            }
        }
    }

    fn new_req(&self, id: RequestId, spec: RequestSpec, prefix: Vec<u64>) -> Req {
        // The acceptance rate is a property of the request (its prompt), so it
        // depends on the request's seed alone; the per-step draws also on the
        // engine's seed.
        let acceptance = draw_acceptance(&self.config, &mut StdRng::seed_from_u64(spec.seed));
        let rng = StdRng::seed_from_u64(spec.seed ^ self.config.seed.rotate_left(32));
        Req {
            id,
            prompt: spec.prompt_tokens.max(1),
            target: if spec.endless {
                None
            } else {
                Some(spec.output_tokens.max(1))
            },
            generated: 0,
            computed: 0,
            blocks: 0,
            acceptance,
            rng,
            work: 1.0,
            prompt_counted: false,
            prefix,
        }
    }

    /// Remove a request wherever it is, freeing its blocks. Returns whether it was known.
    pub fn cancel(&mut self, id: RequestId) -> bool {
        if let Some(i) = self.running.iter().position(|r| r.id == id) {
            let r = self.running.remove(i);
            self.free_blocks += r.blocks;
            return true;
        }
        if let Some(i) = self.waiting.iter().position(|r| r.id == id) {
            if let Some(r) = self.waiting.remove(i) {
                self.free_blocks += r.blocks;
            }
            return true;
        }
        if let Some(i) = self.arriving.iter().position(|a| a.1.id == id) {
            // Its front-end time stays spent: the server handled it.
            self.arriving.remove(i);
            return true;
        }
        false
    }

    /// Whether any request is waiting or running, or still in the front-end.
    pub fn has_work(&self) -> bool {
        !self.running.is_empty() || !self.waiting.is_empty() || !self.arriving.is_empty()
    }

    /// Requests admitted (holding KV blocks).
    pub fn num_running(&self) -> usize {
        self.running.len()
    }

    /// Requests waiting for admission (including preempted ones).
    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Blocks in the pool.
    pub fn total_blocks(&self) -> u32 {
        self.total_blocks
    }

    /// Blocks free now.
    pub fn free_blocks(&self) -> u32 {
        self.free_blocks
    }

    /// Share of the KV pool in use, 0..=1.
    pub fn kv_usage(&self) -> f64 {
        if self.total_blocks == 0 {
            return 0.0;
        }
        f64::from(self.total_blocks - self.free_blocks) / f64::from(self.total_blocks)
    }

    /// Cumulative counters (vLLM's Prometheus counters).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The simulated GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    fn blocks_for(&self, tokens: u32) -> u32 {
        tokens.min(self.kv_cap).div_ceil(self.block_size)
    }

    /// Preempt the newest running request; returns its id.
    fn preempt_newest(&mut self) -> Option<RequestId> {
        let mut victim = self.running.pop()?;
        self.free_blocks += victim.blocks;
        victim.blocks = 0;
        victim.computed = 0;
        let id = victim.id;
        self.waiting.push_front(victim);
        self.counters.num_preemptions += 1;
        Some(id)
    }

    /// Schedule the running requests; returns whether a preemption happened.
    fn schedule_running(&mut self, budget: &mut u32, batch: &mut Vec<Scheduled>) -> bool {
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() && *budget > 0 {
            let (id, decode, computed, tokens, drafts) = {
                let r = &self.running[i];
                let decode = r.is_decode();
                if decode {
                    let drafts = self
                        .spec_k
                        .min(r.remaining().saturating_sub(1))
                        .min(*budget - 1);
                    (r.id, true, r.computed, 1 + drafts, drafts)
                } else {
                    let pending = r.num_tokens() - r.computed;
                    (r.id, false, r.computed, pending.min(*budget), 0)
                }
            };
            let need = self
                .blocks_for(computed.saturating_add(tokens))
                .saturating_sub(self.running[i].blocks);
            let mut self_preempted = false;
            while need > self.free_blocks {
                preempted = true;
                if self.preempt_newest() == Some(id) {
                    self_preempted = true;
                    break;
                }
            }
            if self_preempted {
                break;
            }
            self.free_blocks -= need;
            self.running[i].blocks += need;
            *budget -= tokens;
            batch.push(Scheduled {
                id,
                tokens,
                drafts,
                decode,
            });
            i += 1;
        }
        preempted
    }

    /// Admit waiting requests in FCFS order.
    fn schedule_waiting(&mut self, budget: &mut u32, batch: &mut Vec<Scheduled>) {
        while *budget > 0 && self.running.len() < self.max_num_seqs {
            let Some(front) = self.waiting.front() else {
                break;
            };
            let need = self.blocks_for(front.num_tokens());
            if need > self.free_blocks {
                break;
            }
            let Some(mut r) = self.waiting.pop_front() else {
                break;
            };
            self.free_blocks -= need;
            r.blocks = need;
            self.use_prefix_cache(&mut r);
            let tokens = (r.num_tokens() - r.computed).min(*budget);
            *budget -= tokens;
            batch.push(Scheduled {
                id: r.id,
                tokens,
                drafts: 0,
                decode: false,
            });
            self.running.push(r);
        }
    }

    /// On admission: the leading cached blocks count as computed (at least one
    /// prompt token is always computed, as in vLLM, to sample from).
    fn use_prefix_cache(&mut self, r: &mut Req) {
        if r.computed > 0 || r.generated > 0 || !self.config.prefix_caching {
            return;
        }
        let hit_blocks = self.prefix_cache.lookup(&r.prefix) as u32;
        let hits = (hit_blocks * self.block_size).min(r.prompt.saturating_sub(1));
        self.counters.prefix_cache_queries += u64::from(r.prompt);
        self.counters.prefix_cache_hits += u64::from(hits);
        r.computed = hits;
    }

    /// Run one step starting at `now` (simulated seconds). Returns `None` when
    /// nothing can be scheduled (no work, or only requests the front-end has
    /// not finished: [`Engine::next_ready`]). The GPU is idle from its last step
    /// to `now` and busy for the step; the outcome's tokens are visible at `end`.
    pub fn step(&mut self, now: f64) -> Option<StepOutcome> {
        self.admit_arrived(now);
        self.gpu.advance(now, false);
        let mut budget = self.max_batched;
        let mut batch = Vec::new();
        let preempted = self.schedule_running(&mut budget, &mut batch);
        // Like vLLM, admit nobody in a step that preempted, unless the step
        // would otherwise be empty (everything running was preempted).
        if !preempted || batch.is_empty() {
            self.schedule_waiting(&mut budget, &mut batch);
        }
        if batch.is_empty() {
            return None;
        }
        let mut load = super::cost::StepLoad::default();
        for s in &batch {
            let Some(r) = self.running.iter().find(|r| r.id == s.id) else {
                continue;
            };
            let work = |n: u64| (n as f64 * r.work).round() as u64;
            if s.decode {
                load.decode_seqs += 1;
                load.draft_tokens += u64::from(s.drafts);
            } else if s.tokens > 0 {
                load.prefill_tokens += work(u64::from(s.tokens));
                load.prefill_seqs += 1;
            }
            load.kv_tokens += work(u64::from(
                r.computed.saturating_add(s.tokens).min(self.kv_cap),
            ));
        }
        let duration = self.cost.duration_s(&load, self.gpu.slowdown()) * self.noise.step_factor();
        let end = now + duration;
        self.gpu.advance(end, true);
        let mut events = self.apply(&batch, end);
        self.stream_outputs(now, end, &mut events);
        Some(StepOutcome {
            start: now,
            end,
            load,
            events,
        })
    }

    /// Apply the results of a scheduled batch: computed tokens, sampling, finishing.
    fn apply(&mut self, batch: &[Scheduled], end: f64) -> Vec<TokenEvent> {
        let mut events = Vec::with_capacity(batch.len());
        for s in batch {
            let Some(i) = self.running.iter().position(|r| r.id == s.id) else {
                continue;
            };
            let r = &mut self.running[i];
            let mut emitted = 0;
            if s.decode {
                let mut accepted = 0;
                while accepted < s.drafts && r.rng.gen::<f64>() < r.acceptance {
                    accepted += 1;
                }
                if s.drafts > 0 {
                    self.counters.spec_num_drafts += 1;
                    self.counters.spec_draft_tokens += u64::from(s.drafts);
                    self.counters.spec_accepted_tokens += u64::from(accepted);
                }
                emitted = 1 + accepted;
                r.computed += emitted;
            } else {
                r.computed += s.tokens;
                if r.computed == r.num_tokens() {
                    emitted = 1;
                }
                if r.generated == 0 && r.computed >= r.prompt && self.config.prefix_caching {
                    self.prefix_cache.insert(&r.prefix);
                }
            }
            if emitted == 0 {
                continue;
            }
            let first = r.generated == 0;
            emitted = emitted.min(r.remaining());
            r.generated = r.generated.saturating_add(emitted);
            if !r.prompt_counted {
                r.prompt_counted = true;
                self.counters.prompt_tokens += u64::from(r.prompt);
            }
            self.counters.generation_tokens += u64::from(emitted);
            let finished = r.remaining() == 0;
            events.push(TokenEvent {
                id: s.id,
                tokens: emitted,
                first,
                finished,
                at: end,
            });
            if finished {
                let r = self.running.remove(i);
                self.free_blocks += r.blocks;
                self.counters.requests_finished += 1;
            }
        }
        events
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
