//! HTTP/1.1 framing of goodput's own, for `http://` engines: the request's head,
//! the response's head (parsed by `httparse`, the parser hyper uses) and its
//! body's framing (chunked, a length, or until the server closes).
//!
//! Why not hyper's connection: an open stream held hyper's request channel (a
//! tokio `mpsc` block of 32 slots, 9.6 KiB), its write buffer (8 KiB) and its read
//! buffer (2 KiB), none of which can be sized (docs/bench.md, "Memory per open
//! stream"). Here a request's head is written once and dropped, a read lands in a
//! buffer on the stack of the poll that reads it and only what it brought is kept
//! (until the body's reader takes it), so an idle stream holds no buffer at all.
//!
//! Only what a client of an OpenAI-compatible server needs: one `POST` with a
//! `content-length` body, then a response with any status (1xx skipped), framed
//! as RFC 9112 section 6 says. Everything a server sends is bounded: the head by
//! [`MAX_HEAD_BYTES`] and [`MAX_HEADERS`], a chunk-size line by
//! [`MAX_CHUNK_LINE_BYTES`], trailers by [`MAX_TRAILER_BYTES`].

use bytes::{Buf, Bytes};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH};
use reqwest::StatusCode;

/// Most bytes of a response's head (status line and headers); more is
/// [`HeadError::TooLarge`].
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Most header fields of a response's head; more is [`HeadError::TooLarge`].
pub(crate) const MAX_HEADERS: usize = 100;

/// Most bytes of a chunk-size line's size and extensions.
pub(crate) const MAX_CHUNK_LINE_BYTES: u32 = 4096;

/// Most bytes of a chunked body's trailer section.
pub(crate) const MAX_TRAILER_BYTES: u32 = 16 * 1024;

/// The head of a `POST` of `body_len` bytes to `path` with `headers`
/// (`content-length` is added; a `content-length` among `headers` is left out).
pub(crate) fn request_head(path: &str, headers: &HeaderMap, body_len: usize) -> Vec<u8> {
    let mut head = Vec::with_capacity(64 + path.len() + headers.len() * 48);
    head.extend_from_slice(b"POST ");
    head.extend_from_slice(path.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in headers {
        if name == CONTENT_LENGTH {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(format!("content-length: {body_len}\r\n\r\n").as_bytes());
    head
}

/// A response's head, and how its body is framed.
#[derive(Debug)]
pub(crate) struct Head {
    pub status: StatusCode,
    /// Its header fields (for the checks of the status and content type; not
    /// kept while the body is read).
    pub headers: HeaderMap,
    pub body: Decoder,
    /// The connection may carry another request once this body has ended.
    pub keep_alive: bool,
}

/// Why a response's head could not be read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// Longer than [`MAX_HEAD_BYTES`], or more than [`MAX_HEADERS`] fields.
    TooLarge(String),
    /// Not an HTTP/1.x response head, or a framing that cannot be trusted.
    Malformed(String),
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeadError::TooLarge(s) | HeadError::Malformed(s) => f.write_str(s),
        }
    }
}

/// Parses a response head at the start of `buf`: `None` while it is incomplete
/// (and within the bounds), else the head and the bytes it took. A 1xx head (an
/// interim response) is returned as it is: the caller skips it.
pub(crate) fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, HeadError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut fields);
    let took = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) if n <= MAX_HEAD_BYTES => n,
        Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD_BYTES => return Ok(None),
        Ok(_) => {
            return Err(HeadError::TooLarge(format!(
                "the response's headers are too large (more than {MAX_HEAD_BYTES} bytes)"
            )))
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HeadError::TooLarge(format!(
                "the response's headers are too large (more than {MAX_HEADERS} fields)"
            )))
        }
        Err(e) => {
            return Err(HeadError::Malformed(format!(
                "the response's head is not HTTP/1.1: {e}"
            )))
        }
    };
    let code = resp.code.unwrap_or(0);
    let status = StatusCode::from_u16(code)
        .map_err(|_| HeadError::Malformed(format!("the response's status {code} is invalid")))?;
    let mut headers = HeaderMap::with_capacity(resp.headers.len());
    for h in resp.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes());
        let value = HeaderValue::from_bytes(h.value);
        if let (Ok(name), Ok(value)) = (name, value) {
            headers.append(name, value);
        }
    }
    let http10 = resp.version == Some(0);
    let body = framing(status, &headers)?;
    // A transfer coding beside a content-length, or in an HTTP/1.0 answer, is
    // framing that cannot be trusted for the next response (RFC 9112, 6.1 and
    // 6.3): this body is read, and the connection closed after it.
    let te = headers.contains_key(reqwest::header::TRANSFER_ENCODING);
    let suspect = te && (http10 || headers.contains_key(CONTENT_LENGTH));
    let keep_alive = !matches!(body, Decoder::Close)
        && !suspect
        && if http10 {
            has_token(&headers, &CONNECTION, "keep-alive")
        } else {
            !has_token(&headers, &CONNECTION, "close")
        };
    Ok(Some((
        Head {
            status,
            headers,
            body,
            keep_alive,
        },
        took,
    )))
}

