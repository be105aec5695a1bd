//! A small, bounded Server-Sent Events parser and the OpenAI chunk reader.
//!
//! Why not a crate: the SSE crates we looked at (e.g. `eventsource-stream`) buffer a
//! line without bound and hide when bytes arrived. This parser is fed the bytes of
//! each read as they arrive (the caller takes the arrival time first), handles `\n`,
//! `\r\n` and `\r` line endings, comments, multi-line `data`, events split across
//! reads, and refuses a line or event beyond [`SseLimits`] instead of allocating.
//! A UTF-8 byte order mark before the stream's first byte is skipped, as the SSE
//! specification says (even split across reads).

use std::borrow::Cow;

use serde::Deserialize;

use crate::drive::record::tool_calls::{ToolPiece, MAX_ARGUMENT_BYTES, MAX_NAME_BYTES};
use crate::drive::record::ErrorKind;

/// Size limits of a stream.
#[derive(Debug, Clone, Copy)]
pub struct SseLimits {
    /// Longest line or event, bytes; enforced by [`SseParser`] (`too_large`).
    pub max_event_bytes: usize,
    /// Most bytes of one whole stream; enforced by the client per read (`overlong`).
    /// Nothing is kept per byte, so this bounds time, not memory: it ends a stream
    /// whose events carry no content, which the content-chunk bound cannot see.
    pub max_stream_bytes: u64,
}

impl Default for SseLimits {
    /// 4 MiB a line; 1 GiB a stream, far beyond a real answer (1M tokens at the
    /// few hundred bytes a chunk takes).
    fn default() -> Self {
        SseLimits {
            max_event_bytes: 4 << 20,
            max_stream_bytes: 1 << 30,
        }
    }
}

/// A stream violated a limit.
#[derive(Debug, thiserror::Error)]
#[error("an SSE line or event is larger than {0} bytes")]
pub struct SseError(pub usize);

/// Incremental SSE parser yielding the `data` of each event.
///
/// [`SseParser::next_event`] is the hot path: it lends each event's data from one
/// buffer the parser keeps for the whole stream, so parsing a stream allocates nothing
/// per event, and a line that arrives whole in one read is not copied before it is
/// looked at.
#[derive(Debug)]
pub struct SseParser {
    limits: SseLimits,
    /// The start of a line split across reads.
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// `data` was lent out by `next_event`: clear it before the next line.
    dispatched: bool,
    skip_lf: bool,
    /// Bytes of a leading byte order mark seen so far; `None` once the stream's
    /// start is past (a BOM, or the first byte that is not one).
    bom: Option<usize>,
}

