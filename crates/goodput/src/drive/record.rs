//! The per-request record: the raw facts of one request, and nothing derived.
//!
//! Every metric in a report is computed from these by [`crate::measure::metrics`]; the records
//! of a run are written beside the report as JSON Lines (`<report>.requests.jsonl`),
//! so any metric can be recomputed later.
//!
//! Times are nanoseconds on one monotonic clock ([`now_ns`], `CLOCK_MONOTONIC`),
//! relative to the start of the trial.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub mod embeddings;
pub mod tool_calls;
pub mod virtual_time;

pub use embeddings::Embedded;
pub use tool_calls::ToolCalls;

/// Nanoseconds on `CLOCK_MONOTONIC`: the clock of every timestamp goodput records,
/// and the clock the simulator's timing probe writes (both read it through
/// `goodput-stamped`: one clock, one implementation), so the two compare across
/// loopback.
#[inline]
pub fn now_ns() -> u64 {
    goodput_stamped::monotonic_ns()
}

/// Why a request failed. A failed request is data: counted, never a panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Could not connect or send.
    Connect,
    /// The client could not open a connection for want of its own resources (file
    /// descriptors: `EMFILE`, `ENFILE`): goodput's fault, not the server's.
    ClientLimit,
    /// The server answered with a non-2xx status (see `status`).
    Http,
    /// The response was not an SSE stream.
    NotSse,
    /// A chunk was not valid JSON or lacked the expected fields.
    Malformed,
    /// The server sent an error object inside the stream.
    ServerError,
    /// The connection broke while reading the stream.
    Reset,
    /// The stream ended without `data: [DONE]`.
    Incomplete,
    /// No chunk for `stall_timeout_s`.
    Stall,
    /// The whole request took longer than `request_timeout_s`.
    Timeout,
    /// A line or event exceeded the size limit.
    TooLarge,
    /// The stream went on far past what the request allows: more content chunks
    /// than `max_tokens` can explain, or more bytes than the stream limit.
    Overlong,
    /// The stream completed with no content.
    Empty,
    /// An embeddings answer carried a different number of vectors than the
    /// request's inputs.
    InputsMismatch,
    /// `usage.completion_tokens` contradicts the stream: fewer tokens than content
    /// chunks, or more than the request allowed.
    BadUsage,
    /// The trial was stopped (interrupt or trial timeout) while it was in flight.
    Cancelled,
    /// The trial was abandoned while it was in flight, because
    /// [`crate::drive::load::TIMEOUTS_TO_ABANDON`] requests in a row had ended by the
    /// request timeout (a server that accepts and never answers).
    Abandoned,
}

impl ErrorKind {
    /// Name used in reports; HTTP errors carry their status (`http_429`).
    pub fn label(self, status: Option<u16>) -> String {
        match (self, status) {
            (ErrorKind::Http, Some(s)) => format!("http_{s}"),
            _ => serde_json::to_value(self)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| format!("{self:?}")),
        }
    }
}

/// One content-bearing chunk as it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Arrival, ns since trial start (taken before the chunk is parsed).
    pub t: u64,
    /// Bytes of generated text in the chunk, reasoning included.
    pub len: u32,
    /// Bytes of reasoning text among them (chat `delta.reasoning`, or
    /// `delta.reasoning_content`): a chunk with `reasoning > 0` is a reasoning
    /// chunk, one with `len > reasoning` an answer chunk (a chunk at the switch can
    /// be both). 0 and left out of the file for a model that does not reason.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u32,
    /// Timing probe: ns between the server writing the chunk and its arrival here
    /// (only from `goodput sim` in probe mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag: Option<i64>,
    /// The time `t` is an upper bound, not exact: the chunk was read together with
    /// a later write of the server (or by a read that left bytes waiting), because
    /// the client was behind or off the CPU, and the kernel keeps one receive time
    /// for bytes that waited together, the last one's. The chunk arrived within
    /// this many ns before `t` (after the previous chunk or the send). Absent:
    /// `t` is exact (the kernel's receive time of its own write, or, where the
    /// kernel gives none, the read's time), as in records written before it.
    /// (Non-zero, so that a chunk stays 40 bytes.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<std::num::NonZeroU64>,
}

