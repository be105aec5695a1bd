//! The load generator: when each request of a trial is sent.
//!
//! - Closed loop (`concurrency`): x workers; each sends its next request as soon as
//!   its previous one finishes. A request is scheduled at the moment its worker is
//!   free, so scheduled = sent up to client lag.
//! - Open loop (`rate`): send times are fixed before the trial, with gaps drawn from a
//!   seeded Gamma distribution (shape = `burstiness`, mean = 1/x; 1.0 is Poisson).
//!   With `max_concurrency`, a request whose time has come waits for a free slot: it is
//!   never dropped, and the wait shows as `sent - scheduled` in its record (no
//!   coordinated omission).
//!
//! Every request's record is kept, including the ones cut short by an interrupt or
//! the trial timeout (`cancelled`).
//!
//! A conversation trial ([`run_conversation_trial`]) sends sessions instead of
//! single requests: each session's turns in order, the next turn `think_time` after
//! the reply to the one before (that is its scheduled time). In closed loop x is the
//! number of sessions in progress (a worker starts a new session when its session
//! ends); in open loop the arrival times are the sessions' starts. Either way the
//! trial sends at most its request count, all sessions together: a session reserves
//! its turns when it starts (so only the last session is short), and a failed turn
//! ends its session and gives its unsent turns back.

pub mod fds;
pub mod share;
pub mod stall;

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};
use tokio::sync::{mpsc, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::define::profile::LoadMode;
use crate::define::requests::conversation::{Answer, Conversations};
use crate::define::requests::Prepared;
use crate::drive::client::request_id::{request_ids, trial_nonce};
use crate::drive::client::{stream_request, Limits, Outgoing, Target};
use crate::drive::record::{now_ns, ErrorKind, RequestRecord};
use crate::stop::Stop;

/// Send offsets (ns from trial start) of `n` open-loop requests at `rate`/s; the first
/// at 0.
pub fn arrival_offsets(rate: f64, burstiness: f64, n: usize, seed: u64) -> Vec<u64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    let mut t = 0.0f64;
    let gamma = Gamma::new(burstiness, 1.0 / (rate * burstiness)).ok();
    for i in 0..n {
        if i > 0 {
            t += match &gamma {
                Some(g) => g.sample(&mut rng),
                None => 1.0 / rate,
            };
        }
        out.push((t * 1e9) as u64);
    }
    out
}

