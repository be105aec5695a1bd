//! The real-time driver: one tokio task owns the [`Engine`] and runs it
//! against the wall clock.
//!
//! Loop: take new requests and cancellations from the command channel, run
//! `step(now)`, sleep until the step's end (an absolute deadline on the
//! precise timer, so lateness never accumulates), then deliver each request's
//! tokens to its channel. Back-to-back steps chain in simulated time (the next
//! step starts at the previous step's scheduled end, not at the moment the
//! task woke up). When idle it waits for a request.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

use super::timer;
use crate::model::{Counters, Engine, Gpu, RequestId, RequestSpec};

/// Capacity of each request's delivery channel (steps not yet written out).
pub(crate) const DELIVERY_CAPACITY: usize = 1024;

/// Tokens for one request from one step: streamed as one chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Delivery {
    /// Tokens in the chunk.
    pub tokens: u32,
    /// Whether the request is complete.
    pub finished: bool,
    /// When the step ended (the chunk's scheduled send time).
    pub scheduled: Instant,
}

pub(crate) enum Command {
    Add {
        id: RequestId,
        spec: RequestSpec,
        tx: mpsc::Sender<Delivery>,
        /// The prompt's block hashes, for the prefix cache.
        prefix: Vec<u64>,
        /// When the request arrived (its last bytes were received).
        arrived: Instant,
    },
    Cancel {
        id: RequestId,
    },
}

/// What `/metrics` and `/sim/gpu` read, refreshed after every step.
#[derive(Debug, Clone)]
pub(crate) struct Published {
    pub running: usize,
    pub waiting: usize,
    pub kv_usage: f64,
    pub counters: Counters,
    pub gpu: Gpu,
}

/// Maps simulated seconds onto the wall clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SimClock {
    pub start: Instant,
    pub time_scale: f64,
}

impl SimClock {
    /// Simulated seconds at wall instant `t`.
    pub fn sim(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64() * self.time_scale
    }

    /// Wall instant of simulated time `s`.
    pub fn wall(&self, s: f64) -> Instant {
        let secs = (s / self.time_scale).max(0.0);
        let far = Duration::from_secs(1 << 32);
        let d = Duration::try_from_secs_f64(secs).unwrap_or(far).min(far);
        self.start.checked_add(d).unwrap_or(self.start)
    }
}

/// Owns the engine; see the module docs.
pub(crate) struct Driver {
    pub engine: Engine,
    pub commands: mpsc::UnboundedReceiver<Command>,
    pub published: Arc<Mutex<Published>>,
    pub clock: SimClock,
    pub shutdown: watch::Receiver<bool>,
}

impl Driver {
    fn publish(&self) {
        let mut p = self.published.lock();
        p.running = self.engine.num_running();
        p.waiting = self.engine.num_waiting();
        p.kv_usage = self.engine.kv_usage();
        p.counters = *self.engine.counters();
        p.gpu = self.engine.gpu().clone();
    }

    fn apply(&mut self, cmd: Command, senders: &mut HashMap<RequestId, mpsc::Sender<Delivery>>) {
        match cmd {
            Command::Add {
                id,
                spec,
                tx,
                prefix,
                arrived,
            } => {
                let at = self.clock.sim(arrived);
                self.engine.arrive(id, spec, prefix, at);
                senders.insert(id, tx);
            }
            Command::Cancel { id } => {
                self.engine.cancel(id);
                senders.remove(&id);
            }
        }
    }

    /// Run until shutdown or until every command sender is gone.
    pub async fn run(mut self) {
        let mut senders: HashMap<RequestId, mpsc::Sender<Delivery>> = HashMap::new();
        // Scheduled end of the previous step while steps run back to back.
        let mut chain: Option<f64> = None;
        let mut idle = false;
        loop {
            if *self.shutdown.borrow() {
                return;
            }
            while let Ok(cmd) = self.commands.try_recv() {
                self.apply(cmd, &mut senders);
            }
            // `idle`: nothing to do, or nothing schedulable until something changes.
            if !self.engine.has_work() || idle {
                idle = false;
                chain = None;
                self.publish();
                // A request in the front-end becomes schedulable at its ready time.
                let ready = self.engine.next_ready().map(|t| self.clock.wall(t));
                tokio::select! {
                    cmd = self.commands.recv() => match cmd {
                        Some(cmd) => self.apply(cmd, &mut senders),
                        None => return,
                    },
                    _ = timer::sleep_until(ready.unwrap_or_else(Instant::now)), if ready.is_some() => {}
                    _ = self.shutdown.changed() => return,
                }
                continue;
            }
            let start = chain.unwrap_or_else(|| self.clock.sim(Instant::now()));
            let Some(out) = self.engine.step(start) else {
                idle = true;
                continue;
            };
            self.publish();
            let deadline = self.clock.wall(out.end);
            let sleep = timer::sleep_until(deadline);
            tokio::pin!(sleep);
            loop {
                tokio::select! {
                    _ = &mut sleep => break,
                    cmd = self.commands.recv() => match cmd {
                        Some(cmd) => self.apply(cmd, &mut senders),
                        None => return,
                    },
                    _ = self.shutdown.changed() => return,
                }
            }
            for ev in &out.events {
                let Some(tx) = senders.get(&ev.id) else {
                    continue;
                };
                // The step's end, or later when the API server's per-chunk cost
                // queues the chunk behind others (`TokenEvent::at`).
                let scheduled = if ev.at > out.end {
                    self.clock.wall(ev.at)
                } else {
                    deadline
                };
                let delivery = Delivery {
                    tokens: ev.tokens,
                    finished: ev.finished,
                    scheduled,
                };
                if tx.try_send(delivery).is_err() {
                    // The client is gone or too far behind: free the request.
                    self.engine.cancel(ev.id);
                    senders.remove(&ev.id);
                    continue;
                }
                if ev.finished {
                    senders.remove(&ev.id);
                }
            }
            chain = Some(out.end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sim_clock_roundtrips_with_time_scale() {
        let c = SimClock {
            start: Instant::now(),
            time_scale: 10.0,
        };
        let w = c.wall(5.0);
        assert_eq!(w.duration_since(c.start), Duration::from_millis(500));
        assert!((c.sim(w) - 5.0).abs() < 1e-9);
    }
}