/// The raw facts of one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Engine name.
    pub engine: String,
    /// Load level.
    pub x: f64,
    /// Trial index (0-based).
    pub trial: u32,
    /// Request index within the trial.
    pub index: u32,
    /// Run of the trial: 0, or the number of engine restarts before it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
    /// The `x-request-id` header it was sent with ([`crate::drive::client::request_id`]),
    /// so the serving stack's logs and traces of it join this record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// When the load generator meant to send it (ns since trial start).
    pub scheduled: u64,
    /// When it was actually sent.
    pub sent: u64,
    /// How long opening a new connection for it took, ns (TCP connect and HTTP
    /// set-up), when it needed one; `None` when it reused an open connection (or the
    /// transport cannot tell: `https`). Outside TTFT, which counts from `sent`,
    /// unless the run asked for `--ttft-includes-connect`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<u64>,
    /// When the response ended (the `[DONE]` event, or the failure).
    #[serde(default)]
    pub done: Option<u64>,
    /// Content-bearing chunks in arrival order.
    #[serde(default)]
    pub chunks: Vec<Chunk>,
    /// `usage.prompt_tokens`.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`, or the chunk count when the server sent no usage.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// True when `completion_tokens` was estimated from chunks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokens_estimated: bool,
    /// `usage.completion_tokens_details.reasoning_tokens`, where the engine gives
    /// it (part of `completion_tokens`); without it, reasoning tokens are counted
    /// from the reasoning chunks ([`crate::measure::metrics`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Output tokens the request asked for.
    #[serde(default)]
    pub requested_tokens: Option<u32>,
    /// The request asked for exactly `requested_tokens` (`min_tokens` =
    /// `max_tokens`, `ignore_eos`): an answer shorter than that is the engine's doing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact_tokens: bool,
    /// The stream carried choices other than index 0 (a server answering `n > 1`):
    /// only choice 0 is recorded and counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub other_choices: bool,
    /// Data arrived after `data: [DONE]`: it was not read as events (whatever the
    /// reads it came in), only noted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub data_after_done: bool,
    /// The stream's `finish_reason` (the last one given: `stop`, `length`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Prompt tokens the workload meant to send (synthetic, prefix and trace
    /// lengths; ShareGPT's counted length), beside `prompt_tokens` as served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u32>,
    /// Prompt tokens that the workload shares with an earlier request of the trial
    /// (a prefix group's system prompt, a trace's repeated hash blocks): what a
    /// prefix cache could skip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_tokens: Option<u32>,
    /// The session (prefix group, trace line) the request belongs to, when the
    /// workload has sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u32>,
    /// Turn within the session (0-based), when the workload has turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Conversations: earlier turns dropped from this request's history so that it
    /// fits the context (`max_context_tokens`), counted over the session so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_cut_turns: Option<u32>,
    /// Function definitions the request carried in `tools`, when it asked for tool
    /// calls (`[workload] tools`, `tool_choice` not `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_asked: Option<u32>,
    /// Which functions of goodput's catalogue those were, a mask
    /// ([`crate::define::tools::offered`]): a call naming another is not valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_offered: Option<u32>,
    /// The images the request carried (`[workload] images`): count, encoded bytes
    /// and size. Whether `prompt_tokens` counts their tokens is the server's
    /// (usage); estimated counts never do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Boxed, as the other blocks only some requests have: a record is part of
    /// every open stream's task, and a box of nothing is one word.
    pub images: Option<Box<crate::define::requests::images::ImagesSent>>,
    /// The tool calls the stream carried (`delta.tool_calls`), when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Box<ToolCalls>>,
    /// The LoRA adapter the request named in `model` (`[workload.adapters]`;
    /// `base`: the engine's own model), when the run drew adapters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    /// An embeddings request (`api = "embeddings"`): its inputs, and what its
    /// answer, read whole, carried. Present exactly for embeddings requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<Box<Embedded>>,
    /// HTTP status, when a response arrived.
    #[serde(default)]
    pub status: Option<u16>,
    /// Why it failed; `None` for a success.
    #[serde(default)]
    pub error: Option<ErrorKind>,
    /// Detail of the failure (never contains secrets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_detail: Option<String>,
    /// The generated text, kept only when the sender asks for it (a conversation's
    /// next turn carries it) by setting `Some` before the request, and at most
    /// [`MAX_REPLY_BYTES`]; never written to the requests file.
    #[serde(skip)]
    pub reply: Option<String>,
}