/// One trial to run.
pub struct Trial {
    /// Engine name (for records).
    pub engine: String,
    /// Load level sent.
    pub x: f64,
    /// The load level the records carry: `x`, except in a load shard, which sends
    /// its share `x` of the whole level.
    pub level: f64,
    /// Trial index.
    pub index: u32,
    /// The restart attempt the records carry (0 unless the engine was restarted).
    pub attempt: u32,
    /// The whole trial's index of the first request (a load shard sends a run of
    /// the whole trial's requests, and its records carry their whole-trial index).
    pub first_index: u32,
    /// Closed or open loop.
    pub mode: LoadMode,
    /// Open loop: cap on requests in flight.
    pub max_concurrency: Option<u32>,
    /// Open loop: send offsets, one per request.
    pub offsets: Vec<u64>,
    /// The requests.
    pub requests: Vec<Prepared>,
    /// Per-request limits.
    pub limits: Limits,
    /// Longest the trial may run.
    pub timeout: Option<Duration>,
    /// After `stop`, how long in-flight requests may still finish.
    pub grace: Duration,
    /// Counts requests as they are sent (for a progress display), when given.
    pub sent: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// Called with every finished record (for progress display).
pub type OnRecord = Box<dyn FnMut(&RequestRecord) + Send>;

/// Runs a trial; returns every sent request's record, in index order.
/// `stop` (the run's token, [`crate::stop`]) cancelled stops the trial: nothing new
/// is sent, in-flight requests get `trial.grace` to finish, then the rest are
/// recorded as `cancelled`.
pub async fn run_trial(
    client: reqwest::Client,
    target: Target,
    trial: Trial,
    stop: &Stop,
    on_record: OnRecord,
) -> Vec<RequestRecord> {
    run(client, target, trial, None, stop, on_record).await
}

/// Runs a trial of conversations (`trial.requests` is not used: the bodies are made
/// from `conversations` as the replies come); otherwise as [`run_trial`]. Open loop:
/// `trial.offsets` are the sessions' starts.
pub async fn run_conversation_trial(
    client: reqwest::Client,
    target: Target,
    trial: Trial,
    conversations: Conversations,
    stop: &Stop,
    on_record: OnRecord,
) -> Vec<RequestRecord> {
    run(client, target, trial, Some(conversations), stop, on_record).await
}

async fn run(
    client: reqwest::Client,
    target: Target,
    trial: Trial,
    conversations: Option<Conversations>,
    stop: &Stop,
    on_record: OnRecord,
) -> Vec<RequestRecord> {
    // Two tokens: `no_new`, a child of the run's stop, only stops sending;
    // `cancel` abandons in-flight requests (after the grace, or at the trial
    // timeout, which also sets `no_new`).
    let no_new = stop.child();
    let cancel = CancellationToken::new();
    let forward = tokio::spawn(forward_stop(
        no_new.clone(),
        cancel.clone(),
        trial.timeout,
        trial.grace,
    ));
    let (tx, rx) = mpsc::unbounded_channel::<RequestRecord>();
    let n = match &conversations {
        Some(c) => c.requests as usize,
        None => trial.requests.len(),
    };
    let ids = request_ids(trial_nonce(), trial.first_index, n);
    let shared = Arc::new(Shared {
        client,
        target,
        limits: trial.limits,
        engine: trial.engine,
        level: trial.level,
        trial: trial.index,
        attempt: trial.attempt,
        first_index: trial.first_index,
        requests: trial.requests,
        ids,
        origin: now_ns(),
        origin_instant: Instant::now(),
        cancel,
        no_new,
        tx,
        sent: trial.sent,
        budget: AtomicU32::new(conversations.as_ref().map_or(0, |c| c.requests)),
        next_index: AtomicU32::new(0),
        timeouts_in_a_row: AtomicU32::new(0),
        conversations,
    });
    let tasks = TaskTracker::new();
    match trial.mode {
        _ if shared.conversations.is_some() => spawn_sessions(
            &shared,
            &tasks,
            trial.mode,
            trial.x,
            trial.offsets,
            trial.max_concurrency,
        ),
        LoadMode::Concurrency => closed_loop(&shared, &tasks, trial.x),
        // A trace is an open loop whose offsets are the trace's own times.
        LoadMode::Rate | LoadMode::Trace => {
            tasks.spawn(open_loop(
                shared.clone(),
                trial.offsets,
                trial.max_concurrency,
                tasks.clone(),
            ));
        }
    }
    drop(shared);
    let collector = collect(rx, n, on_record);
    // The open loop spawns its requests on the same tracker before it returns, so
    // closing it here still waits for every request.
    tasks.close();
    tasks.wait().await;
    let mut records = match collector.await {
        Ok(records) => records,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Vec::new(),
    };
    forward.abort();
    records.sort_by_key(|r| r.index);
    records
}

/// Collects the trial's records, calling `on_record` on each. A task on the
/// runtime's workers, beside the requests, not the caller: a caller outside the
/// workers (`block_on`'s thread) would be woken, a thread switch, for every finished
/// request.
fn collect(
    mut rx: mpsc::UnboundedReceiver<RequestRecord>,
    n: usize,
    mut on_record: OnRecord,
) -> tokio::task::JoinHandle<Vec<RequestRecord>> {
    tokio::spawn(async move {
        let mut records = Vec::with_capacity(n);
        while let Some(r) = rx.recv().await {
            on_record(&r);
            records.push(r);
        }
        records
    })
}

/// x workers, each sending the next unsent request when its last one ended.
fn closed_loop(shared: &Arc<Shared>, tasks: &TaskTracker, x: f64) {
    let next = Arc::new(AtomicUsize::new(0));
    let workers = (x.max(1.0) as usize).min(shared.requests.len().max(1));
    for _ in 0..workers {
        let (s, next) = (shared.clone(), next.clone());
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= s.requests.len() || s.no_new.is_cancelled() {
                    break;
                }
                let scheduled = now_ns().saturating_sub(s.origin);
                s.send(i, scheduled).await;
            }
        });
    }
}