/// Whether any `name` field lists `token` (comma-separated, any case).
fn has_token(headers: &HeaderMap, name: &HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.to_str()
            .is_ok_and(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    })
}

/// How a response's body is framed (RFC 9112, 6.3): none for 1xx, 204 and 304;
/// chunked when `transfer-encoding` ends with `chunked`; until the close for any
/// other transfer coding; `content-length` (one value, however often repeated);
/// else until the close.
fn framing(status: StatusCode, headers: &HeaderMap) -> Result<Decoder, HeadError> {
    if status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok(Decoder::Done);
    }
    let codings: Vec<&str> = headers
        .get_all(reqwest::header::TRANSFER_ENCODING)
        .iter()
        .flat_map(|v| v.to_str().unwrap_or("?").split(','))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    if let Some(last) = codings.last() {
        return Ok(if last.eq_ignore_ascii_case("chunked") {
            Decoder::Chunked(Chunk::Size {
                value: 0,
                digits: 0,
            })
        } else {
            Decoder::Close
        });
    }
    let mut length = None;
    for v in headers.get_all(CONTENT_LENGTH) {
        for part in v.to_str().unwrap_or("?").split(',') {
            let part = part.trim();
            let n = (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| {
                    HeadError::Malformed(format!(
                        "the response's content-length `{part}` is not a length"
                    ))
                })?;
            if length.is_some_and(|l| l != n) {
                return Err(HeadError::Malformed(
                    "the response has two different content-lengths".into(),
                ));
            }
            length = Some(n);
        }
    }
    Ok(match length {
        Some(0) => Decoder::Done,
        Some(n) => Decoder::Length(n),
        None => Decoder::Close,
    })
}

/// Where a body's reader stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decoder {
    /// Chunked transfer coding.
    Chunked(Chunk),
    /// This many bytes of body are still to come.
    Length(u64),
    /// The body is whatever comes until the server closes.
    Close,
    /// The body has ended.
    Done,
}

/// Where a chunked body's reader stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chunk {
    /// In a chunk-size line's hexadecimal size.
    Size {
        value: u64,
        digits: u8,
    },
    /// In a chunk-size line's extensions (ignored), `len` bytes so far.
    Ext {
        value: u64,
        len: u32,
    },
    /// The chunk-size line's CR was read.
    SizeLf {
        value: u64,
    },
    /// This many bytes of the chunk's data are still to come.
    Data(u64),
    /// The chunk's data ended; its CRLF follows.
    DataCr,
    DataLf,
    /// In the trailer section after the last chunk: `line` bytes of the current
    /// field line, `total` of the section.
    Trailer {
        line: u32,
        total: u32,
    },
    TrailerLf {
        line: u32,
        total: u32,
    },
}

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// The socket failed.
    Io(std::io::Error),
    /// The server closed the connection before the body's end (a chunked or
    /// length-framed body cut short).
    Cut,
    /// The chunked framing is broken or past a bound.
    Chunked(&'static str),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::Io(e) => write!(f, "error reading the response body: {e}"),
            BodyError::Cut => f.write_str("the connection closed before the response body ended"),
            BodyError::Chunked(what) => write!(f, "bad chunked encoding: {what}"),
        }
    }
}

impl std::error::Error for BodyError {}

impl Decoder {
    /// Takes bytes of `buf` until a piece of body data is out (returned: a slice
    /// of `buf`, no copy) or `buf` is empty; framing bytes are consumed. `None`:
    /// `buf` ran out, or the body ended ([`Decoder::Done`]; the bytes after it stay
    /// in `buf`).
    pub(crate) fn decode(&mut self, buf: &mut Bytes) -> Result<Option<Bytes>, BodyError> {
        match self {
            Decoder::Done => Ok(None),
            Decoder::Close => Ok((!buf.is_empty()).then(|| buf.split_to(buf.len()))),
            Decoder::Length(left) => {
                if buf.is_empty() {
                    return Ok(None);
                }
                let n = (*left).min(buf.len() as u64) as usize;
                *left -= n as u64;
                if *left == 0 {
                    *self = Decoder::Done;
                }
                Ok(Some(buf.split_to(n)))
            }
            Decoder::Chunked(state) => {
                let out = chunked(state, buf)?;
                if matches!(out, Step::End) {
                    *self = Decoder::Done;
                }
                Ok(match out {
                    Step::Data(d) => Some(d),
                    Step::More | Step::End => None,
                })
            }
        }
    }

