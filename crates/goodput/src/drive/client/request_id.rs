//! What one request sends besides its URL: the body, serialised before the trial,
//! and its `x-request-id`, made before the trial too, so that the serving stack's
//! logs and traces of the request join goodput's record of it (the record keeps
//! the id: [`crate::drive::record::RequestRecord::request_id`]).
//!
//! An id is `goodput-<trial nonce, 16 hex digits>-<request index>`: the nonce is
//! drawn from the OS for each trial, so ids are unique across trials, points,
//! engines and runs (the run's seed is not used: two runs with one seed would
//! send the same ids), and the index is the one the record carries.

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// The header every request carries its id in.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// One request as it is sent: the body, and the `x-request-id` value when it has one.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The serialised JSON body.
    pub body: Bytes,
    /// The `x-request-id` header's value.
    pub request_id: Option<HeaderValue>,
}

impl From<Bytes> for Outgoing {
    /// A request without an id.
    fn from(body: Bytes) -> Outgoing {
        Outgoing {
            body,
            request_id: None,
        }
    }
}

impl Outgoing {
    /// The request's headers: the target's, and its id.
    pub(super) fn headers(&self, target: &HeaderMap) -> HeaderMap {
        let mut headers = target.clone();
        if let Some(id) = &self.request_id {
            headers.insert(X_REQUEST_ID, id.clone());
        }
        headers
    }
}

/// A fresh nonce for a trial's ids, from the OS-seeded generator.
pub fn trial_nonce() -> u64 {
    rand::random()
}

/// The id of request `index` in the trial of `nonce`.
pub fn request_id(nonce: u64, index: u32) -> String {
    format!("goodput-{nonce:016x}-{index}")
}

/// The `x-request-id` values of requests `first..first + n` of the trial of
/// `nonce`, made before the trial starts.
pub fn request_ids(nonce: u64, first: u32, n: usize) -> Vec<Option<HeaderValue>> {
    (0..n as u32)
        .map(|i| HeaderValue::try_from(request_id(nonce, first.saturating_add(i))).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_the_nonce_and_the_whole_trials_index_and_differ_per_request() {
        let ids = request_ids(0xab, 10, 3);
        let texts: Vec<&str> = ids
            .iter()
            .map(|h| h.as_ref().and_then(|h| h.to_str().ok()).unwrap_or(""))
            .collect();
        assert_eq!(
            texts,
            [
                "goodput-00000000000000ab-10",
                "goodput-00000000000000ab-11",
                "goodput-00000000000000ab-12"
            ]
        );
        assert_ne!(trial_nonce(), trial_nonce());
    }

    #[test]
    fn the_id_is_added_to_the_targets_headers_and_replaces_none_of_them() {
        let mut target = HeaderMap::new();
        target.insert("content-type", HeaderValue::from_static("application/json"));
        let out = Outgoing {
            body: Bytes::from_static(b"{}"),
            request_id: Some(HeaderValue::from_static("goodput-1-0")),
        };
        let h = out.headers(&target);
        assert_eq!(h.len(), 2);
        assert_eq!(h[X_REQUEST_ID], "goodput-1-0");
        assert_eq!(Outgoing::from(out.body.clone()).headers(&target), target);
    }
}