/// Sends request `i` at `offsets[i]` after the trial's start; with a cap, a request
/// whose time has come waits for a slot (its wait is its send lag).
async fn open_loop(s: Arc<Shared>, offsets: Vec<u64>, cap: Option<u32>, tasks: TaskTracker) {
    let sem = cap.map(|c| Arc::new(Semaphore::new(c as usize)));
    for (i, &off) in offsets.iter().enumerate().take(s.requests.len()) {
        let when = s.origin_instant + Duration::from_nanos(off);
        tokio::select! {
            _ = sleep_precisely(when) => {}
            _ = s.no_new.cancelled() => break,
        }
        let permit = match &sem {
            Some(sem) => tokio::select! {
                p = sem.clone().acquire_owned() => p.ok(),
                _ = s.no_new.cancelled() => break,
            },
            None => None,
        };
        let s2 = s.clone();
        tasks.spawn(async move {
            s2.send(i, off).await;
            drop(permit);
        });
    }
}

/// Starts a conversation trial's sessions: closed loop, x workers each running one
/// session after another; open loop, a session at each offset.
fn spawn_sessions(
    shared: &Arc<Shared>,
    tasks: &TaskTracker,
    mode: LoadMode,
    x: f64,
    offsets: Vec<u64>,
    cap: Option<u32>,
) {
    let n = shared.conversations.as_ref().map_or(0, |c| c.requests);
    let left = |s: &Shared| s.budget.load(Ordering::Relaxed) > 0 && !s.no_new.is_cancelled();
    if mode == LoadMode::Concurrency {
        let next = Arc::new(AtomicU32::new(0));
        for _ in 0..(x.max(1.0) as u32).min(n.max(1)) {
            let (s, next) = (shared.clone(), next.clone());
            tasks.spawn(async move {
                while left(&s) {
                    let id = next.fetch_add(1, Ordering::Relaxed);
                    let scheduled = now_ns().saturating_sub(s.origin);
                    // A session with nothing to send (no turns, or the budget gone
                    // meanwhile) ends the worker: no loop over empty sessions.
                    if !s.run_session(id, scheduled, None).await {
                        break;
                    }
                }
            });
        }
        return;
    }
    let (s, tasks2) = (shared.clone(), tasks.clone());
    tasks.spawn(async move {
        let sem = cap.map(|c| Arc::new(Semaphore::new(c as usize)));
        for (id, &off) in offsets.iter().enumerate() {
            if !left(&s) {
                break;
            }
            tokio::select! {
                _ = sleep_precisely(s.origin_instant + Duration::from_nanos(off)) => {}
                _ = s.no_new.cancelled() => break,
            }
            let (s2, sem) = (s.clone(), sem.clone());
            tasks2.spawn(async move {
                s2.run_session(id as u32, off, sem).await;
            });
        }
    });
}

/// Sleeps until `when` with sub-millisecond precision: the timer wheel's last
/// millisecond is spent yielding, not sleeping.
async fn sleep_precisely(when: Instant) {
    let coarse = when.checked_sub(Duration::from_micros(1500));
    if let Some(c) = coarse {
        if c > Instant::now() {
            tokio::time::sleep_until(c).await;
        }
    }
    while Instant::now() < when {
        tokio::task::yield_now().await;
    }
}

