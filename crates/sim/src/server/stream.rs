//! Turning token deliveries into a response body: SSE chunks (or one JSON at
//! the end for non-streaming requests), with the timing probe and the
//! stream-level faults (drop, stall, malformed, no choices, bad usage).

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

use super::driver::{Command, Delivery};
use super::format::{ChunkFormat, Probe};
use super::openai::Job;
use super::timer;
use super::ScheduleStats;
use crate::clock::{monotonic_ns, MonoClock};
use crate::faults::FaultSpec;
use crate::model::RequestId;
use crate::text;

/// Tells the driver to drop a request when its response body goes away.
pub(crate) struct CancelGuard {
    pub id: RequestId,
    pub commands: mpsc::UnboundedSender<Command>,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        // Harmless if the request already finished; ignored if the driver is gone.
        let _ = self.commands.send(Command::Cancel { id: self.id });
    }
}

/// Counts a fixed-schedule request as running while its body lives.
pub(crate) struct InFlight(pub Arc<ScheduleStats>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0
            .running
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Where a request's tokens come from.
pub(crate) enum Source {
    /// The model's driver task.
    Model {
        rx: mpsc::Receiver<Delivery>,
        _guard: CancelGuard,
    },
    /// Fixed schedule: first token at `first_at`, then one every `itl`.
    Schedule {
        next: u64,
        total: Option<u64>,
        first_at: Instant,
        itl: Duration,
        stats: Arc<ScheduleStats>,
        _inflight: InFlight,
    },
    /// Nothing more will come (stalled or finished).
    Closed,
}

impl Source {
    async fn next(&mut self) -> Option<Delivery> {
        match self {
            Source::Model { rx, .. } => rx.recv().await,
            Source::Schedule {
                next,
                total,
                first_at,
                itl,
                stats,
                ..
            } => {
                if total.is_some_and(|t| *next >= t) {
                    return None;
                }
                let offset = itl.saturating_mul(u32::try_from(*next).unwrap_or(u32::MAX));
                let at = first_at.checked_add(offset).unwrap_or(*first_at);
                timer::sleep_until(at).await;
                *next += 1;
                stats
                    .generation_tokens
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Some(Delivery {
                    tokens: 1,
                    finished: total.is_some_and(|t| *next >= t),
                    scheduled: at,
                })
            }
            Source::Closed => None,
        }
    }
}

/// Writes one response body.
pub(crate) struct Writer {
    pub job: Job,
    pub format: ChunkFormat,
    pub source: Source,
    pub faults: FaultSpec,
    pub probe: bool,
    pub mono: MonoClock,
    pub shutdown: watch::Receiver<bool>,
    /// Tokens produced so far.
    tokens: u64,
    /// Bytes of text sent so far.
    text_bytes: usize,
    /// Full text (non-streaming only).
    text: String,
    pending: VecDeque<Bytes>,
    malformed_sent: bool,
    done: bool,
}

fn abort(reason: &str) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, reason.to_string())
}

impl Writer {
    pub fn new(
        job: Job,
        format: ChunkFormat,
        source: Source,
        faults: FaultSpec,
        probe: bool,
        mono: MonoClock,
        shutdown: watch::Receiver<bool>,
    ) -> Writer {
        Writer {
            job,
            format,
            source,
            faults,
            probe,
            mono,
            shutdown,
            tokens: 0,
            text_bytes: 0,
            text: String::new(),
            pending: VecDeque::new(),
            malformed_sent: false,
            done: false,
        }
    }

    /// The body as a stream of frames; an error aborts the connection.
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Result<Bytes, io::Error>> + Send {
        futures_util::stream::unfold(self, |mut w| async move {
            let frame = w.next_frame().await?;
            Some((frame, w))
        })
    }

    fn probe_at(&self, scheduled: Instant) -> Option<Probe> {
        self.probe.then(|| Probe {
            sent_ns: monotonic_ns(),
            scheduled_ns: self.mono.ns(scheduled),
        })
    }

    /// Text of the next `count` tokens, cut at a stop string.
    fn next_text(&mut self, count: u32) -> String {
        let mut t = text::generated_text(self.job.text_seed, self.tokens, u64::from(count));
        if let Some(limit) = self.job.text_limit {
            let left = limit.saturating_sub(self.text_bytes);
            if t.len() > left {
                let mut cut = left;
                while !t.is_char_boundary(cut) {
                    cut -= 1;
                }
                t.truncate(cut);
            }
        }
        self.text_bytes += t.len();
        t
    }

    fn completion_tokens_reported(&self) -> u64 {
        if self.faults.bad_usage {
            self.tokens + 7
        } else {
            self.tokens
        }
    }

    /// Frames after the last token.
    fn finish(&mut self, scheduled: Instant) {
        let prompt = u64::from(self.job.prompt_tokens);
        let completion = self.completion_tokens_reported();
        if self.job.stream {
            if self.job.include_usage || self.faults.bad_usage {
                let probe = self.probe_at(scheduled);
                self.pending
                    .push_back(self.format.usage_chunk(prompt, completion, probe));
            }
            self.pending
                .push_back(Bytes::from_static(b"data: [DONE]\n\n"));
        } else if self.faults.malformed {
            self.pending.push_back(Bytes::from(format!(
                "{{\"id\": \"broken\", \"text\": {}",
                self.tokens
            )));
        } else {
            let body = self.format.full_response(
                &self.text,
                self.job.finish_reason,
                prompt,
                completion,
                self.faults.no_choices,
            );
            self.pending.push_back(Bytes::from(body.to_string()));
        }
        self.done = true;
    }

    async fn next_frame(&mut self) -> Option<Result<Bytes, io::Error>> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(Ok(frame));
            }
            if self.done {
                return None;
            }
            if self.faults.stall_after.is_some_and(|n| self.tokens >= n) {
                // Free the request, keep the connection open until shutdown.
                self.source = Source::Closed;
                let _ = self.shutdown.wait_for(|stop| *stop).await;
                self.done = true;
                return Some(Err(abort("shutting down a stalled stream")));
            }
            let Some(d) = self.source.next().await else {
                self.done = true;
                return Some(Err(abort("the engine dropped the request")));
            };
            if self.faults.drop_after.is_some_and(|n| self.tokens >= n) {
                // Abort when the next token is due (so everything before it
                // has been flushed), without sending it.
                self.source = Source::Closed;
                self.done = true;
                return Some(Err(abort("fault injected: drop_after")));
            }
            let first = self.tokens == 0;
            let t = self.next_text(d.tokens);
            self.tokens += u64::from(d.tokens);
            let finished = d.finished && !self.faults.endless;
            if self.job.stream {
                let finish = finished.then_some(self.job.finish_reason);
                let probe = self.probe_at(d.scheduled);
                let chunk =
                    self.format
                        .token_chunk(&t, first, finish, self.faults.no_choices, probe);
                self.pending.push_back(chunk);
                if self.faults.malformed && !self.malformed_sent {
                    self.malformed_sent = true;
                    self.pending.push_back(self.format.malformed_chunk());
                }
            } else {
                self.text.push_str(&t);
            }
            if finished {
                self.finish(d.scheduled);
            }
        }
    }
}
