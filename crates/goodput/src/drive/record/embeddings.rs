//! The raw facts of an embeddings request (`api = "embeddings"`): what it sent and
//! what its answer, read whole, carried. Nothing here is derived: the latency is
//! the record's `done − sent`, read off by [`crate::measure::metrics`].

use serde::{Deserialize, Serialize};

/// An embeddings request's own facts, beside the record's send and end times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Embedded {
    /// Texts the request carried in `input`.
    pub inputs: u32,
    /// When the response's headers arrived, ns since the trial's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<u64>,
    /// Bytes of the answer's body, read whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_bytes: Option<u64>,
    /// Vectors the answer carried in `data` (a success carries `inputs` of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returned: Option<u32>,
    /// The vectors' length (each the same), when they came as arrays of numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension: Option<u32>,
}

impl Embedded {
    /// The facts of a request of `inputs` texts, before it is sent.
    pub fn asked(inputs: u32) -> Embedded {
        Embedded {
            inputs,
            ..Embedded::default()
        }
    }
}