/// Turns the run's stop (through `no_new`, its child) and the trial timeout into
/// the end of the trial: after a stop, `cancel` (abandon in-flight requests) once
/// the grace period is over; at the timeout, both at once.
async fn forward_stop(
    no_new: CancellationToken,
    cancel: CancellationToken,
    timeout: Option<Duration>,
    grace: Duration,
) {
    let deadline = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    let stopped = tokio::select! {
        _ = no_new.cancelled() => true,
        _ = deadline => false,
    };
    if stopped {
        tokio::time::sleep(grace).await;
    } else {
        no_new.cancel();
    }
    cancel.cancel();
}

struct Shared {
    client: reqwest::Client,
    target: Target,
    limits: Limits,
    engine: String,
    level: f64,
    trial: u32,
    attempt: u32,
    first_index: u32,
    requests: Vec<Prepared>,
    /// Each request's `x-request-id`, by request index, made before the trial.
    ids: Vec<Option<reqwest::header::HeaderValue>>,
    origin: u64,
    origin_instant: Instant,
    cancel: CancellationToken,
    no_new: CancellationToken,
    tx: mpsc::UnboundedSender<RequestRecord>,
    sent: Option<Arc<std::sync::atomic::AtomicU64>>,
    /// A conversation trial's sessions.
    conversations: Option<Conversations>,
    /// Requests a conversation trial's sessions may still reserve.
    budget: AtomicU32,
    /// The next request index of a conversation trial.
    next_index: AtomicU32,
    /// Requests that ended in a row by the request timeout (see
    /// [`TIMEOUTS_TO_ABANDON`]); any other end resets it.
    timeouts_in_a_row: AtomicU32,
}

/// Requests that end in a row by the request timeout before the trial is abandoned:
/// nothing more is sent, what is in flight is stopped and recorded as
/// [`ErrorKind::Abandoned`]. A server that accepts connections and never answers
/// would otherwise cost `request_timeout_s` per request, one after another.
pub const TIMEOUTS_TO_ABANDON: u32 = 3;

impl Shared {
    async fn send(&self, i: usize, scheduled: u64) {
        let rec = self
            .exchange(i as u32, scheduled, &self.requests[i], false)
            .await;
        let _ = self.tx.send(rec);
    }