    /// The server closed the connection: the end of a body framed by the close,
    /// a body cut short otherwise.
    pub(crate) fn closed(&mut self) -> Result<(), BodyError> {
        match self {
            Decoder::Close | Decoder::Done => {
                *self = Decoder::Done;
                Ok(())
            }
            _ => Err(BodyError::Cut),
        }
    }
}

enum Step {
    Data(Bytes),
    More,
    End,
}

/// One step of the chunked decoder over `buf`.
fn chunked(state: &mut Chunk, buf: &mut Bytes) -> Result<Step, BodyError> {
    while !buf.is_empty() {
        if let Chunk::Data(left) = state {
            let n = (*left).min(buf.len() as u64) as usize;
            *left -= n as u64;
            if *left == 0 {
                *state = Chunk::DataCr;
            }
            return Ok(Step::Data(buf.split_to(n)));
        }
        let b = buf[0];
        buf.advance(1);
        *state = match (*state, b) {
            (Chunk::Size { value, digits }, _) if b.is_ascii_hexdigit() => {
                // Leading zeros are allowed and not counted past the first (an
                // endless run of them is a line that never ends: the stall timer's).
                if digits >= 16 {
                    return Err(BodyError::Chunked("a chunk size of more than 16 digits"));
                }
                let d = (b as char).to_digit(16).unwrap_or(0);
                let significant = value != 0 || d != 0;
                Chunk::Size {
                    value: value * 16 + u64::from(d),
                    digits: if significant || digits == 0 {
                        digits + 1
                    } else {
                        digits
                    },
                }
            }
            (Chunk::Size { value, digits }, b';' | b' ' | b'\t') if digits > 0 => {
                Chunk::Ext { value, len: 0 }
            }
            (Chunk::Size { value, digits }, b'\r') if digits > 0 => Chunk::SizeLf { value },
            (Chunk::Size { .. }, _) => {
                return Err(BodyError::Chunked("a chunk size is not hexadecimal"))
            }
            (Chunk::Ext { value, .. }, b'\r') => Chunk::SizeLf { value },
            (Chunk::Ext { .. }, b'\n') => {
                return Err(BodyError::Chunked("a bare LF in a chunk-size line"))
            }
            (Chunk::Ext { value, len }, _) => {
                if len >= MAX_CHUNK_LINE_BYTES {
                    return Err(BodyError::Chunked("a chunk-size line too long"));
                }
                Chunk::Ext {
                    value,
                    len: len + 1,
                }
            }
            (Chunk::SizeLf { value: 0 }, b'\n') => Chunk::Trailer { line: 0, total: 0 },
            (Chunk::SizeLf { value }, b'\n') => Chunk::Data(value),
            (Chunk::SizeLf { .. }, _) => {
                return Err(BodyError::Chunked("a chunk-size line without CRLF"))
            }
            (Chunk::DataCr, b'\r') => Chunk::DataLf,
            (Chunk::DataLf, b'\n') => Chunk::Size {
                value: 0,
                digits: 0,
            },
            (Chunk::DataCr | Chunk::DataLf, _) => {
                return Err(BodyError::Chunked("a chunk's data is not followed by CRLF"))
            }
            (Chunk::Trailer { line, total }, b'\r') => Chunk::TrailerLf { line, total },
            (Chunk::Trailer { line, total }, _) => {
                if total >= MAX_TRAILER_BYTES {
                    return Err(BodyError::Chunked("trailers too long"));
                }
                Chunk::Trailer {
                    line: line + 1,
                    total: total + 1,
                }
            }
            (Chunk::TrailerLf { line: 0, .. }, b'\n') => return Ok(Step::End),
            (Chunk::TrailerLf { total, .. }, b'\n') => Chunk::Trailer { line: 0, total },
            (Chunk::TrailerLf { .. }, _) => {
                return Err(BodyError::Chunked("a trailer line without CRLF"))
            }
            (Chunk::Data(_), _) => unreachable!("handled above"),
        };
    }
    Ok(Step::More)
}

#[cfg(test)]
mod tests;
