//! Reading a response's SSE body into the record: the stall timer, a timestamp per
//! read before any parsing, the bounds of a stream, and the checks of a stream that
//! completed.

use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::stamped::{chunk_time, ReadMark, Stamps};
use super::{describe, max_content_chunks, Failure, Limits, SseParser};
use crate::drive::record::{now_ns, Chunk, ErrorKind, RequestRecord, MAX_REPLY_BYTES};

/// One timer for the whole stream, re-armed only when it fires: a stall is "no
/// progress since `last_read + stall`", progress being a content chunk (bytes do
/// not count: comments, role-only and usage-only events, an endless chunk-size line
/// are no progress), counted from the request's send; checked lazily, so no timer
/// is set per read.
struct StallTimer {
    start: tokio::time::Instant,
    start_ns: u64,
    stall: Option<Duration>,
    deadline: tokio::time::Instant,
    last_read_ns: u64,
}

impl StallTimer {
    fn new(
        stall: Option<Duration>,
        deadline: tokio::time::Instant,
        since: tokio::time::Instant,
    ) -> StallTimer {
        let ago = tokio::time::Instant::now().saturating_duration_since(since);
        let start_ns = now_ns().saturating_sub(ago.as_nanos() as u64);
        StallTimer {
            start: since,
            start_ns,
            stall,
            deadline,
            last_read_ns: start_ns,
        }
    }

    /// When the stream stalls if nothing is read before.
    fn stall_at(&self) -> Option<tokio::time::Instant> {
        self.stall.map(|s| {
            self.start + Duration::from_nanos(self.last_read_ns.saturating_sub(self.start_ns)) + s
        })
    }

    /// When the timer should next fire: the stall time or the deadline, whichever first.
    fn next_wake(&self) -> tokio::time::Instant {
        self.stall_at()
            .map_or(self.deadline, |at| at.min(self.deadline))
    }

    /// The timer fired: the failure it means, or `None` (a read came since it was
    /// armed) to re-arm it at [`StallTimer::next_wake`].
    fn fired(&self) -> Option<Failure> {
        let now = tokio::time::Instant::now();
        if self
            .stall_at()
            .is_some_and(|at| at < self.deadline && now >= at)
        {
            return Some(Failure::new(
                ErrorKind::Stall,
                "no generated text within the stall timeout",
            ));
        }
        (now >= self.deadline).then(|| {
            Failure::new(
                ErrorKind::Timeout,
                "stream still open at the request timeout",
            )
        })
    }
}

/// What a stream has carried so far, and its bounds.
struct Progress {
    parser: SseParser,
    /// The record holds at most this many chunks; a longer stream fails before it grows.
    max_chunks: usize,
    /// Bytes read, counted per read, so a stream of events without content
    /// (comments, role-only or usage-only chunks), which `max_chunks` cannot see,
    /// ends too.
    received: u64,
    max_bytes: u64,
    saw_done: bool,
}

/// When a response is read: its deadline, the records' origin, and the
/// connection's kernel receive times when its transport keeps them.
pub(super) struct ReadAt<'a> {
    pub deadline: tokio::time::Instant,
    pub origin: u64,
    /// When the request was sent: the stall timeout counts from here until the
    /// first content.
    pub since: tokio::time::Instant,
    pub stamps: Option<&'a Stamps>,
}