/// The UTF-8 byte order mark, U+FEFF.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A parser with the given limits.
    pub fn new(limits: SseLimits) -> Self {
        SseParser {
            limits,
            // Allocated when first needed: `data` by the first event (then kept for
            // the stream), `line` only by a line split across reads.
            line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            dispatched: false,
            skip_lf: false,
            bom: Some(0),
        }
    }

    /// Skips a leading byte order mark, however the reads split it; the bytes of
    /// a start that only looked like one are given back to the first line.
    fn skip_bom(&mut self, bytes: &mut &[u8]) -> Result<(), SseError> {
        while let (Some(seen), Some(&b)) = (self.bom, bytes.first()) {
            if b == BOM[seen] {
                *bytes = &bytes[1..];
                self.bom = (seen + 1 < BOM.len()).then_some(seen + 1);
            } else {
                self.bom = None;
                self.extend_line(&BOM[..seen])?;
            }
        }
        Ok(())
    }

    /// Feeds bytes; returns the data of every event completed by them.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<Vec<Vec<u8>>, SseError> {
        let mut events = Vec::new();
        while let Some(data) = self.next_event(&mut bytes)? {
            events.push(data.to_vec());
        }
        Ok(events)
    }

    /// Consumes `bytes` up to the end of the next complete event and lends its data;
    /// `None` once `bytes` is used up with no event completed (the rest is kept for
    /// the next read). Call it until `None` for every read.
    ///
    /// An event that arrives whole in one read as a single `data` line and its
    /// empty line (`data: {...}\n\n`, what every engine sends) is lent out of
    /// `bytes` itself: nothing is copied or kept. Only an event split across reads
    /// or over several lines goes through the parser's buffer.
    pub fn next_event<'s, 'b: 's>(
        &'s mut self,
        bytes: &mut &'b [u8],
    ) -> Result<Option<&'s [u8]>, SseError> {
        if self.dispatched {
            self.dispatched = false;
            self.has_data = false;
            self.data.clear();
        }
        if self.bom.is_some() {
            self.skip_bom(bytes)?;
        }
        while !bytes.is_empty() {
            if self.skip_lf {
                self.skip_lf = false;
                if bytes[0] == b'\n' {
                    *bytes = &bytes[1..];
                    continue;
                }
            }
            let Some(i) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.extend_line(bytes)?;
                *bytes = &[];
                break;
            };
            let part = &bytes[..i];
            self.skip_lf = bytes[i] == b'\r';
            *bytes = &bytes[i + 1..];
            if self.line.is_empty() && !self.has_data {
                if let Some(value) = self.lend_whole_event(part, bytes)? {
                    return Ok(Some(value));
                }
            }
            let dispatch = if self.line.is_empty() {
                if part.len() > self.limits.max_event_bytes {
                    return Err(SseError(self.limits.max_event_bytes));
                }
                self.end_line(part)?
            } else {
                self.extend_line(part)?;
                let line = std::mem::take(&mut self.line);
                let dispatch = self.end_line(&line);
                self.line = line;
                self.line.clear();
                dispatch?
            };
            if dispatch {
                self.dispatched = true;
                return Ok(Some(&self.data));
            }
        }
        Ok(None)
    }

    /// `part` (a whole line, its terminator consumed) is a `data` line and an
    /// empty line follows at once in `bytes`: the event's data, lent from the
    /// line, with the empty line consumed. `None` leaves everything as it was.
    fn lend_whole_event<'b>(
        &mut self,
        part: &'b [u8],
        bytes: &mut &'b [u8],
    ) -> Result<Option<&'b [u8]>, SseError> {
        let Some(value) = part.strip_prefix(b"data:") else {
            return Ok(None);
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        let after: &'b [u8] = match (self.skip_lf, bytes.first()) {
            (true, Some(b'\n')) => &bytes[1..],
            _ => bytes,
        };
        let (end, skip_lf) = match after {
            [b'\r', b'\n', ..] => (2, false),
            [b'\n', ..] => (1, false),
            // A lone CR ends the line; an LF in the next read belongs to it.
            [b'\r', ..] => (1, true),
            _ => return Ok(None),
        };
        // The slow path's bounds: the line's, then the event's data.
        if part.len() > self.limits.max_event_bytes || value.len() + 1 > self.limits.max_event_bytes
        {
            return Err(SseError(self.limits.max_event_bytes));
        }
        self.skip_lf = skip_lf;
        *bytes = &after[end..];
        Ok(Some(value))
    }

    /// Gives back the buffers when no event or line is under way (every event
    /// read so far was taken): a stream waiting for its next token holds none.
    /// The next event allocates its data again (once per event, a few hundred
    /// bytes), which is what an open stream would otherwise keep for nothing.
    pub fn release_idle(&mut self) {
        let between = !self.has_data || self.dispatched;
        if between && self.line.is_empty() {
            self.data = Vec::new();
            self.line = Vec::new();
            self.has_data = false;
            self.dispatched = false;
        }
    }

    fn extend_line(&mut self, part: &[u8]) -> Result<(), SseError> {
        if self.line.len() + part.len() > self.limits.max_event_bytes {
            return Err(SseError(self.limits.max_event_bytes));
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    /// Takes one complete line; true when it completes an event with data.
    fn end_line(&mut self, line: &[u8]) -> Result<bool, SseError> {
        if line.is_empty() {
            return Ok(self.has_data);
        }
        if line[0] == b':' {
            return Ok(false);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            if self.data.len() + value.len() + 1 > self.limits.max_event_bytes {
                return Err(SseError(self.limits.max_event_bytes));
            }
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        Ok(false)
    }
}

/// What goodput needs from one OpenAI streaming chunk: of its first choice (index
/// 0) only; a server that answers `n > 1` streams other choices too, which are not
/// counted ([`ChunkInfo::other_choices`]).
#[derive(Debug, Default, PartialEq)]
pub struct ChunkInfo {
    /// Bytes of generated output: completions `text`, chat `delta.content`, the
    /// reasoning (see [`ChunkInfo::reasoning_len`]), and a tool call's generated
    /// part (`delta.tool_calls[].function` `name` and `arguments`).
    pub text_len: u32,
    /// Bytes of reasoning text among them: chat `delta.reasoning` (vLLM 0.19.1 and
    /// later), else `delta.reasoning_content` (older vLLM, SGLang, llama.cpp). A
    /// server that sends both names with the same text (vLLM kept them in sync for
    /// a while) is counted once.
    pub reasoning_len: u32,
    /// The usage block, when present.
    pub usage: Option<Usage>,
    /// The simulator's timing probe.
    pub probe_ns: Option<u64>,
    /// The first choice's `finish_reason`, when the chunk gives one (`stop`,
    /// `length`), cut to `MAX_FINISH_REASON` bytes.
    pub finish_reason: Option<String>,
    /// The chunk carried a choice with an index other than 0 (not counted).
    pub other_choices: bool,
    /// The first choice's `delta.tool_calls` entries (empty for most chunks).
    pub tool_calls: Vec<ToolPiece>,
}

/// Longest `finish_reason` kept: the engines' are a word (`stop`, `length`,
/// `abort`, `tool_calls`), and a server's must not grow the record.
pub const MAX_FINISH_REASON: usize = 32;

/// `usage` of a chunk.
#[derive(Debug, Default, PartialEq, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Generated tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// `completion_tokens_details` (`reasoning_tokens`), where the engine gives it.
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Default, PartialEq, Deserialize)]
pub struct CompletionDetails {
    /// Tokens of the completion that were reasoning.
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// `completion_tokens_details.reasoning_tokens`.
    pub fn reasoning_tokens(&self) -> Option<u64> {
        self.completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens)
    }
}

