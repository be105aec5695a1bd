//! Turning token deliveries into a response body: SSE chunks (or one JSON at
//! the end for non-streaming requests), with the timing probe and the
//! stream-level faults (drop, stall, malformed, no choices, bad usage).
//!
//! A response has one source per choice (its own sequence in the model);
//! their deliveries are merged (`source`), each streamed as a chunk with
//! its choice's index. Faults count tokens over all choices together.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use futures_util::FutureExt;
use tokio::sync::watch;

use super::driver::Delivery;
use super::format::{ChunkChoice, ChunkFormat, FullChoice, Probe, ToolPiece};
use super::logprobs::{self, TokenLogprob};
use super::plan::{Endpoint, Job, Plan};
use super::probe_stats::ProbeStats;
use super::source::{Source, Sources};
use super::timer;
use crate::faults::FaultSpec;
use crate::text;
use goodput_stamped::{monotonic_ns, MonoClock};

/// How long a `drop_after` fault waits before it drops the connection, so that the
/// chunks before it reach the client (real time, whatever the time scale).
const DROP_FLUSH_GRACE: std::time::Duration = std::time::Duration::from_millis(20);

/// One choice's progress.
struct Choice {
    job: Job,
    /// Tokens produced so far.
    tokens: u64,
    /// Bytes of generated text sent so far.
    text_bytes: usize,
    /// Characters of the choice's text so far (logprobs' `text_offset`).
    chars: usize,
    /// Full text (non-streaming only).
    text: String,
    /// Full reasoning text (non-streaming only).
    reasoning: String,
    /// Logprobs so far (non-streaming only).
    logprobs: Vec<TokenLogprob>,
    finished: bool,
    /// A tool call's arguments, padded to a byte per answer token at least
    /// ([`super::tools::padded`]), and the bytes of them sent so far.
    tool_args: Option<(String, usize)>,
    /// The tool call's id.
    tool_id: String,
}

impl Choice {
    /// A tool call's piece for the answer tokens of a delivery that starts after
    /// `before` tokens: whether it is the call's first, and its byte range of the
    /// arguments (a share as large as the delivery's share of the answer tokens
    /// left; the rest on the last). `None` for a choice without a tool call or a
    /// delivery of thinking only.
    fn tool_piece(
        &mut self,
        before: u64,
        finished: bool,
    ) -> Option<(bool, std::ops::Range<usize>)> {
        let (args, sent) = self.tool_args.as_mut()?;
        let thinking = u64::from(self.job.reasoning_tokens);
        let total = u64::from(self.job.output_tokens).saturating_sub(thinking);
        let done = before.saturating_sub(thinking);
        let now = self.tokens.saturating_sub(thinking).saturating_sub(done);
        if now == 0 {
            return None;
        }
        let left_bytes = args.len() - *sent;
        let left_tokens = total.saturating_sub(done).max(1);
        let mut take = if finished || now >= left_tokens {
            left_bytes
        } else {
            (left_bytes as u64 * now / left_tokens) as usize
        };
        while !args.is_char_boundary(*sent + take) {
            take += 1;
        }
        let range = *sent..*sent + take;
        let first = *sent == 0;
        *sent += take;
        Some((first, range))
    }

    /// Text of the next `count` tokens, cut at a stop string, with each
    /// token's piece when `pieces` is asked for (logprobs).
    fn next_text(&mut self, count: u32, pieces: bool) -> (String, Vec<String>) {
        let seed = self.job.text_seed;
        let left = self
            .job
            .text_limit
            .map_or(usize::MAX, |l| l.saturating_sub(self.text_bytes));
        let mut t = text::generated_text(seed, self.tokens, u64::from(count));
        let mut out = Vec::new();
        if pieces {
            let mut used = 0;
            for i in self.tokens..self.tokens + u64::from(count) {
                let mut piece = format!(" {}", text::word(seed, i));
                truncate(&mut piece, left.saturating_sub(used));
                used += piece.len();
                out.push(piece);
            }
        }
        truncate(&mut t, left);
        self.text_bytes += t.len();
        (t, out)
    }
}

fn truncate(t: &mut String, max: usize) {
    if t.len() > max {
        let mut cut = max;
        while !t.is_char_boundary(cut) {
            cut -= 1;
        }
        t.truncate(cut);
    }
}