/// Reads `body` until `data: [DONE]` (or its end), recording every content chunk
/// with the time its read arrived: the kernel's receive time of that read where the
/// connection keeps it ([`super::stamped`]), else the time the read returned.
/// Nothing after `[DONE]` is parsed, in its read or later ([`super::drain`]); data
/// there sets the record's `data_after_done`.
pub(super) async fn read<E: std::error::Error>(
    body: &mut (impl Stream<Item = Result<Bytes, E>> + Unpin),
    rec: &mut RequestRecord,
    limits: &Limits,
    at: ReadAt<'_>,
) -> Result<(), Failure> {
    let ReadAt {
        deadline,
        origin,
        since,
        stamps,
    } = at;
    // Nothing of this response arrived before the request was sent.
    let mut floor = origin.saturating_add(rec.sent);
    let mut progress = Progress {
        parser: SseParser::new(limits.sse),
        max_chunks: max_content_chunks(rec.requested_tokens),
        received: 0,
        max_bytes: limits.sse.max_stream_bytes,
        saw_done: false,
    };
    // Room for the first chunk (the TTFT's push allocates nothing); a longer
    // answer grows the list by doubling (after each chunk's time is taken), so an
    // open stream holds what it received, not the whole answer it asked for (40
    // bytes a token: 40 KiB at 1,024 tokens), nor room for tokens a slow stream
    // has not sent yet.
    rec.chunks.reserve_exact(1);
    let mut stall = StallTimer::new(limits.stall_timeout, deadline, since);
    let mut reads = Reads::default();
    let timer = tokio::time::sleep_until(stall.next_wake());
    tokio::pin!(timer);
    while !progress.saw_done {
        // The timer first: a body that is always ready (an endless flood of events
        // without content) spends the task's cooperative budget, after which a
        // timer polled second would never see its time come.
        let next = tokio::select! {
            biased;
            () = &mut timer => {
                if let Some(f) = stall.fired() {
                    return Err(f);
                }
                timer.as_mut().reset(stall.next_wake());
                continue;
            }
            next = body.next() => next,
        };
        let bytes = match next {
            None => break,
            Some(Ok(b)) => b,
            Some(Err(e)) => return Err(Failure::new(ErrorKind::Reset, describe(&e))),
        };
        // Arrival time first, then parsing.
        let mark = stamps.map(Stamps::latest_read).unwrap_or_default();
        let t = chunk_time(stamps.and_then(Stamps::latest), floor, now_ns());
        let after = floor.saturating_sub(origin);
        floor = t;
        let chunks_before = rec.chunks.len();
        progress.take(&bytes, t.saturating_sub(origin), t, rec)?;
        drop(bytes);
        progress.parser.release_idle();
        reads.frame(rec, chunks_before, mark, after);
        // Only generated text re-arms the stall timer: a server that sends nothing
        // but keep-alive comments (or role-only, usage-only events) is stalled.
        if rec.chunks.len() > chunks_before {
            stall.last_read_ns = t;
        }
    }
    if !progress.saw_done {
        return Err(Failure::new(
            ErrorKind::Incomplete,
            "the stream ended without `data: [DONE]`",
        ));
    }
    Ok(())
}

/// Which chunks' times are upper bounds: those read together with a later HTTP
/// chunk (a later write of the server) by one read, and those of a read that left
/// bytes queued ([`super::stamped`]). A frame is one HTTP chunk as the connection
/// decoded it; the frames of one read share its receive time.
#[derive(Default)]
struct Reads {
    /// The read the previous frame came from.
    read: ReadMark,
    /// The first chunk of the records that read gave.
    first: usize,
    /// Nothing that read took arrived before this (ns since the trial's start):
    /// the previous read's time, or the send.
    after: u64,
}

impl Reads {
    /// A frame was read into the record, its chunks from `first_new` on; `after`
    /// is the time before which none of it arrived.
    fn frame(&mut self, rec: &mut RequestRecord, first_new: usize, mark: ReadMark, after: u64) {
        if mark.no == 0 {
            return;
        }
        if mark.no == self.read.no {
            // A second write in the same read: the earlier frames' chunks share
            // this read's time although they arrived before it.
            self.mark(rec, self.first..first_new);
        } else {
            self.first = first_new;
            self.after = after;
        }
        if mark.queued {
            self.mark(rec, first_new..rec.chunks.len());
        }
        self.read = mark;
    }

