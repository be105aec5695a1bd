//! Streams one request to an OpenAI-compatible endpoint and records raw facts.
//!
//! Built to stay out of the way of what it measures:
//! - request bodies are serialised before the trial starts ([`crate::workload`]);
//! - each chunk's arrival time is read before the chunk is parsed;
//! - a chunk is parsed once, borrowing its text (no copies, no re-tokenizing): only
//!   the text length is kept;
//! - every stream owns its buffers; nothing is shared between streams in the hot path.
//!
//! A failure of any kind becomes an [`ErrorKind`] on the record; nothing here panics
//! on what a server sends, and nothing it sends is kept without bound: an error body
//! is read only as far as its kept start ([`ERROR_BODY_BYTES`]), a line or event is
//! limited by [`SseLimits::max_event_bytes`], and a stream by the content chunks the
//! request allows ([`max_content_chunks`]) and by [`SseLimits::max_stream_bytes`].

mod sse;

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE};

use crate::record::{now_ns, Chunk, ErrorKind, RequestRecord};
pub use sse::{parse_data, ChunkInfo, SseError, SseLimits, SseParser};

/// Where and how to send requests.
#[derive(Clone)]
pub struct Target {
    /// Full endpoint URL (`http://host:port/v1/completions`).
    pub url: String,
    /// Prepared headers (content type, and authorisation when a key is set).
    pub headers: HeaderMap,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers may hold the API key: never print them.
        f.debug_struct("Target")
            .field("url", &self.url)
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
        Target {
            url: format!("{}{}", base_url.trim_end_matches('/'), path),
            headers,
        }
    }
}

/// Limits of one request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Whole request, send to end.
    pub request_timeout: Duration,
    /// Longest gap between two reads of the stream.
    pub stall_timeout: Option<Duration>,
    /// Size limits of the stream.
    pub sse: SseLimits,
}

/// Bytes of a non-2xx response body kept in the error detail; no more is read.
pub const ERROR_BODY_BYTES: usize = 300;

/// Content chunks a stream may carry when the request did not say how many tokens
/// it allows: above any model's context (so never a real answer), and a bounded
/// record (32 bytes a chunk: 32 MiB).
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
    reqwest::Client::builder()
        .pool_max_idle_per_host(max_streams.max(16))
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(30))
        .build()
}

/// Sends one streaming request and fills `rec` with what happened.
/// `origin` is the trial's start on [`now_ns`]'s clock; record times are relative to it.
pub async fn stream_request(
    client: &reqwest::Client,
    target: &Target,
    body: Bytes,
    rec: &mut RequestRecord,
    limits: &Limits,
    origin: u64,
) {
    stream(client, target, body, rec, limits, origin).await;
    // Chunks were reserved for the whole answer; a short one keeps no slack.
    if rec.chunks.capacity() > 2 * rec.chunks.len() + 16 {
        rec.chunks.shrink_to_fit();
    }
}