#[derive(Deserialize)]
struct Msg<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    goodput_probe_ns: Option<u64>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    /// Which of the `n` answers; absent is 0.
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCall<'a>>>,
}

/// One `delta.tool_calls` entry: its function's name and arguments are generated.
#[derive(Deserialize)]
struct ToolCall<'a> {
    /// Which call of the message (absent: its position in the list).
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    function: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

impl Delta<'_> {
    /// Bytes of the tool calls' generated text (function names and arguments).
    fn tool_call_len(&self) -> usize {
        self.tool_calls
            .iter()
            .flatten()
            .filter_map(|t| t.function.as_ref())
            .map(|f| {
                f.name.as_deref().map_or(0, str::len) + f.arguments.as_deref().map_or(0, str::len)
            })
            .sum()
    }

    /// The tool-call entries as pieces, each cut to what a record keeps of a call.
    fn tool_pieces(&self) -> Vec<ToolPiece> {
        let cut = |s: &str, limit: usize| {
            let mut end = s.len().min(limit);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s[..end].to_string()
        };
        let calls = self.tool_calls.iter().flatten().enumerate();
        calls
            .map(|(i, t)| {
                let f = t.function.as_ref();
                ToolPiece {
                    index: u32::try_from(t.index.unwrap_or(i as u64)).unwrap_or(u32::MAX),
                    name: f
                        .and_then(|f| f.name.as_deref())
                        .map(|n| cut(n, MAX_NAME_BYTES)),
                    // One byte over the bound, so that the record marks the call cut.
                    arguments: f
                        .and_then(|f| f.arguments.as_deref())
                        .map_or_else(String::new, |a| cut(a, MAX_ARGUMENT_BYTES + 4)),
                }
            })
            .collect()
    }

    /// The reasoning text: `reasoning`, else `reasoning_content` (never both: a
    /// server that sends both sends the same text twice).
    fn reasoning(&self) -> &str {
        self.reasoning
            .as_deref()
            .or(self.reasoning_content.as_deref())
            .unwrap_or("")
    }
}

