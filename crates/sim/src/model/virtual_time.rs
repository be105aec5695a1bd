//! A load driver in virtual time: the engine model ([`Engine`]) driven by a
//! closed-loop or open-loop client with no sockets, no clock and no sleeping, as
//! `goodput run --predict` needs it. Every request comes back with its raw facts
//! (scheduled, sent, each chunk's time and tokens, done), so the caller builds
//! ordinary request records from them and derives every metric the usual way.
//!
//! The client follows goodput's load generator:
//! - closed loop: `concurrency` clients, client `i` sends its first request at
//!   `i × stagger_s`; each sends its next request `delay_s` after the last token of
//!   its previous one (an HTTP round trip: the request misses the step that starts
//!   at that instant, as on a real engine);
//! - open loop: request `i` is due at `offsets_s[i]`; with a cap on requests in
//!   flight it waits for a free slot, and its send time is when it got one.
//!
//! The engine starts idle with a cool GPU at time 0. A request goes through the
//! engine's front-end (`frontend_ms`, one request at a time, from its send time,
//! behind the output chunks it is streaming, `frontend_chunk_ms` each) and joins
//! the next step that starts after it is through. The run ends when every request is done, when
//! nothing can ever be scheduled (a request larger than the KV pool), or at
//! `horizon_s`; requests not done by then have no `done` time.
//!
//! [`simulate_traced`] also samples the engine's GPU model ([`GpuState`]: power,
//! clocks, temperature) every `every_s` of virtual time, as a telemetry sampler
//! would beside a real run: a sample during a step reads the GPU at the step's end,
//! one in an idle gap reads the idle GPU.

use std::collections::HashMap;

use super::{Engine, GpuState, RequestSpec};
use crate::config::SimConfig;

/// How requests arrive.
#[derive(Debug, Clone, PartialEq)]
pub enum Arrivals {
    /// `concurrency` clients, each sending its next request after the last one ended.
    Closed {
        /// Clients (requests in flight), at least 1.
        concurrency: u32,
    },
    /// Request `i` is due at `offsets_s[i]` seconds (ascending).
    Open {
        /// Due times, s from the start; one per request.
        offsets_s: Vec<f64>,
        /// Most requests in flight; later ones wait for a slot.
        max_concurrency: Option<u32>,
    },
}

/// The client's own timing, s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientTiming {
    /// Gap between the first requests of successive closed-loop clients.
    pub stagger_s: f64,
    /// From a request's last token to the arrival of the client's next request.
    pub delay_s: f64,
}

impl Default for ClientTiming {
    fn default() -> Self {
        ClientTiming {
            stagger_s: 0.001,
            delay_s: 0.002,
        }
    }
}

/// What happened to one request, in virtual seconds from the start.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VirtualRequest {
    /// When the client meant to send it.
    pub scheduled: f64,
    /// When it was sent; `None` if the run ended first.
    pub sent: Option<f64>,
    /// Each chunk: arrival time and tokens in it.
    pub chunks: Vec<(f64, u32)>,
    /// When its last token arrived; `None` if it never finished.
    pub done: Option<f64>,
}

/// Most steps one run may take: a bound on the loop whatever the configuration.
const MAX_STEPS: u64 = 50_000_000;
/// Most GPU samples one traced run keeps.
const MAX_GPU_SAMPLES: usize = 100_000;

/// The GPU model's state every `every_s` of virtual time.
struct GpuSampler {
    every_s: Option<f64>,
    next: f64,
    out: Vec<(f64, GpuState)>,
}

impl GpuSampler {
    /// Samples every due instant up to `now`.
    fn upto(&mut self, engine: &Engine, now: f64) {
        let Some(every) = self.every_s else { return };
        while self.next <= now && self.out.len() < MAX_GPU_SAMPLES {
            self.out.push((self.next, engine.gpu().state_at(self.next)));
            self.next += every;
        }
    }
}

/// A traced run: each request, and the GPU model's samples (time, state).
#[derive(Debug, Clone, Default)]
pub struct Traced {
    /// One per request, in request order (as [`simulate`] returns them).
    pub requests: Vec<VirtualRequest>,
    /// The GPU every `every_s`, from time 0 to the run's end.
    pub gpu: Vec<(f64, GpuState)>,
}

