//! Streams one request to an OpenAI-compatible endpoint and records raw facts.
//!
//! Built to stay out of the way of what it measures:
//! - request bodies are serialised before the trial starts ([`crate::define::requests`]);
//! - each chunk's arrival time is read before the chunk is parsed;
//! - a chunk is parsed once, borrowing its text (no copies, no re-tokenizing): only
//!   the text length is kept;
//! - every stream owns its buffers; nothing is shared between streams in the hot path.
//!
//! A failure of any kind becomes an [`ErrorKind`] on the record; nothing here panics
//! on what a server sends, and nothing it sends is kept without bound: an error body
//! is read only to [`ERROR_BODY_READ_BYTES`] and its start kept ([`ERROR_BODY_BYTES`],
//! redacted before the cut), a line or event is
//! limited by [`SseLimits::max_event_bytes`], and a stream by the content chunks the
//! request allows ([`max_content_chunks`]) and by [`SseLimits::max_stream_bytes`].

pub mod direct;
mod embed;
mod errors;
mod events;
mod h1;
mod on_own;
pub mod request_id;
mod sse;
mod stamped;
pub mod tls;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use reqwest::StatusCode;

use crate::drive::record::{now_ns, ErrorKind, RequestRecord};
pub use errors::out_of_files;
use errors::{client_limit, describe};
pub use request_id::{Outgoing, X_REQUEST_ID};
pub use sse::{parse_data, ChunkInfo, SseError, SseLimits, SseParser};

/// Where and how to send requests.
#[derive(Clone)]
pub struct Target {
    /// Full endpoint URL (`http://host:port/v1/completions`).
    pub url: String,
    /// Prepared headers (content type, and authorisation when a key is set).
    pub headers: HeaderMap,
    /// Connections of our own for an `http://` URL ([`direct`]); `https` goes
    /// through the `reqwest::Client` passed to [`stream_request`].
    pool: Option<Arc<direct::Pool>>,
    /// Stamp `sent` before a new connection is opened, so TTFT includes the
    /// connection's set-up, as most peers measure it (default: after).
    connect_in_ttft: bool,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers may hold the API key: never print them.
        f.debug_struct("Target")
            .field("url", &self.url)
            .field("direct", &self.pool.is_some())
            .field("connect_in_ttft", &self.connect_in_ttft)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// A target for `base_url` + `path`, with an optional bearer key.
    pub fn new(base_url: &str, path: &str, api_key: Option<&str>) -> Target {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = api_key {
            if let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {key}")) {
                v.set_sensitive(true);
                headers.insert(AUTHORIZATION, v);
            }
        }
        let url = format!("{}{}", base_url.trim_end_matches('/'), path);
        let pool = direct::Pool::for_url(&url).map(Arc::new);
        if let Some(p) = &pool {
            if let Ok(host) = HeaderValue::from_str(&p.addr) {
                headers.insert(HOST, host);
            }
        }
        Target {
            url,
            headers,
            pool,
            connect_in_ttft: false,
        }
    }

    /// The same target, with TTFT counted from before a new connection is opened
    /// (`true`) or from the request's send (`false`, the default).
    pub fn with_connect_in_ttft(mut self, yes: bool) -> Target {
        self.connect_in_ttft = yes;
        self
    }

    /// Opens connections before a trial until `n` are idle, so that no request of
    /// the trial waits for one (`http://` targets; an `https` target opens its
    /// connections as requests need them). Errs with the first failure.
    pub async fn preconnect(&self, n: usize) -> Result<(), String> {
        match &self.pool {
            Some(p) => p.preconnect(n).await,
            None => Ok(()),
        }
    }

    /// Idle connections of an `http://` target (0 for `https`).
    pub fn idle_connections(&self) -> usize {
        self.pool.as_ref().map_or(0, |p| p.idle())
    }
}

/// Limits of one request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The request's whole life, connection to end, whatever the server sends.
    pub request_timeout: Duration,
    /// Longest time without progress: from the send to the first content chunk
    /// (headers included), then between content chunks. Bytes without content
    /// (comments, role-only events, chunk framing) are not progress.
    pub stall_timeout: Option<Duration>,
    /// Size limits of the stream.
    pub sse: SseLimits,
}

/// Bytes of a non-2xx response body kept in the error detail, cut after the body
/// is redacted ([`crate::redact::cut`]: a key across the cut keeps no part).
pub const ERROR_BODY_BYTES: usize = 300;