/// Writes one response body: every choice's chunks, each carrying its index.
pub(crate) struct Writer {
    pub plan: Plan,
    pub format: ChunkFormat,
    pub faults: FaultSpec,
    /// The timing probe, when on: where its lateness is counted.
    pub probe: Option<Arc<ProbeStats>>,
    pub mono: MonoClock,
    pub shutdown: watch::Receiver<bool>,
    sources: Sources,
    choices: Vec<Choice>,
    /// Tokens produced so far, all choices together (faults count these).
    tokens: u64,
    /// Of them, thinking tokens (`usage.completion_tokens_details`).
    reasoning_tokens: u64,
    unfinished: usize,
    pending: VecDeque<Bytes>,
    malformed_sent: bool,
    done: bool,
    /// An error found while batching, the body's next frame.
    deferred: Option<io::Error>,
    /// A delivery received before it is due (the API server's per-chunk cost
    /// queues it after the step's end): written when its time comes. Kept here, not
    /// in the waiting future, so a batch's `now_or_never` that drops the future
    /// does not lose it.
    held: Option<(usize, Delivery)>,
    /// The wait for `held`'s time, kept across polls like `held`.
    held_sleep: Option<timer::Sleep>,
    /// A LoRA adapter's load and slowdown, shifting every delivery's time.
    adapter: Option<super::adapters::AdapterTiming>,
}

fn abort(reason: &str) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, reason.to_string())
}

impl Writer {
    /// A writer for `plan`, with one source per job, in job order.
    pub fn new(
        mut plan: Plan,
        format: ChunkFormat,
        sources: Vec<Source>,
        faults: FaultSpec,
        probe: Option<Arc<ProbeStats>>,
        mono: MonoClock,
        shutdown: watch::Receiver<bool>,
    ) -> Writer {
        let choices: Vec<Choice> = std::mem::take(&mut plan.jobs)
            .into_iter()
            .map(|job| Choice {
                tool_id: format!("call_{}_{}", format.id(), job.index),
                tool_args: job.tool_call.as_ref().map(|call| {
                    let answer = job.output_tokens.saturating_sub(job.reasoning_tokens);
                    (super::tools::padded(&call.arguments, answer as usize), 0)
                }),
                job,
                tokens: 0,
                text_bytes: 0,
                chars: 0,
                text: String::new(),
                reasoning: String::new(),
                logprobs: Vec::new(),
                finished: false,
            })
            .collect();
        Writer {
            plan,
            format,
            faults,
            probe,
            mono,
            shutdown,
            sources: Sources::new(sources),
            unfinished: choices.len(),
            choices,
            tokens: 0,
            reasoning_tokens: 0,
            pending: VecDeque::new(),
            malformed_sent: false,
            done: false,
            deferred: None,
            held: None,
            held_sleep: None,
            adapter: None,
        }
    }

    /// The writer with a LoRA adapter's timing applied to every delivery.
    pub fn with_adapter(mut self, adapter: Option<super::adapters::AdapterTiming>) -> Writer {
        self.adapter = adapter;
        self
    }

    /// The body as a stream of frames; an error aborts the connection.
    ///
    /// Frames that are due at once (several choices' tokens in one tick, or the
    /// chunks of a late stream, the usage chunk and `[DONE]` after the last token)
    /// go out as one frame: one write to the socket instead of one each. Each chunk
    /// keeps its own probe time.
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Result<Bytes, io::Error>> + Send {
        futures_util::stream::unfold(self, |mut w| async move {
            let frame = w.next_frame().await?;
            Some((w.batch(frame), w))
        })
    }

    /// `first` and every frame ready without waiting, as one frame.
    fn batch(&mut self, first: Result<Bytes, io::Error>) -> Result<Bytes, io::Error> {
        // A fault's wait must not be cut short (the drop fault sleeps before its
        // error so that the chunks before it are flushed), so faulty streams are
        // not batched.
        let Ok(first) = first else { return first };
        if self.faults.drop_after.is_some() || self.faults.stall_after.is_some() {
            return Ok(first);
        }
        let mut joined: Option<BytesMut> = None;
        while let Some(Some(next)) = self.next_frame().now_or_never() {
            let more = match next {
                Ok(more) => more,
                Err(e) => {
                    // Sent after what is batched, as the next frame.
                    self.deferred = Some(e);
                    break;
                }
            };
            let buf = joined.get_or_insert_with(|| {
                let mut b = BytesMut::with_capacity(first.len() * 4);
                b.extend_from_slice(&first);
                b
            });
            buf.extend_from_slice(&more);
        }
        Ok(joined.map_or(first, BytesMut::freeze))
    }

    fn probe_at(&self, scheduled: Instant) -> Option<Probe> {
        self.probe.is_some().then(|| Probe {
            sent_ns: monotonic_ns(),
            scheduled_ns: self.mono.ns(scheduled),
        })
    }