/// The client side of a run: who sends next, and when.
struct Client<'a> {
    arrivals: &'a Arrivals,
    timing: ClientTiming,
    out: Vec<VirtualRequest>,
    /// Next request index not yet sent.
    next: usize,
    /// Sent, not yet handed to the engine: (time, index).
    pending: Vec<(f64, usize)>,
    in_flight: u32,
    /// Since when a slot has been free (open loop with a cap).
    slot_free_at: f64,
}

impl Client<'_> {
    fn send(&mut self, idx: usize, at: f64) {
        self.out[idx].sent = Some(at);
        if matches!(self.arrivals, Arrivals::Closed { .. }) {
            self.out[idx].scheduled = at;
        }
        self.pending.push((at, idx));
        self.in_flight += 1;
    }

    /// Open loop: send every request due by `now` that has a slot.
    fn send_due(&mut self, now: f64) {
        let arrivals = self.arrivals;
        let Arrivals::Open {
            offsets_s,
            max_concurrency,
        } = arrivals
        else {
            return;
        };
        let cap = max_concurrency.unwrap_or(u32::MAX);
        while self.next < self.out.len() && self.in_flight < cap {
            let due = offsets_s.get(self.next).copied().unwrap_or(0.0);
            if due > now {
                break;
            }
            let at = due.max(self.slot_free_at);
            self.send(self.next, at);
            self.next += 1;
        }
    }

    /// A request finished at `end`: its client sends the next (closed loop), or
    /// its slot frees (open loop).
    fn finished(&mut self, end: f64) {
        self.in_flight = self.in_flight.saturating_sub(1);
        let arrivals = self.arrivals;
        match arrivals {
            Arrivals::Closed { .. } => {
                if self.next < self.out.len() {
                    self.send(self.next, end + self.timing.delay_s);
                    self.next += 1;
                }
            }
            Arrivals::Open {
                max_concurrency, ..
            } => {
                if max_concurrency.is_some_and(|c| self.in_flight + 1 == c) {
                    self.slot_free_at = end;
                }
            }
        }
    }

    /// The next time something arrives at the engine, if anything will.
    fn next_arrival(&self) -> Option<f64> {
        let pending = self.pending.iter().map(|p| p.0).min_by(f64::total_cmp);
        let due = match self.arrivals {
            Arrivals::Open {
                offsets_s,
                max_concurrency,
            } if self.next < self.out.len()
                && max_concurrency.is_none_or(|c| self.in_flight < c) =>
            {
                offsets_s.get(self.next).copied()
            }
            _ => None,
        };
        match (pending, due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Runs `requests` through the engine model of `config` under `arrivals`, in
/// virtual time; one [`VirtualRequest`] per request, in request order.
pub fn simulate(
    config: &SimConfig,
    arrivals: &Arrivals,
    requests: &[RequestSpec],
    timing: ClientTiming,
    horizon_s: f64,
) -> Vec<VirtualRequest> {
    simulate_traced(config, arrivals, requests, timing, horizon_s, None).requests
}

/// [`simulate`], with the GPU model sampled every `every_s` (none when `None`, not
/// positive or not finite).
pub fn simulate_traced(
    config: &SimConfig,
    arrivals: &Arrivals,
    requests: &[RequestSpec],
    timing: ClientTiming,
    horizon_s: f64,
    every_s: Option<f64>,
) -> Traced {
    let mut gpu = GpuSampler {
        every_s: every_s.filter(|e| e.is_finite() && *e > 0.0),
        next: 0.0,
        out: Vec::new(),
    };
    let mut engine = Engine::new(config);
    let mut c = Client {
        arrivals,
        timing,
        out: vec![VirtualRequest::default(); requests.len()],
        next: 0,
        pending: Vec::new(),
        in_flight: 0,
        slot_free_at: 0.0,
    };
    if let Arrivals::Open { offsets_s, .. } = arrivals {
        for (r, &t) in c.out.iter_mut().zip(offsets_s) {
            r.scheduled = t;
        }
    }
    if let Arrivals::Closed { concurrency } = arrivals {
        let n = (*concurrency).max(1) as usize;
        for i in 0..n.min(requests.len()) {
            c.send(i, i as f64 * timing.stagger_s);
        }
        c.next = n.min(requests.len());
    }
    let mut in_engine: HashMap<u64, usize> = HashMap::new();
    let mut now = 0.0_f64;
    for _ in 0..MAX_STEPS {
        c.send_due(now);
        c.pending.sort_by(|a, b| a.0.total_cmp(&b.0));
        let ready = c.pending.iter().take_while(|p| p.0 <= now).count();
        for (at, idx) in c.pending.drain(..ready) {
            // Through the front-end (its queue starts when the request was sent).
            engine.arrive(idx as u64, requests[idx], Vec::new(), at);
            in_engine.insert(idx as u64, idx);
        }
        if now > horizon_s {
            break;
        }
        let Some(step) = engine.step(now) else {
            let next = match (c.next_arrival(), engine.next_ready()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            match next {
                Some(t) if t > now => {
                    // Idle until `t`: sampled before the GPU is busy again.
                    gpu.upto(&engine, t);
                    now = t;
                }
                // Nothing becomes schedulable later (a request larger than the pool).
                _ => break,
            }
            continue;
        };
        now = step.end;
        gpu.upto(&engine, now);
        for ev in &step.events {
            let Some(&idx) = in_engine.get(&ev.id) else {
                continue;
            };
            c.out[idx].chunks.push((ev.at, ev.tokens));
            if ev.finished {
                c.out[idx].done = Some(ev.at);
                in_engine.remove(&ev.id);
                c.finished(ev.at);
            }
        }
    }
    Traced {
        requests: c.out,
        gpu: gpu.out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(seed: u64) -> RequestSpec {
        RequestSpec {
            prompt_tokens: 100,
            output_tokens: 10,
            endless: false,
            seed,
        }
    }

    fn plain() -> SimConfig {
        SimConfig {
            step_fixed_ms: 10.0,
            per_prefill_token_ms: 0.1,
            per_decode_seq_ms: 1.0,
            per_kv_token_ms: 0.0,
            sched_cpu_ms: 0.0,
            ..SimConfig::default()
        }
    }

    #[test]
    fn one_client_gets_exact_step_times() {
        let reqs: Vec<_> = (0..3).map(spec).collect();
        let out = simulate(
            &plain(),
            &Arrivals::Closed { concurrency: 1 },
            &reqs,
            ClientTiming::default(),
            1e6,
        );
        // Prefill step: 10 + 100 × 0.1 = 20 ms; decode steps: 10 + 1 = 11 ms.
        let r = &out[0];
        assert_eq!(r.sent, Some(0.0));
        assert!((r.chunks[0].0 - 0.020).abs() < 1e-9, "{:?}", r.chunks);
        assert!((r.chunks[1].0 - r.chunks[0].0 - 0.011).abs() < 1e-9);
        assert_eq!(r.chunks.iter().map(|c| c.1).sum::<u32>(), 10);
        // The next request is sent 2 ms after the last token.
        let done = r.done.unwrap();
        assert!((out[1].sent.unwrap() - done - 0.002).abs() < 1e-12);
        assert!(out.iter().all(|r| r.done.is_some()));
    }

    #[test]
    fn the_front_end_delays_each_request_and_queues_them_one_at_a_time() {
        let config = SimConfig {
            frontend_ms: 5.0,
            ..plain()
        };
        let reqs: Vec<_> = (0..2).map(spec).collect();
        // One client: through the front-end (5 ms), then the prefill step (20 ms).
        let one = simulate(
            &config,
            &Arrivals::Closed { concurrency: 1 },
            &reqs[..1],
            ClientTiming::default(),
            1e6,
        );
        assert!(
            (one[0].chunks[0].0 - 0.025).abs() < 1e-9,
            "{:?}",
            one[0].chunks
        );
        // Two sent together: the second waits for the first's front-end time, so
        // it misses the step that starts at 5 ms and joins the next one.
        let arrivals = Arrivals::Open {
            offsets_s: vec![0.0, 0.0],
            max_concurrency: None,
        };
        let two = simulate(&config, &arrivals, &reqs, ClientTiming::default(), 1e6);
        assert!(
            (two[0].chunks[0].0 - 0.025).abs() < 1e-9,
            "{:?}",
            two[0].chunks
        );
        // Step 2 starts at 25 ms: the second prefill (20 ms) + the first's decode (1 ms).
        assert!(
            (two[1].chunks[0].0 - 0.046).abs() < 1e-9,
            "{:?}",
            two[1].chunks
        );
        assert!(two.iter().all(|r| r.done.is_some()));
        // Without a front-end time both join the first step.
        let none = simulate(&plain(), &arrivals, &reqs, ClientTiming::default(), 1e6);
        assert_eq!(none[0].chunks[0].0, none[1].chunks[0].0);
    }

    #[test]
    fn a_request_waits_behind_the_output_chunks_the_front_end_streams() {
        let config = SimConfig {
            frontend_chunk_ms: 3.0,
            ..plain()
        };
        let one_token = |seed| RequestSpec {
            output_tokens: 1,
            ..spec(seed)
        };
        let reqs = [one_token(0), one_token(1)];
        // (first request's first chunk, second request's first chunk)
        let first_chunks = |config: &SimConfig, second_at: f64| {
            let arrivals = Arrivals::Open {
                offsets_s: vec![0.0, second_at],
                max_concurrency: None,
            };
            let out = simulate(config, &arrivals, &reqs, ClientTiming::default(), 1e6);
            assert!(out.iter().all(|r| r.done.is_some()));
            (out[0].chunks[0].0, out[1].chunks[0].0)
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // The first request's prefill step ends at 20 ms; the front-end streams
        // its chunk until 23 ms (the client sees it then). Sent at 21 ms, the
        // second request waits for it: its prefill step runs 23..43 ms, its chunk
        // is through at 46 ms.
        let (a, b) = first_chunks(&config, 0.021);
        assert!(close(a, 0.023) && close(b, 0.046), "{a} {b}");
        // Without the chunk cost: 20 ms, and a step 21..41 ms.
        let (a, b) = first_chunks(&plain(), 0.021);
        assert!(close(a, 0.020) && close(b, 0.041), "{a} {b}");
        // Sent after the front-end is through, it does not wait: 24..44 (+3) ms.
        let (_, b) = first_chunks(&config, 0.024);
        assert!(close(b, 0.047), "{b}");
    }

    #[test]
    fn open_loop_cap_delays_sends_to_a_free_slot() {
        let reqs: Vec<_> = (0..3).map(spec).collect();
        let arrivals = Arrivals::Open {
            offsets_s: vec![0.0, 0.0, 0.0],
            max_concurrency: Some(1),
        };
        let out = simulate(&plain(), &arrivals, &reqs, ClientTiming::default(), 1e6);
        assert_eq!(out[1].scheduled, 0.0);
        assert_eq!(out[1].sent, out[0].done);
        assert_eq!(out[2].sent, out[1].done);
    }

    #[test]
    fn request_larger_than_the_pool_never_finishes_and_the_run_ends() {
        let config = SimConfig {
            kv_pool_tokens: 64,
            ..plain()
        };
        let out = simulate(
            &config,
            &Arrivals::Closed { concurrency: 1 },
            &[spec(0)],
            ClientTiming::default(),
            1e6,
        );
        assert_eq!(out[0].sent, Some(0.0));
        assert!(out[0].done.is_none() && out[0].chunks.is_empty());
    }

    #[test]
    fn horizon_bounds_the_run() {
        let reqs: Vec<_> = (0..100).map(spec).collect();
        let out = simulate(
            &plain(),
            &Arrivals::Closed { concurrency: 1 },
            &reqs,
            ClientTiming::default(),
            0.5,
        );
        let done = out.iter().filter(|r| r.done.is_some()).count();
        assert!(done > 0 && done < 100, "{done}");
    }

    #[test]
    fn the_traced_gpu_is_sampled_on_time_busy_then_idle() {
        // Two requests 3 s apart: busy briefly, idle, busy again.
        let arrivals = Arrivals::Open {
            offsets_s: vec![0.0, 3.0],
            max_concurrency: None,
        };
        let reqs = [spec(0), spec(1)];
        let t = simulate_traced(
            &plain(),
            &arrivals,
            &reqs,
            ClientTiming::default(),
            1e6,
            Some(0.1),
        );
        assert_eq!(
            t.requests,
            simulate(&plain(), &arrivals, &reqs, ClientTiming::default(), 1e6)
        );
        let times: Vec<f64> = t.gpu.iter().map(|(at, _)| *at).collect();
        assert!(
            times.windows(2).all(|w| (w[1] - w[0] - 0.1).abs() < 1e-9),
            "{times:?}"
        );
        let end = t.requests[1].done.unwrap();
        assert!(times
            .last()
            .is_some_and(|l| *l <= end && end - l < 0.1 + 1e-9));
        // Power falls while idle (between the requests) and rises again.
        let power_at = |s: f64| t.gpu.iter().find(|(at, _)| *at >= s).unwrap().1.power_w;
        assert!(power_at(2.9) < power_at(0.1), "idle draws less");
        assert!(power_at(2.9) >= 16.0);
        let none = simulate_traced(
            &plain(),
            &arrivals,
            &reqs,
            ClientTiming::default(),
            1e6,
            None,
        );
        assert!(none.gpu.is_empty());
    }
}