/// Most bytes of generated text a record keeps in [`RequestRecord::reply`]; the rest
/// of a longer reply is not kept (the stream is still read and timed).
pub const MAX_REPLY_BYTES: usize = 256 << 10;

impl RequestRecord {
    /// Copies what the workload asked of this request into the fresh record.
    pub fn fill_asked(&mut self, asked: &crate::define::requests::Asked) {
        self.requested_tokens = asked.max_tokens;
        self.exact_tokens = asked.exact && asked.max_tokens.is_some();
        self.input_tokens = asked.input_tokens;
        self.shared_tokens = asked.shared_tokens;
        self.session = asked.session;
        self.turn = asked.turn;
        self.tools_asked = asked.tools;
        self.tools_offered = asked.tools.map(|_| asked.tools_offered);
        self.images = asked.images.map(Box::new);
        self.embeddings = asked.inputs.map(|n| Box::new(Embedded::asked(n)));
    }

    /// A fresh record for a request about to be sent.
    pub fn new(engine: &str, x: f64, trial: u32, index: u32, scheduled: u64) -> Self {
        RequestRecord {
            engine: engine.to_string(),
            x,
            trial,
            index,
            attempt: 0,
            request_id: None,
            scheduled,
            sent: scheduled,
            connect: None,
            done: None,
            chunks: Vec::new(),
            prompt_tokens: None,
            completion_tokens: None,
            tokens_estimated: false,
            reasoning_tokens: None,
            requested_tokens: None,
            exact_tokens: false,
            other_choices: false,
            data_after_done: false,
            finish_reason: None,
            input_tokens: None,
            shared_tokens: None,
            session: None,
            turn: None,
            context_cut_turns: None,
            tools_asked: None,
            tools_offered: None,
            images: None,
            tool_calls: None,
            adapter: None,
            embeddings: None,
            status: None,
            error: None,
            error_detail: None,
            reply: None,
        }
    }

    /// True when the request succeeded.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// The error label (`http_429`, `stall`, ...), when it failed.
    pub fn error_label(&self) -> Option<String> {
        self.error.map(|e| e.label(self.status))
    }

    /// The first chunk that carried reasoning text.
    pub fn first_reasoning(&self) -> Option<&Chunk> {
        self.chunks.iter().find(|c| c.reasoning > 0)
    }

    /// The first chunk that carried answer text (not reasoning).
    pub fn first_answer(&self) -> Option<&Chunk> {
        self.chunks.iter().find(|c| c.len > c.reasoning)
    }
}

/// Appends records to the requests file; every [`RecordsFile::append`] is flushed and
/// synced before it returns, so a finished trial survives a crash.
pub struct RecordsFile {
    path: PathBuf,
    file: BufWriter<File>,
}