/// Bytes of a non-2xx response body read (to redact whole a secret that starts in
/// the kept part); no more is read.
pub const ERROR_BODY_READ_BYTES: usize = 4096;

/// Content chunks a stream may carry when the request did not say how many tokens
/// it allows: above any model's context (so never a real answer), and a bounded
/// record (40 bytes a chunk: 40 MiB).
pub const UNASKED_MAX_CHUNKS: usize = 1 << 20;

/// Most content-bearing chunks one stream may carry before it fails as
/// [`ErrorKind::Overlong`]: `max_tokens + max(max_tokens, 64)`, or
/// [`UNASKED_MAX_CHUNKS`] when `max_tokens` is unknown.
///
/// An honest server sends at most `max_tokens` content chunks (each carries at least
/// one token; role-only, empty-content and usage-only chunks are not counted). The
/// slack (twice the asked count, at least 64 more) keeps a server that splits one
/// token's text over two chunks from failing; a stream past it is endless, not long.
/// This is also the bound of the record's chunk list.
pub fn max_content_chunks(max_tokens: Option<u32>) -> usize {
    max_tokens.map_or(UNASKED_MAX_CHUNKS, |m| {
        let m = m as usize;
        m.saturating_add(m.max(64))
    })
}

/// A shared HTTP client tuned for many concurrent streams on loopback.
pub fn http_client(max_streams: usize) -> reqwest::Result<reqwest::Client> {
    http_client_trusting(max_streams, Vec::new())
}

/// [`http_client`] that also trusts `roots` for `https` (a private CA:
/// [`tls::roots`]), beside the built-in roots.
pub fn http_client_trusting(
    max_streams: usize,
    roots: Vec<reqwest::Certificate>,
) -> reqwest::Result<reqwest::Client> {
    roots
        .into_iter()
        .fold(reqwest::Client::builder(), |b, c| b.add_root_certificate(c))
        .pool_max_idle_per_host(max_streams.max(16))
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(30))
        .build()
}

/// Sends one streaming request and fills `rec` with what happened.
/// `origin` is the trial's start on [`now_ns`]'s clock; record times are relative to it.
///
/// The steps, each a function of its own: the request sent and its head read
/// (`on_own::exchange_direct` over goodput's own HTTP/1.1 for `http://`, `send`
/// through reqwest for `https`; each with one resend on a stale pooled
/// connection), the head's checks (`not_a_stream`, `check_status`), then
/// `events::read` (the stall timer, per-read timestamps and bounds, SSE parsing
/// into the record) and `events::finish` (the checks of a completed stream).
pub async fn stream_request(
    client: &reqwest::Client,
    target: &Target,
    out: Outgoing,
    rec: &mut RequestRecord,
    limits: &Limits,
    origin: u64,
) {
    let deadline = tokio::time::Instant::now() + limits.request_timeout;
    // The deadline bounds the request's whole life, whatever the server sends: a
    // `Timeout` polls its timer even when the request has spent the task's
    // cooperative budget (a socket that never runs dry, hyper reading an endless
    // chunk-size line), which a timer inside the request could not.
    let exchanged = exchange(client, target, &out, rec, limits, deadline, origin);
    let outcome = match tokio::time::timeout_at(deadline, exchanged).await {
        Ok(outcome) => outcome,
        // `done` is stamped once the stream has passed its checks: what ran out of
        // time was reading past `[DONE]` (see [`drain`]), not the request.
        Err(_) if rec.done.is_some() => Ok(()),
        Err(_) => Err(Failure::new(
            ErrorKind::Timeout,
            "the request was still running at the request timeout",
        )),
    };
    if let Err(f) = outcome {
        // A failure mid-stream ends the request now; one found by the final checks
        // keeps the time the stream ended.
        rec.done.get_or_insert(now_ns().saturating_sub(origin));
        rec.error = Some(f.kind);
        rec.error_detail = Some(f.detail);
    }
    // The chunk list grew by doubling; a finished one keeps no slack.
    if rec.chunks.capacity() > 2 * rec.chunks.len() + 16 {
        rec.chunks.shrink_to_fit();
    }
}

/// Why a request failed: the record's error kind and detail.
#[derive(Debug)]
pub(crate) struct Failure {
    kind: ErrorKind,
    detail: String,
}

impl Failure {
    fn new(kind: ErrorKind, detail: impl Into<String>) -> Failure {
        Failure {
            kind,
            detail: detail.into(),
        }
    }
}

