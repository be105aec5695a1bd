//! goodput addition: a point of an embeddings engine (`api = "embeddings"`).

use serde::{Deserialize, Serialize};

use crate::stats::Stat;

/// goodput addition: what an embeddings engine's point served. Present only for
/// points of an engine with `api = "embeddings"`; such a point streams nothing, so
/// its TTFT, TPOT, ITL and output throughput have no trials (`n = 0`) and its
/// latency is the point's E2EL (send to the whole answer read).
///
/// Scalars are per-trial values summarised as `{median,min,max,n}`, like the
/// point's own; definitions in `goodput`'s `metrics` module and `docs/report.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct EmbeddingsSummary {
    /// Inputs (texts to embed) each request carried (`[workload] inputs`).
    pub inputs_per_request: u32,
    /// Inputs of successful requests per second of trial duration.
    pub input_throughput: Stat,
    /// Prompt tokens of successful requests (`usage.prompt_tokens`) per second of
    /// trial duration.
    pub input_token_throughput: Stat,
    /// Median time from the send to the response's headers of each trial, ms.
    pub median_headers_ms: Stat,
    /// The length of the vectors returned (the first successful request's), when
    /// one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension: Option<u32>,
}