/// A chunk goodput cannot use.
#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    /// Not JSON, or not the expected shape.
    #[error("malformed chunk: {0}")]
    Malformed(String),
    /// The server reported an error inside the stream.
    #[error("error in stream: {0}")]
    Server(String),
}

impl ChunkError {
    /// The record's error kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ChunkError::Malformed(_) => ErrorKind::Malformed,
            ChunkError::Server(_) => ErrorKind::ServerError,
        }
    }
}

/// The start of an event's data kept in an error: its first 200 bytes, redacted
/// before the cut (from its first 4 KiB, so a secret that starts in the kept part
/// is redacted whole).
fn excerpt(data: &[u8]) -> String {
    let read = String::from_utf8_lossy(&data[..data.len().min(4096)]);
    crate::redact::cut(&read, 200)
}

/// Parses the data of one event (not `[DONE]`).
pub fn parse_data(data: &[u8]) -> Result<ChunkInfo, ChunkError> {
    parse_data_keeping(data, None)
}

/// [`parse_data`], appending the chunk's generated text to `keep` (when given) up to
/// `limit` bytes in all (cut at a character boundary).
pub fn parse_data_keeping(
    data: &[u8],
    mut keep: Option<(&mut String, usize)>,
) -> Result<ChunkInfo, ChunkError> {
    let msg: Msg = serde_json::from_slice(data)
        .map_err(|e| ChunkError::Malformed(format!("{e} in `{}`", excerpt(data))))?;
    if msg.error.is_some() {
        return Err(ChunkError::Server(excerpt(data)));
    }
    let Some(choices) = msg.choices else {
        if msg.usage.is_some() {
            return Ok(ChunkInfo {
                text_len: 0,
                reasoning_len: 0,
                usage: msg.usage,
                probe_ns: msg.goodput_probe_ns,
                finish_reason: None,
                other_choices: false,
                tool_calls: Vec::new(),
            });
        }
        return Err(ChunkError::Malformed(format!(
            "chunk without `choices`: `{}`",
            excerpt(data)
        )));
    };
    let (mut len, mut reasoning, mut tool_calls) = (0usize, 0usize, Vec::new());
    let first = |c: &&Choice<'_>| c.index.unwrap_or(0) == 0;
    let other_choices = choices.iter().any(|c| !first(&c));
    for c in choices.iter().filter(first) {
        len += c.text.as_deref().map_or(0, str::len);
        if let Some(d) = &c.delta {
            len += d.content.as_deref().map_or(0, str::len) + d.tool_call_len();
            if d.tool_calls.is_some() {
                tool_calls.extend(d.tool_pieces());
            }
            reasoning += d.reasoning().len();
        }
        // The reply as a conversation carries it on: the answer's text, not its
        // reasoning.
        if let Some((kept, limit)) = keep.as_mut() {
            let text = c
                .text
                .as_deref()
                .or(c.delta.as_ref().and_then(|d| d.content.as_deref()));
            push_bounded(kept, text.unwrap_or(""), *limit);
        }
    }
    let finish_reason = choices
        .iter()
        .filter(first)
        .find_map(|c| c.finish_reason.as_deref())
        .map(|f| {
            // An ordinary reason (`stop`, `length`) is short; a longer one is a
            // server's text, redacted before it is cut.
            if f.len() <= MAX_FINISH_REASON
                && f.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                f.to_string()
            } else {
                crate::redact::cut(f, MAX_FINISH_REASON)
            }
        });
    let bytes = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Ok(ChunkInfo {
        text_len: bytes(len.saturating_add(reasoning)),
        reasoning_len: bytes(reasoning),
        usage: msg.usage,
        probe_ns: msg.goodput_probe_ns,
        finish_reason,
        other_choices,
        tool_calls,
    })
}

/// Appends `text` to `kept` while `kept` stays within `limit` bytes.
fn push_bounded(kept: &mut String, text: &str, limit: usize) {
    let room = limit.saturating_sub(kept.len());
    if text.len() <= room {
        kept.push_str(text);
        return;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    kept.push_str(&text[..end]);
}

#[cfg(test)]
mod tests;