async fn exchange(
    client: &reqwest::Client,
    target: &Target,
    out: &Outgoing,
    rec: &mut RequestRecord,
    limits: &Limits,
    deadline: tokio::time::Instant,
    origin: u64,
) -> Result<(), Failure> {
    let at = Exchange {
        rec,
        limits,
        deadline,
        origin,
        since: tokio::time::Instant::now(),
        body_bytes: out.body.len() as u64,
    };
    match &target.pool {
        Some(pool) => on_own::exchange_direct(pool, target, out, at).await,
        // Boxed: reqwest's futures are larger than the direct path's, and an
        // unboxed branch would size every `http://` request's task by them.
        None => Box::pin(exchange_reqwest(client, target, out, at)).await,
    }
}

/// [`exchange`] through reqwest (`https` targets).
async fn exchange_reqwest(
    client: &reqwest::Client,
    target: &Target,
    out: &Outgoing,
    mut at: Exchange<'_>,
) -> Result<(), Failure> {
    // The headers are made before the request is stamped as sent.
    let headers = out.headers(&target.headers);
    let (resp, since) = send(client, target, (out.body.clone(), headers), &mut at).await?;
    at.since = since;
    let (status, not_sse) = (resp.status(), not_a_stream(resp.headers()));
    let mut body = Box::pin(resp.bytes_stream());
    at.consume(status, not_sse, &mut body, None).await?;
    drain(&mut body, at.rec).await;
    Ok(())
}

/// Reads what follows `[DONE]` until the body ends, for at most [`DRAIN_WAIT`]
/// (the request is over: `done` is stamped). None of it is counted, however the
/// bytes were split into reads; anything but white space there is noted on the
/// record (`data_after_done`). True when the body ended within the wait.
async fn drain<E>(
    body: &mut (impl Stream<Item = Result<Bytes, E>> + Unpin),
    rec: &mut RequestRecord,
) -> bool {
    let rest = async {
        while let Some(Ok(b)) = body.next().await {
            if !b.trim_ascii().is_empty() {
                rec.data_after_done = true;
            }
        }
    };
    tokio::time::timeout(DRAIN_WAIT, rest).await.is_ok()
}

/// The failure of a request whose response's headers did not come in time, made
/// only when it happens (no allocation per request).
struct NoHeaders(ErrorKind, &'static str);

impl From<NoHeaders> for Failure {
    fn from(n: NoHeaders) -> Failure {
        Failure::new(n.0, n.1)
    }
}

/// One request's record and bounds, while its response is read.
struct Exchange<'a> {
    rec: &'a mut RequestRecord,
    limits: &'a Limits,
    deadline: tokio::time::Instant,
    origin: u64,
    /// The last progress: the request's send, until content arrives (the stall
    /// timeout counts from here).
    since: tokio::time::Instant,
    /// Bytes of the request's body (the bound on `usage.prompt_tokens`).
    body_bytes: u64,
}

impl Exchange<'_> {
    /// Until when the request sent now waits for its response's headers, and the
    /// failure if none come: the stall timeout after the send (no progress), or
    /// the request's deadline, whichever comes first.
    fn header_wait(&self, sent: tokio::time::Instant) -> (tokio::time::Instant, NoHeaders) {
        match self.limits.stall_timeout.map(|s| sent + s) {
            Some(stall) if stall < self.deadline => (
                stall,
                NoHeaders(
                    ErrorKind::Stall,
                    "no response headers within the stall timeout",
                ),
            ),
            _ => (
                self.deadline,
                NoHeaders(
                    ErrorKind::Timeout,
                    "no response headers before the request timeout",
                ),
            ),
        }
    }

    /// Status, content type, then the events into the record, then the final checks.
    /// The response's headers were checked before ([`not_a_stream`]) and dropped:
    /// an open stream keeps none (its task is not sized by them either).
    async fn consume<E: std::error::Error>(
        &mut self,
        status: StatusCode,
        not_sse: Option<Failure>,
        body: &mut (impl Stream<Item = Result<Bytes, E>> + Unpin),
        stamps: Option<&stamped::Stamps>,
    ) -> Result<(), Failure> {
        self.rec.status = Some(status.as_u16());
        if self.rec.embeddings.is_some() {
            // Boxed: an embeddings answer is read whole, and the streaming path's
            // task need not be sized by it.
            return Box::pin(embed::read(self, status, body, stamps)).await;
        }
        check_status(status, body, self.deadline).await?;
        if let Some(f) = not_sse {
            return Err(f);
        }
        let at = events::ReadAt {
            deadline: self.deadline,
            origin: self.origin,
            since: self.since,
            stamps,
        };
        events::read(body, self.rec, self.limits, at).await?;
        self.rec.done = Some(now_ns().saturating_sub(self.origin));
        events::finish(self.rec, self.body_bytes)
    }
}