    fn mark(&self, rec: &mut RequestRecord, range: std::ops::Range<usize>) {
        for c in rec.chunks.get_mut(range).unwrap_or_default() {
            c.bound = std::num::NonZeroU64::new(c.t.saturating_sub(self.after));
        }
    }
}

impl Progress {
    /// One read: its events into the record. `t` is the read's time relative to the
    /// trial, `t_abs` on the probe's clock.
    fn take(
        &mut self,
        bytes: &[u8],
        t: u64,
        t_abs: u64,
        rec: &mut RequestRecord,
    ) -> Result<(), Failure> {
        self.received += bytes.len() as u64;
        if self.received > self.max_bytes {
            return Err(Failure::new(
                ErrorKind::Overlong,
                format!("the stream is longer than {} bytes", self.max_bytes),
            ));
        }
        let mut rest = bytes;
        while let Some(data) = self
            .parser
            .next_event(&mut rest)
            .map_err(|e| Failure::new(ErrorKind::TooLarge, e.to_string()))?
        {
            // The stream's end: what follows is not read as events, whether it came
            // in this read or a later one (one rule, whatever the segmentation).
            if data.trim_ascii() == b"[DONE]" {
                self.saw_done = true;
                if !rest.trim_ascii().is_empty() {
                    rec.data_after_done = true;
                }
                return Ok(());
            }
            let keep = rec.reply.as_mut().map(|r| (r, MAX_REPLY_BYTES));
            let info = super::sse::parse_data_keeping(data, keep)
                .map_err(|e| Failure::new(e.kind(), e.to_string()))?;
            rec.other_choices |= info.other_choices;
            crate::drive::record::ToolCalls::add(&mut rec.tool_calls, t, info.tool_calls);
            if info.finish_reason.is_some() {
                rec.finish_reason = info.finish_reason;
            }
            if let Some(u) = info.usage {
                rec.prompt_tokens = u.prompt_tokens.or(rec.prompt_tokens);
                rec.completion_tokens = u.completion_tokens.or(rec.completion_tokens);
                rec.reasoning_tokens = u.reasoning_tokens().or(rec.reasoning_tokens);
            }
            if info.text_len == 0 {
                continue;
            }
            if rec.chunks.len() >= self.max_chunks {
                return Err(Failure::new(
                    ErrorKind::Overlong,
                    format!(
                        "more than {} content chunks ({} tokens allowed)",
                        self.max_chunks,
                        allowed(rec)
                    ),
                ));
            }
            rec.chunks.push(Chunk {
                t,
                len: info.text_len,
                reasoning: info.reasoning_len,
                lag: info.probe_ns.map(|p| t_abs as i64 - p as i64),
                bound: None,
            });
        }
        Ok(())
    }
}

fn allowed(rec: &RequestRecord) -> String {
    rec.requested_tokens.map_or("any".into(), |m| m.to_string())
}

/// The checks of a stream that ended with `[DONE]`: it carried text, and its usage
/// block (when any) agrees with it; without one, the token count is the chunk count,
/// marked estimated. Derived from the record, the one source of truth.
pub(super) fn finish(rec: &mut RequestRecord, body_bytes: u64) -> Result<(), Failure> {
    let chunk_count = rec.chunks.len() as u64;
    if chunk_count == 0 {
        return Err(Failure::new(
            ErrorKind::Empty,
            "the stream carried no generated text",
        ));
    }
    prompt_fits(rec, body_bytes)?;
    let most = plausible_tokens(rec);
    match rec.completion_tokens {
        // Without usage, a content chunk is a token; but no more than the request
        // allowed are counted: a stream of more chunks than `max_tokens` (a server
        // that split tokens, or ignored the limit) is counted at the limit and
        // warned about as long (`long_outputs`), never as more output than asked.
        None => {
            let most = rec.requested_tokens.map_or(chunk_count, u64::from);
            rec.completion_tokens = Some(chunk_count.min(most));
            rec.tokens_estimated = true;
            Ok(())
        }
        // Every content chunk carries at least one token, the server may not
        // generate more than it was allowed, and no token is shorter than a byte of
        // text: anything else is a lying usage block.
        Some(n)
            if n < chunk_count
                || rec.requested_tokens.is_some_and(|m| n > u64::from(m))
                || (rec.requested_tokens.is_none() && n > most) =>
        {
            Err(Failure::new(
                ErrorKind::BadUsage,
                format!(
                    "usage.completion_tokens = {n} contradicts the stream ({chunk_count} content chunks, \
                     {} bytes of text: at most {most} tokens; {} tokens allowed)",
                    text_bytes(rec),
                    allowed(rec)
                ),
            ))
        }
        Some(_) => Ok(()),
    }
}