impl RecordsFile {
    /// Opens (creating) the file for appending.
    pub fn open(path: &Path) -> std::io::Result<RecordsFile> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(RecordsFile {
            path: path.to_path_buf(),
            file: BufWriter::new(file),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends records, flushes and fsyncs.
    pub fn append(&mut self, records: &[RequestRecord]) -> std::io::Result<()> {
        for r in records {
            // Error details may hold what a server echoed (a key from a 401 body).
            let line = crate::redact::to_json_line(r)?;
            self.file.write_all(line.as_bytes())?;
            self.file.write_all(b"\n")?;
        }
        self.file.flush()?;
        self.file.get_ref().sync_data()
    }
}

/// Longest line of a requests file read: a record holds at most the chunks a stream
/// may carry (2^20 when the request set no `max_tokens`, about 30 bytes each), so a
/// longer line is not one goodput wrote (a sparse or corrupt file).
pub const MAX_RECORD_LINE_BYTES: usize = 64 << 20;

/// Most bytes of records kept from one requests file (their JSON), so that a huge or
/// corrupt file fails with its name and this limit instead of taking the machine's
/// memory.
pub const MAX_RECORDS_BYTES: u64 = 2 << 30;

/// Reads a requests file; a torn last line (a crash mid-write: no final newline,
/// the JSON cut short) is skipped, any other bad line is an error naming the file
/// and its line number. Read line by line, each line bounded
/// ([`MAX_RECORD_LINE_BYTES`]) and the records kept bounded ([`MAX_RECORDS_BYTES`]).
pub fn read_records(path: &Path) -> Result<Vec<RequestRecord>, String> {
    read_records_where(path, |_| true)
}

/// [`read_records`], keeping only the records `keep` accepts (the others are read,
/// checked and dropped, and do not count against the bound).
pub fn read_records_where(
    path: &Path,
    keep: impl FnMut(&RequestRecord) -> bool,
) -> Result<Vec<RequestRecord>, String> {
    read_bounded(path, keep, MAX_RECORD_LINE_BYTES, MAX_RECORDS_BYTES)
}

fn read_bounded(
    path: &Path,
    mut keep: impl FnMut(&RequestRecord) -> bool,
    max_line: usize,
    max_kept: u64,
) -> Result<Vec<RequestRecord>, String> {
    let name = path.display();
    // A device or a FIFO would be read forever (or waited on forever).
    let f = crate::files::open_regular(path).map_err(|e| format!("{name}: {e}"))?;
    let mut reader = BufReader::with_capacity(1 << 16, f);
    let (mut out, mut kept, mut line, mut n) = (Vec::new(), 0u64, Vec::new(), 0usize);
    loop {
        line.clear();
        let read = (&mut reader)
            .take(max_line as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{name}: {e}"))?;
        if read == 0 {
            break;
        }
        n += 1;
        let ended = line.last() == Some(&b'\n');
        if line.len() > max_line {
            return Err(format!(
                "{name}:{n}: a line longer than {max_line} bytes: not a requests file goodput wrote (corrupt or sparse?)"
            ));
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<RequestRecord>(text) {
            Ok(r) if keep(&r) => {
                kept += text.len() as u64;
                if kept > max_kept {
                    return Err(format!(
                        "{name}: more than {max_kept} bytes of records (at line {n}): goodput reads at most that much of a requests file"
                    ));
                }
                out.push(r);
            }
            Ok(_) => {}
            // A crash mid-append leaves the last line cut short, with no newline.
            Err(e) if !ended && e.is_eof() => break,
            Err(e) => {
                return Err(format!(
                    "{name}:{n}: not a request record ({e}); the requests file is corrupt"
                ))
            }
        }
    }
    Ok(out)
}

/// The requests file a report names (`run.requests_file`), beside the report:
/// only a plain file name is taken, so that a report (a shard from elsewhere, say)
/// cannot make goodput read any other path (`/etc/passwd`, `../x`).
pub fn named_records_path(report: &Path, name: &str) -> Result<PathBuf, String> {
    let plain = Path::new(name)
        .file_name()
        .is_some_and(|f| f == std::ffi::OsStr::new(name))
        && name != ".."
        && name != ".";
    if !plain {
        return Err(format!(
            "{}: its run.requests_file {name:?} is not a file name beside the report; \
             goodput reads a report's records only from its own folder",
            report.display()
        ));
    }
    Ok(report.with_file_name(name))
}

/// The requests file that belongs to a report: `<report>.requests.jsonl`.
pub fn records_path(report: &Path) -> PathBuf {
    let name = report
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report.json".into());
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    report.with_file_name(format!("{stem}.requests.jsonl"))
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

#[cfg(test)]
mod tests;
