//! An embeddings answer (`api = "embeddings"`), read whole: no stream, so no
//! chunk is recorded. The record gets the time the headers came
//! ([`Embedded::headers`]), the time the body's last bytes came (`done`, the end
//! of the request's E2EL), the status, `usage.prompt_tokens`, and how many vectors
//! came and of what length. The body is read to at most [`max_body_bytes`] for the
//! request's inputs, and parsed without keeping a vector: their numbers are
//! counted, not stored.
//!
//! A failure is named on the record like a stream's: a non-2xx status
//! (`http_NNN`, with the start of its body), a body too large (`too_large`), not
//! the embeddings shape (`malformed`), an `error` object (`server_error`), vectors
//! not one per input (`inputs_mismatch`), a prompt count the request could not hold
//! (`bad_usage`).

use std::fmt;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::StatusCode;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use super::stamped::{chunk_time, Stamps};
use super::{check_status, describe, Exchange, Failure};
use crate::drive::record::{now_ns, ErrorKind, RequestRecord};

/// Bytes of answer body allowed per input: a vector of 16,384 numbers written
/// as JSON at up to 32 bytes each, with room to spare.
pub const BODY_BYTES_PER_INPUT: u64 = 512 << 10;

/// Most bytes of one embeddings answer, whatever its inputs.
pub const MAX_BODY_BYTES: u64 = 256 << 20;

/// The most body bytes read for a request of `inputs` texts: [`BODY_BYTES_PER_INPUT`]
/// each and 64 KiB more, at most [`MAX_BODY_BYTES`].
pub fn max_body_bytes(inputs: u32) -> u64 {
    (u64::from(inputs) * BODY_BYTES_PER_INPUT + (64 << 10)).min(MAX_BODY_BYTES)
}

/// Reads the answer of an embeddings request into `at.rec` (whose `embeddings`
/// is set): the status, then the whole body within its bound, then its checks.
pub(super) async fn read<E: std::error::Error>(
    at: &mut Exchange<'_>,
    status: StatusCode,
    body: &mut (impl Stream<Item = Result<Bytes, E>> + Unpin),
    stamps: Option<&Stamps>,
) -> Result<(), Failure> {
    let sent_abs = at.origin.saturating_add(at.rec.sent);
    let headers_at = chunk_time(stamps.and_then(Stamps::latest), sent_abs, now_ns());
    let mut facts = at.rec.embeddings.as_deref().copied().unwrap_or_default();
    facts.headers = Some(headers_at.saturating_sub(at.origin));
    at.rec.embeddings = Some(Box::new(facts));
    check_status(status, body, at.deadline).await?;
    let limit = max_body_bytes(facts.inputs);
    let mut kept: Vec<u8> = Vec::new();
    let mut last = headers_at;
    loop {
        let next = match at.limits.stall_timeout {
            Some(s) => match tokio::time::timeout(s, body.next()).await {
                Ok(n) => n,
                Err(_) => {
                    return Err(Failure::new(
                        ErrorKind::Stall,
                        "no bytes of the answer within the stall timeout",
                    ))
                }
            },
            None => body.next().await,
        };
        let bytes = match next {
            None => break,
            Some(Ok(b)) => b,
            Some(Err(e)) => return Err(Failure::new(ErrorKind::Reset, describe(&e))),
        };
        last = chunk_time(stamps.and_then(Stamps::latest), last, now_ns());
        if kept.len() as u64 + bytes.len() as u64 > limit {
            return Err(Failure::new(
                ErrorKind::TooLarge,
                format!(
                    "the answer is over {limit} bytes, the most goodput reads for {} inputs",
                    facts.inputs
                ),
            ));
        }
        kept.extend_from_slice(&bytes);
    }
    at.rec.done = Some(last.saturating_sub(at.origin));
    facts.body_bytes = Some(kept.len() as u64);
    let answer = parse(&kept)?;
    facts.returned = Some(answer.returned);
    facts.dimension = answer.dimension;
    at.rec.embeddings = Some(Box::new(facts));
    at.rec.prompt_tokens = answer.prompt_tokens;
    check(at.rec, at.body_bytes)
}

/// What an embeddings body says, its vectors counted.
#[derive(Debug, PartialEq)]
pub(crate) struct Answer {
    /// Vectors in `data`.
    pub returned: u32,
    /// Their length, when they are arrays of numbers.
    pub dimension: Option<u32>,
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
}