    /// Session `id`'s turns, the first at `scheduled`, each later one `think_time`
    /// after the reply before it; with a cap, each turn waits for a slot. True when
    /// it sent a request.
    async fn run_session(&self, id: u32, mut scheduled: u64, sem: Option<Arc<Semaphore>>) -> bool {
        let Some(conv) = &self.conversations else {
            return false;
        };
        let mut session = conv.session(id);
        let want = session.turns();
        let reserved = self
            .budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                (b > 0).then(|| b - b.min(want))
            })
            .map_or(0, |b| b.min(want));
        let mut sent = 0;
        while sent < reserved {
            let Some(turn) = session.next_request(conv) else {
                break;
            };
            let permit = match &sem {
                Some(sem) => tokio::select! {
                    p = sem.clone().acquire_owned() => p.ok(),
                    _ = self.no_new.cancelled() => break,
                },
                None => None,
            };
            if self.no_new.is_cancelled() {
                break;
            }
            let i = self.next_index.fetch_add(1, Ordering::Relaxed);
            sent += 1;
            let mut rec = self.exchange(i, scheduled, &turn.prepared, true).await;
            drop(permit);
            rec.context_cut_turns = (turn.context_cut_turns > 0).then_some(turn.context_cut_turns);
            let go_on = session.answered(Answer {
                ok: rec.ok(),
                reply: rec.reply.take(),
                prompt_tokens: rec.prompt_tokens,
                completion_tokens: rec.completion_tokens.unwrap_or(rec.chunks.len() as u64),
            });
            let ended = rec.done.unwrap_or(scheduled);
            let _ = self.tx.send(rec);
            if !go_on {
                break;
            }
            scheduled = ended + conv.think_time.as_nanos() as u64;
            tokio::select! {
                _ = sleep_precisely(self.origin_instant + Duration::from_nanos(scheduled)) => {}
                _ = self.no_new.cancelled() => break,
            }
        }
        // A session that ended early gives its unsent turns to the sessions to come.
        self.budget.fetch_add(reserved - sent, Ordering::Relaxed);
        sent > 0
    }

    /// Sends `req` as request `i` and returns its record; `keep_reply` keeps the
    /// generated text in it (bounded).
    async fn exchange(
        &self,
        i: u32,
        scheduled: u64,
        req: &Prepared,
        keep_reply: bool,
    ) -> RequestRecord {
        // Built with the values it keeps: the whole load level, the whole trial's
        // index, the attempt.
        let mut rec = RequestRecord::new(
            &self.engine,
            self.level,
            self.trial,
            self.first_index + i,
            scheduled,
        );
        rec.attempt = self.attempt;
        rec.fill_asked(&req.asked);
        rec.adapter = req.adapter.as_deref().map(str::to_owned);
        if keep_reply {
            rec.reply = Some(String::new());
        }
        if let Some(sent) = &self.sent {
            sent.fetch_add(1, Ordering::Relaxed);
        }
        let request_id = self.ids.get(i as usize).cloned().flatten();
        {
            let out = Outgoing {
                body: req.body.clone(),
                request_id: request_id.clone(),
            };
            let fut = stream_request(
                &self.client,
                &self.target,
                out,
                &mut rec,
                &self.limits,
                self.origin,
            );
            tokio::select! {
                _ = fut => {}
                _ = self.cancel.cancelled() => {}
            }
        }
        // Kept once the request is over, out of its timing.
        rec.request_id = request_id.and_then(|h| h.to_str().ok().map(str::to_string));
        if rec.done.is_none() {
            rec.done = Some(now_ns().saturating_sub(self.origin));
            let abandoned = self.timeouts_in_a_row.load(Ordering::Relaxed) >= TIMEOUTS_TO_ABANDON;
            rec.error = Some(if abandoned {
                ErrorKind::Abandoned
            } else {
                ErrorKind::Cancelled
            });
            rec.error_detail = Some(if abandoned {
                abandoned_detail()
            } else {
                "the trial was stopped while the request was in flight".into()
            });
        }
        self.count_timeouts(&rec);
        rec
    }

    /// Counts requests that ended by the request timeout in a row, and abandons the
    /// trial at [`TIMEOUTS_TO_ABANDON`].
    fn count_timeouts(&self, rec: &RequestRecord) {
        let before = self
            .timeouts_in_a_row
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(timeouts_after(n, rec))
            })
            .unwrap_or(0);
        if timeouts_after(before, rec) >= TIMEOUTS_TO_ABANDON {
            self.no_new.cancel();
            self.cancel.cancel();
        }
    }
}

/// The count of requests that ended by the request timeout in a row, after `rec`
/// ended with `n` before it: the one rule of [`TIMEOUTS_TO_ABANDON`].
fn timeouts_after(n: u32, rec: &RequestRecord) -> u32 {
    match rec.error {
        Some(ErrorKind::Timeout) => n + 1,
        // Abandoned and cancelled requests say nothing of the server.
        Some(ErrorKind::Abandoned | ErrorKind::Cancelled) => n,
        _ => 0,
    }
}

/// Whether a trial's records show it was abandoned: [`TIMEOUTS_TO_ABANDON`]
/// requests in a row, in the order they ended, ended by the request timeout.
pub fn was_abandoned(records: &[RequestRecord]) -> bool {
    let mut by_end: Vec<&RequestRecord> = records.iter().collect();
    by_end.sort_by_key(|r| r.done);
    let mut n = 0;
    by_end.iter().any(|r| {
        n = timeouts_after(n, r);
        n >= TIMEOUTS_TO_ABANDON
    })
}

/// The detail of an [`ErrorKind::Abandoned`] request.
fn abandoned_detail() -> String {
    format!(
        "the trial was abandoned after {TIMEOUTS_TO_ABANDON} requests in a row ended by the request timeout"
    )
}

#[cfg(test)]
mod tests;