    fn completion_tokens_reported(&self) -> u64 {
        if self.faults.bad_usage {
            self.tokens + 7
        } else {
            self.tokens
        }
    }

    /// Drop every source (frees the model's sequences).
    fn close_sources(&mut self) {
        self.sources = Sources::new(Vec::new());
    }

    /// Frames after the last token.
    fn finish(&mut self, scheduled: Instant) {
        let prompt = self.plan.prompt_tokens;
        let completion = self.completion_tokens_reported();
        if self.plan.stream {
            if self.plan.include_usage || self.faults.bad_usage {
                let probe = self.probe_at(scheduled);
                let usage = (prompt, completion, self.reasoning_tokens);
                self.pending
                    .push_back(self.format.usage_chunk(usage, probe));
            }
            self.pending
                .push_back(Bytes::from_static(b"data: [DONE]\n\n"));
        } else if self.faults.malformed {
            self.pending.push_back(Bytes::from(format!(
                "{{\"id\": \"broken\", \"text\": {}",
                self.tokens
            )));
        } else {
            let endpoint = self.plan.endpoint;
            let asked = self.plan.logprobs.is_some();
            let choices: Vec<FullChoice> = self
                .choices
                .iter_mut()
                .map(|c| FullChoice {
                    index: c.job.index,
                    text: std::mem::take(&mut c.text),
                    reasoning: std::mem::take(&mut c.reasoning),
                    finish_reason: c.job.finish_reason,
                    stop_reason: c.job.stop_reason.clone(),
                    logprobs: asked.then(|| logprobs_json(endpoint, &c.logprobs)),
                })
                .collect();
            let usage = (prompt, completion, self.reasoning_tokens);
            let body = self
                .format
                .full_response(&choices, usage, self.faults.no_choices);
            self.pending.push_back(Bytes::from(body.to_string()));
        }
        self.done = true;
    }

    /// Text and logprobs of choice `i`'s next `count` tokens (its first
    /// chunk also carries the echoed prompt).
    fn next_piece(&mut self, i: usize, count: u32) -> (String, Vec<TokenLogprob>) {
        let top = self.plan.logprobs.map(|k| match self.plan.endpoint {
            // Completions list the sampled token even for `logprobs: 0`.
            Endpoint::Completions => (k as usize).max(1),
            Endpoint::Chat => k as usize,
        });
        let c = &mut self.choices[i];
        let mut out = String::new();
        let mut lps = Vec::new();
        if c.tokens == 0 {
            if let Some(echo) = &c.job.echo {
                out.push_str(echo);
                if let Some(top) = top {
                    lps = logprobs::prompt(echo, c.job.text_seed, top);
                }
                c.chars += echo.chars().count();
            }
        }
        let (t, pieces) = c.next_text(count, top.is_some());
        if let Some(top) = top {
            for (k, piece) in pieces.iter().enumerate() {
                let position = c.tokens + k as u64;
                lps.push(logprobs::token(
                    c.job.text_seed,
                    position,
                    piece,
                    top,
                    c.chars,
                ));
                c.chars += piece.chars().count();
            }
        }
        c.tokens += u64::from(count);
        out.push_str(&t);
        (out, lps)
    }