/// How long a finished response may take to end its body before its connection is
/// dropped instead of kept.
const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// Sends the request through reqwest; sets `rec.sent` (to the resend's time when it
/// is resent) and returns the response with the instant it was sent. reqwest opens
/// connections inside the call, so their set-up is part of what follows `sent`, and
/// `connect` stays unknown.
async fn send(
    client: &reqwest::Client,
    target: &Target,
    (body, headers): (Bytes, HeaderMap),
    at: &mut Exchange<'_>,
) -> Result<(reqwest::Response, tokio::time::Instant), Failure> {
    let mut retried = false;
    loop {
        at.rec.sent = now_ns().saturating_sub(at.origin);
        let since = tokio::time::Instant::now();
        let (wait_until, no_headers) = at.header_wait(since);
        let fut = client
            .post(&target.url)
            .headers(headers.clone())
            .body(body.clone())
            .send();
        match tokio::time::timeout_at(wait_until, fut).await {
            Err(_) => return Err(no_headers.into()),
            // A pooled keep-alive connection the server had already closed (llama.cpp
            // closes one after a few requests): the request never reached the engine,
            // so it is sent once more on a fresh connection. The record's `sent` is
            // the resend; `scheduled` keeps the plan, so the delay shows as send lag.
            Ok(Err(e)) if !retried && e.is_request() && !e.is_connect() && !e.is_timeout() => {
                retried = true
            }
            Ok(Err(e)) if out_of_files(&e) => return Err(client_limit(&describe(&e))),
            Ok(Err(e)) => return Err(Failure::new(ErrorKind::Connect, describe(&e))),
            Ok(Ok(r)) => return Ok((r, since)),
        }
    }
}

/// Why a response's headers do not announce a stream goodput can time: a content
/// type other than SSE, or a compressed body; `None` when they do. (A non-2xx
/// status is checked first, with the start of its body: [`check_status`].)
fn not_a_stream(headers: &HeaderMap) -> Option<Failure> {
    let ctype = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !ctype.starts_with("text/event-stream") {
        return Some(Failure::new(
            ErrorKind::NotSse,
            format!("content-type `{ctype}` is not text/event-stream"),
        ));
    }
    // goodput asks for no compression; a compressed stream cannot be timed per
    // event (and would read as one that never ends with `[DONE]`).
    let enc = headers
        .get(reqwest::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .filter(|e| !e.trim().eq_ignore_ascii_case("identity"))?;
    Some(Failure::new(
        ErrorKind::NotSse,
        format!("the stream is compressed (content-encoding `{enc}`), which goodput did not ask for and cannot time per event"),
    ))
}

/// A 2xx status, or the failure a non-2xx one is, with the start of its body
/// (read until the deadline at most) in the detail.
async fn check_status<E>(
    status: StatusCode,
    body: &mut (impl Stream<Item = Result<Bytes, E>> + Unpin),
    deadline: tokio::time::Instant,
) -> Result<(), Failure> {
    if status.is_success() {
        return Ok(());
    }
    let mut kept = Vec::new();
    // What arrived before the deadline is kept.
    let _ = tokio::time::timeout_at(deadline, body_start(body, &mut kept)).await;
    let detail = crate::redact::cut(&String::from_utf8_lossy(&kept), ERROR_BODY_BYTES);
    Err(Failure::new(
        ErrorKind::Http,
        format!("HTTP {status}: {detail}"),
    ))
}

/// Reads `body` into `kept` until it holds [`ERROR_BODY_READ_BYTES`] or the body
/// ends; dropping the response then closes the connection with the rest unread.
async fn body_start<E>(
    body: &mut (impl Stream<Item = Result<Bytes, E>> + Unpin),
    kept: &mut Vec<u8>,
) {
    while kept.len() < ERROR_BODY_READ_BYTES {
        match body.next().await {
            Some(Ok(b)) => {
                let room = ERROR_BODY_READ_BYTES - kept.len();
                kept.extend_from_slice(&b[..b.len().min(room)]);
            }
            Some(Err(_)) | None => break,
        }
    }
}

#[cfg(test)]
mod tests;