async fn stream(
    client: &reqwest::Client,
    target: &Target,
    body: Bytes,
    rec: &mut RequestRecord,
    limits: &Limits,
    origin: u64,
) {
    let deadline = tokio::time::Instant::now() + limits.request_timeout;
    let mut retried = false;
    let resp = loop {
        rec.sent = now_ns().saturating_sub(origin);
        let fut = client
            .post(&target.url)
            .headers(target.headers.clone())
            .body(body.clone())
            .send();
        match tokio::time::timeout_at(deadline, fut).await {
            Err(_) => {
                return fail(
                    rec,
                    origin,
                    ErrorKind::Timeout,
                    "no response headers before the request timeout".into(),
                )
            }
            // A pooled keep-alive connection the server had already closed (llama.cpp
            // closes one after a few requests): the request never reached the engine,
            // so it is sent once more on a fresh connection. The record's `sent` is
            // the resend; `scheduled` keeps the plan, so the delay shows as send lag.
            Ok(Err(e)) if !retried && e.is_request() && !e.is_connect() && !e.is_timeout() => {
                retried = true
            }
            Ok(Err(e)) => return fail(rec, origin, ErrorKind::Connect, describe(&e)),
            Ok(Ok(r)) => break r,
        }
    };
    rec.status = Some(resp.status().as_u16());
    if !resp.status().is_success() {
        let status = resp.status();
        let mut kept = Vec::new();
        // What arrived before the deadline is kept; the rest of the body is never read.
        let _ = tokio::time::timeout_at(deadline, body_start(resp, &mut kept)).await;
        let detail = String::from_utf8_lossy(&kept);
        return fail(
            rec,
            origin,
            ErrorKind::Http,
            format!("HTTP {status}: {detail}"),
        );
    }
    let ctype = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !ctype.starts_with("text/event-stream") {
        return fail(
            rec,
            origin,
            ErrorKind::NotSse,
            format!("content-type `{ctype}` is not text/event-stream"),
        );
    }
    let mut stream = resp.bytes_stream();
    let mut parser = SseParser::new(limits.sse);
    let mut saw_done = false;
    // The record holds at most `max_chunks`; a longer stream fails before it grows.
    let max_chunks = max_content_chunks(rec.requested_tokens);
    let mut received: u64 = 0;
    // Room for every chunk asked for, so recording one never reallocates.
    let expected = rec.requested_tokens.map_or(0, |n| n.min(1 << 16) as usize);
    rec.chunks.reserve(expected + 1);
    // One timer for the whole stream, re-armed only when it fires: a stall is "no read
    // since `last_read + stall`", checked lazily, so no timer is set per read.
    let (start, start_ns) = (tokio::time::Instant::now(), now_ns());
    let mut last_read_ns = start_ns;
    let stall_at = |last_ns: u64| {
        limits
            .stall_timeout
            .map(|s| start + Duration::from_nanos(last_ns.saturating_sub(start_ns)) + s)
    };
    let timer =
        tokio::time::sleep_until(stall_at(last_read_ns).map_or(deadline, |at| at.min(deadline)));
    tokio::pin!(timer);
    loop {
        let next = tokio::select! {
            biased;
            next = stream.next() => next,
            () = &mut timer => {
                let now = tokio::time::Instant::now();
                let stall = stall_at(last_read_ns);
                if stall.is_some_and(|at| at < deadline && now >= at) {
                    return fail(
                        rec,
                        origin,
                        ErrorKind::Stall,
                        "no data within the stall timeout".into(),
                    );
                }
                if now >= deadline {
                    return fail(
                        rec,
                        origin,
                        ErrorKind::Timeout,
                        "stream still open at the request timeout".into(),
                    );
                }
                timer.as_mut().reset(stall.map_or(deadline, |at| at.min(deadline)));
                continue;
            }
        };
        let bytes = match next {
            None => break,
            Some(Ok(b)) => b,
            Some(Err(e)) => return fail(rec, origin, ErrorKind::Reset, describe(&e)),
        };
        // Arrival time first, then parsing.
        let t = now_ns();
        last_read_ns = t;
        // Counted per read, so a stream of events without content (comments, role-only
        // or usage-only chunks), which `max_chunks` cannot see, ends too.
        received += bytes.len() as u64;
        if received > limits.sse.max_stream_bytes {
            return fail(
                rec,
                origin,
                ErrorKind::Overlong,
                format!(
                    "the stream is longer than {} bytes",
                    limits.sse.max_stream_bytes
                ),
            );
        }
        let mut rest: &[u8] = &bytes;
        loop {
            let data = match parser.next_event(&mut rest) {
                Ok(Some(data)) => data,
                Ok(None) => break,
                Err(e) => return fail(rec, origin, ErrorKind::TooLarge, e.to_string()),
            };
            if data.trim_ascii() == b"[DONE]" {
                saw_done = true;
                continue;
            }
            let info = match parse_data(data) {
                Ok(i) => i,
                Err(e) => return fail(rec, origin, e.kind(), e.to_string()),
            };
            if let Some(u) = info.usage {
                rec.prompt_tokens = u.prompt_tokens.or(rec.prompt_tokens);
                rec.completion_tokens = u.completion_tokens.or(rec.completion_tokens);
            }
            if info.text_len > 0 {
                if rec.chunks.len() >= max_chunks {
                    return fail(
                        rec,
                        origin,
                        ErrorKind::Overlong,
                        format!(
                            "more than {max_chunks} content chunks ({} tokens allowed)",
                            rec.requested_tokens.map_or("any".into(), |m| m.to_string())
                        ),
                    );
                }
                rec.chunks.push(Chunk {
                    t: t.saturating_sub(origin),
                    len: info.text_len,
                    lag: info.probe_ns.map(|p| t as i64 - p as i64),
                });
            }
        }
        if saw_done {
            break;
        }
    }
    rec.done = Some(now_ns().saturating_sub(origin));
    if !saw_done {
        rec.error = Some(ErrorKind::Incomplete);
        rec.error_detail = Some("the stream ended without `data: [DONE]`".into());
        return;
    }
    // Derived from the record, the one source of truth.
    let chunk_count = rec.chunks.len() as u64;
    if chunk_count == 0 {
        rec.error = Some(ErrorKind::Empty);
        rec.error_detail = Some("the stream carried no generated text".into());
        return;
    }
    match rec.completion_tokens {
        None => {
            rec.completion_tokens = Some(chunk_count);
            rec.tokens_estimated = true;
        }
        // Every content chunk carries at least one token, and the server may not
        // generate more than it was allowed: anything else is a lying usage block.
        Some(n) if n < chunk_count || rec.requested_tokens.is_some_and(|m| n > u64::from(m)) => {
            rec.error = Some(ErrorKind::BadUsage);
            rec.error_detail = Some(format!(
                "usage.completion_tokens = {n} contradicts the stream ({chunk_count} content chunks, {} tokens allowed)",
                rec.requested_tokens.map_or("any".into(), |m| m.to_string())
            ));
        }
        Some(_) => {}
    }
}