/// Parses an embeddings body (`{"data": [{"embedding": [..]}, ..], "usage": {..}}`)
/// without keeping its numbers; an `error` object, another shape, or vectors of
/// different lengths fail.
pub(crate) fn parse(body: &[u8]) -> Result<Answer, Failure> {
    let raw: Raw = serde_json::from_slice(body).map_err(|e| {
        Failure::new(
            ErrorKind::Malformed,
            format!("the answer is not an embeddings list: {e}"),
        )
    })?;
    if let Some(error) = raw.error.filter(|e| !e.is_null()) {
        let text = crate::redact::cut(&error.to_string(), super::ERROR_BODY_BYTES);
        return Err(Failure::new(
            ErrorKind::ServerError,
            format!("the answer is an error: {text}"),
        ));
    }
    let data = raw.data.ok_or_else(|| {
        Failure::new(
            ErrorKind::Malformed,
            "the answer has no `data` list of vectors",
        )
    })?;
    let mut dimension = None;
    for (i, item) in data.iter().enumerate() {
        match (dimension, item.embedding.0) {
            (_, None) => {}
            (None, d) => dimension = d,
            (Some(a), Some(b)) if a != b => {
                return Err(Failure::new(
                    ErrorKind::Malformed,
                    format!("vector {i} has {b} numbers, vector 0 has {a}"),
                ))
            }
            _ => {}
        }
    }
    Ok(Answer {
        returned: u32::try_from(data.len()).unwrap_or(u32::MAX),
        dimension,
        prompt_tokens: raw.usage.and_then(|u| u.prompt_tokens),
    })
}

/// The checks of a parsed answer: one vector per input, and a prompt count the
/// request could hold.
fn check(rec: &RequestRecord, body_bytes: u64) -> Result<(), Failure> {
    let facts = rec.embeddings.as_deref().copied().unwrap_or_default();
    let returned = facts.returned.unwrap_or(0);
    if returned != facts.inputs {
        return Err(Failure::new(
            ErrorKind::InputsMismatch,
            format!(
                "the answer carried {returned} vectors for the request's {} inputs",
                facts.inputs
            ),
        ));
    }
    super::events::prompt_fits(rec, body_bytes)
}

#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    data: Option<Vec<Item>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    embedding: Len,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
}

/// The length of a vector given as an array (its numbers skipped, not kept);
/// `None` for another encoding (a base64 string).
#[derive(Default)]
struct Len(Option<u32>);

impl<'de> Deserialize<'de> for Len {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Len, D::Error> {
        struct Counting;
        impl<'de> Visitor<'de> for Counting {
            type Value = Len;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of numbers or a base64 string")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Len, A::Error> {
                let mut n = 0u32;
                while seq.next_element::<f64>()?.is_some() {
                    n = n.saturating_add(1);
                }
                Ok(Len(Some(n)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Len, E> {
                Ok(Len(None))
            }
        }
        d.deserialize_any(Counting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::record::Embedded;

    fn rec(inputs: u32) -> RequestRecord {
        let mut r = RequestRecord::new("e", 1.0, 0, 0, 0);
        r.embeddings = Some(Box::new(Embedded::asked(inputs)));
        r
    }

    #[test]
    fn vectors_are_counted_not_kept() {
        let body = br#"{"object":"list","data":[{"index":0,"embedding":[0.1,-2e-3,3]},
            {"index":1,"embedding":[1,2,3]}],"usage":{"prompt_tokens":14,"total_tokens":14}}"#;
        let a = parse(body).unwrap();
        assert_eq!(
            a,
            Answer {
                returned: 2,
                dimension: Some(3),
                prompt_tokens: Some(14)
            }
        );
        let base64 = br#"{"data":[{"embedding":"AAAA"}]}"#;
        assert_eq!(parse(base64).unwrap().dimension, None);
    }

    #[test]
    fn a_wrong_answer_is_named() {
        let kind = |b: &[u8]| parse(b).unwrap_err().kind;
        assert_eq!(kind(b"not json"), ErrorKind::Malformed);
        assert_eq!(kind(br#"{"usage":{}}"#), ErrorKind::Malformed);
        assert_eq!(
            kind(br#"{"data":[{"embedding":[1,2]},{"embedding":[1]}]}"#),
            ErrorKind::Malformed
        );
        assert_eq!(
            kind(br#"{"error":{"message":"no","code":400}}"#),
            ErrorKind::ServerError
        );
        let mut r = rec(3);
        r.embeddings.as_mut().unwrap().returned = Some(2);
        let f = check(&r, 100).unwrap_err();
        assert_eq!(f.kind, ErrorKind::InputsMismatch);
        assert!(f.detail.contains("2 vectors") && f.detail.contains("3 inputs"));
        let mut r = rec(1);
        r.embeddings.as_mut().unwrap().returned = Some(1);
        r.prompt_tokens = Some(1 << 20);
        assert_eq!(check(&r, 100).unwrap_err().kind, ErrorKind::BadUsage);
        r.prompt_tokens = Some(20);
        assert!(check(&r, 100).is_ok());
    }

    #[test]
    fn the_body_bound_grows_with_the_inputs_to_a_cap() {
        assert_eq!(max_body_bytes(1), (512 << 10) + (64 << 10));
        assert_eq!(max_body_bytes(100_000), MAX_BODY_BYTES);
    }
}
