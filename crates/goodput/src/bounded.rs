//! The one way goodput reads an HTTP answer's body outside the measured stream:
//! with a byte bound, so that no server can make goodput hold more than the bound
//! of one answer, whatever it sends (an endless `/v1/models`, a 100 MB `/tokenize`).
//!
//! The body is read chunk by chunk and refused as soon as it passes the bound, with
//! an error that names the endpoint and the limit. Timeouts stay with the request
//! (reqwest's per-request timeout), so an answer that trickles forever ends too.

use bytes::{Bytes, BytesMut};

/// Bytes of a probe's answer (`/v1/models`, `/version`, `/props`, `/health`,
/// `/tokenize`, `/sim/gpu`): far above any real answer (vLLM's model list is a few
/// hundred bytes, a `/tokenize` of a 32k-token prompt about 200 KB).
pub const MAX_PROBE_BYTES: usize = 4 << 20;

/// Why a body could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BodyError {
    /// The answer went on past the bound.
    #[error(
        "{what}: the answer is longer than {limit} bytes (goodput reads at most that much of it)"
    )]
    TooLarge {
        /// The request, e.g. `GET http://127.0.0.1:8000/v1/models`.
        what: String,
        /// The bound, bytes.
        limit: usize,
    },
    /// The connection failed while the body was read.
    #[error("{what}: {why}")]
    Read {
        /// The request.
        what: String,
        /// What failed.
        why: String,
    },
}

/// Reads `resp`'s body whole if it is at most `limit` bytes; `what` names the
/// request in the error (`GET {url}`).
pub async fn read_bounded(
    mut resp: reqwest::Response,
    limit: usize,
    what: &str,
) -> Result<Bytes, BodyError> {
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_large(what, limit));
    }
    let mut body = BytesMut::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > limit {
                    return Err(too_large(what, limit));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body.freeze()),
            Err(e) => {
                return Err(BodyError::Read {
                    what: what.to_string(),
                    why: e.without_url().to_string(),
                })
            }
        }
    }
}

/// [`read_bounded`], parsed as JSON into `T`.
pub async fn read_json<T: serde::de::DeserializeOwned>(
    resp: reqwest::Response,
    limit: usize,
    what: &str,
) -> Result<T, BodyError> {
    let body = read_bounded(resp, limit, what).await?;
    serde_json::from_slice(&body).map_err(|e| BodyError::Read {
        what: what.to_string(),
        why: format!("not the JSON expected ({e})"),
    })
}

fn too_large(what: &str, limit: usize) -> BodyError {
    BodyError::TooLarge {
        what: what.to_string(),
        limit,
    }
}