/// A `usage.prompt_tokens` the request's `body_bytes` could hold (at most the
/// bytes plus [`PROMPT_TEMPLATE_SLACK`]), or the `bad_usage` failure it is: the one
/// rule for streams and embeddings answers.
pub(super) fn prompt_fits(rec: &RequestRecord, body_bytes: u64) -> Result<(), Failure> {
    let most = body_bytes.saturating_add(PROMPT_TEMPLATE_SLACK);
    match rec.prompt_tokens.filter(|&p| p > most) {
        Some(p) => Err(Failure::new(
            ErrorKind::BadUsage,
            format!(
                "usage.prompt_tokens = {p} is more than the request could hold ({body_bytes} bytes \
                 sent: at most {most} tokens)"
            ),
        )),
        None => Ok(()),
    }
}

/// Bytes of generated text the stream carried.
fn text_bytes(rec: &RequestRecord) -> u64 {
    rec.chunks.iter().map(|c| u64::from(c.len)).sum()
}

/// The most output tokens a completed stream can hold, whatever the request allowed:
/// every generated token decodes to at least one byte of text (a byte-fallback token
/// to exactly one), except the few special tokens an engine counts but does not
/// stream (the end-of-sequence token; a chunk's hidden stop string). So the bound is
/// the text's bytes, plus one per chunk, plus [`SPECIAL_TOKEN_SLACK`], plus
/// [`TOOL_CALL_MARKUP_SLACK`] per tool call (a tool parser streams the call's name
/// and arguments but not the markup around them). It is what
/// keeps a usage block from being believed when the request set no `max_tokens`
/// (with one, `max_tokens` is the bound: a random-weight test model may generate
/// tokens that decode to no text at all, so the byte bound is not applied there).
pub(crate) fn plausible_tokens(rec: &RequestRecord) -> u64 {
    let calls = rec.tool_calls.as_ref().map_or(0, |t| {
        (t.calls.len() as u64).saturating_add(u64::from(t.dropped))
    });
    text_bytes(rec)
        .saturating_add(rec.chunks.len() as u64)
        .saturating_add(SPECIAL_TOKEN_SLACK)
        .saturating_add(calls.saturating_mul(TOOL_CALL_MARKUP_SLACK))
}

/// Tokens a tool parser may hide per call: the markup the model generates around
/// the name and arguments it streams (vLLM's hermes parser: `<tool_call>\n{"name":
/// "`, `", "arguments": ` and `}\n</tool_call>`, about 20 tokens of the tiny Llama's
/// tokenizer in `tests/fixtures/vllm/cpu-0.32-stream-chat-tool-required.txt`).
pub(crate) const TOOL_CALL_MARKUP_SLACK: u64 = 64;

/// Prompt tokens a server may count beyond the bytes of the request's body: no
/// prompt token is shorter than a byte of what was sent, and a chat template (with
/// its default system prompt) adds far fewer than this. A `usage.prompt_tokens`
/// above the body's bytes plus this is a lying usage block (`bad_usage`).
pub(crate) const PROMPT_TEMPLATE_SLACK: u64 = 1 << 16;

/// Tokens a stream may count beyond its text (see [`plausible_tokens`]).
pub(crate) const SPECIAL_TOKEN_SLACK: u64 = 16;