/// Reads `resp`'s body into `kept` until it holds [`ERROR_BODY_BYTES`] or the body
/// ends; dropping `resp` then closes the connection with the rest unread.
async fn body_start(mut resp: reqwest::Response, kept: &mut Vec<u8>) {
    while kept.len() < ERROR_BODY_BYTES {
        match resp.chunk().await {
            Ok(Some(b)) => {
                let room = ERROR_BODY_BYTES - kept.len();
                kept.extend_from_slice(&b[..b.len().min(room)]);
            }
            Ok(None) | Err(_) => break,
        }
    }
}

fn fail(rec: &mut RequestRecord, origin: u64, kind: ErrorKind, detail: String) {
    rec.done = Some(now_ns().saturating_sub(origin));
    rec.error = Some(kind);
    rec.error_detail = Some(detail);
}

/// A reqwest error without the URL's query or anything secret: its chain of causes.
fn describe(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(cause) = src {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        src = cause.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_chunk_bound_is_twice_max_tokens_and_at_least_64_more() {
        assert_eq!(max_content_chunks(Some(0)), 64);
        assert_eq!(max_content_chunks(Some(10)), 74);
        assert_eq!(max_content_chunks(Some(64)), 128);
        assert_eq!(max_content_chunks(Some(1000)), 2000);
        assert_eq!(max_content_chunks(Some(u32::MAX)), 2 * u32::MAX as usize);
        assert_eq!(max_content_chunks(None), UNASKED_MAX_CHUNKS);
        // The unasked bound keeps a record within 32 MiB.
        assert!(UNASKED_MAX_CHUNKS * std::mem::size_of::<Chunk>() <= 32 << 20);
    }
}