    /// The body's next frame: a pending one, else the next delivery's, with the
    /// stream-level faults (stall, drop) applied first; `None` at the end.
    async fn next_frame(&mut self) -> Option<Result<Bytes, io::Error>> {
        if let Some(e) = self.deferred.take() {
            return Some(Err(e));
        }
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(Ok(frame));
            }
            if self.done {
                return None;
            }
            if let Some((i, d)) = self.held {
                let wait = self
                    .held_sleep
                    .get_or_insert_with(|| timer::sleep_until(d.scheduled));
                (&mut *wait).await;
                self.held_sleep = None;
                self.held = None;
                self.deliver(i, d);
                if self.unfinished == 0 {
                    self.finish(d.scheduled);
                }
                continue;
            }
            if self.faults.stall_after.is_some_and(|n| self.tokens >= n) {
                // Free the request, keep the connection open until shutdown.
                self.close_sources();
                let _ = self.shutdown.wait_for(|stop| *stop).await;
                self.done = true;
                return Some(Err(abort("shutting down a stalled stream")));
            }
            let next = self.sources.next().await;
            let Some((i, Some(mut d))) = next else {
                if next.is_some_and(|(i, _)| self.choices[i].finished) {
                    continue;
                }
                // A source ended before its choice finished.
                self.done = true;
                return Some(Err(abort("the engine dropped the request")));
            };
            if self.faults.drop_after.is_some_and(|n| self.tokens >= n) {
                // Abort when the next token is due, without sending it. The body
                // first stays pending for a moment: hyper flushes what it holds only
                // while the body is pending, and an error drops the connection with
                // its unflushed chunks (at a fast time scale, all of them).
                self.close_sources();
                self.done = true;
                tokio::time::sleep(DROP_FLUSH_GRACE).await;
                return Some(Err(abort("fault injected: drop_after")));
            }
            if let Some(a) = &self.adapter {
                d = a.shift(d);
            }
            // With the API server's per-chunk cost (`frontend_chunk_ms`), a chunk
            // is due after the step's end: when the model's front-end queue has
            // streamed it (the same time the virtual-time model gives it).
            if d.scheduled > Instant::now() {
                self.held = Some((i, d));
                continue;
            }
            self.deliver(i, d);
            if self.unfinished == 0 {
                self.finish(d.scheduled);
            }
        }
    }

    /// Text of choice `i`'s next `count` tokens split into (reasoning, answer), with
    /// their logprobs: the choice's first `reasoning_tokens` are thinking.
    fn next_split(&mut self, i: usize, count: u32) -> (String, String, Vec<TokenLogprob>) {
        let c = &self.choices[i];
        let left = u64::from(c.job.reasoning_tokens).saturating_sub(c.tokens);
        let thinking = count.min(u32::try_from(left).unwrap_or(u32::MAX));
        let (mut reasoning, mut lps) = (String::new(), Vec::new());
        if thinking > 0 {
            (reasoning, lps) = self.next_piece(i, thinking);
            self.reasoning_tokens += u64::from(thinking);
        }
        let mut answer = String::new();
        if count > thinking {
            let (t, more) = self.next_piece(i, count - thinking);
            answer = t;
            lps.extend(more);
        }
        (reasoning, answer, lps)
    }

    /// Adds delivery `d` of choice `i`: its chunk (and the malformed one a fault
    /// asks for) to the pending frames when streaming, else its text to the choice.
    fn deliver(&mut self, i: usize, d: Delivery) {
        let first = self.choices[i].tokens == 0;
        let before = self.choices[i].tokens;
        let (r, t, lps) = self.next_split(i, d.tokens);
        let piece = self.choices[i].tool_piece(before, d.finished);
        self.tokens += u64::from(d.tokens);
        let finished = d.finished && !self.faults.endless;
        let endpoint = self.plan.endpoint;
        let asked = self.plan.logprobs.is_some();
        let c = &mut self.choices[i];
        if self.plan.stream {
            let lp = asked.then(|| logprobs_json(endpoint, &lps));
            let chunk = ChunkChoice {
                index: c.job.index,
                text: &t,
                reasoning: &r,
                first,
                finish_reason: finished.then_some(c.job.finish_reason),
                stop_reason: c.job.stop_reason.as_deref().filter(|_| finished),
                logprobs: lp.as_ref(),
                tool: piece.map(|(first, range)| ToolPiece {
                    first,
                    name: c.job.tool_call.as_ref().map_or("", |t| t.name.as_str()),
                    id: &c.tool_id,
                    arguments: c.tool_args.as_ref().map_or("", |a| &a.0[range]),
                }),
                usage: self.plan.continuous_usage.then_some((
                    self.plan.prompt_tokens,
                    self.tokens,
                    self.reasoning_tokens,
                )),
            };
            let probe = self.probe.is_some().then(|| Probe {
                sent_ns: monotonic_ns(),
                scheduled_ns: self.mono.ns(d.scheduled),
            });
            if let (Some(p), Some(stats)) = (&probe, &self.probe) {
                let late = p.sent_ns as i64 - p.scheduled_ns as i64;
                stats.chunks.record(late);
                if first {
                    stats.first.record(late);
                }
            }
            let frame = self
                .format
                .token_chunk(&chunk, self.faults.no_choices, probe);
            self.pending.push_back(frame);
            if self.faults.malformed && !self.malformed_sent {
                self.malformed_sent = true;
                self.pending.push_back(self.format.malformed_chunk());
            }
        } else {
            c.reasoning.push_str(&r);
            c.text.push_str(&t);
            c.logprobs.extend(lps);
        }
        if finished && !c.finished {
            c.finished = true;
            self.unfinished -= 1;
        }
    }
}

fn logprobs_json(endpoint: Endpoint, lps: &[TokenLogprob]) -> serde_json::Value {
    match endpoint {
        Endpoint::Completions => logprobs::completion_json(lps),
        Endpoint::Chat => logprobs::chat_json(lps),
    }
}
