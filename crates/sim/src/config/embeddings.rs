//! An embedding model's costs (`[embeddings]` of a simulator configuration, the
//! `embed` preset): what `/v1/embeddings` takes and answers.

use serde::{Deserialize, Serialize};

/// How the simulated engine serves `/v1/embeddings`: requests wait for the engine,
/// which runs one forward pass at a time over every request waiting (up to
/// `max_batch_tokens`); a pass takes `pass_ms + per_token_ms` × its prompt
/// tokens, and its requests are answered together at its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddingsConfig {
    /// Fixed cost of one forward pass, ms.
    pub pass_ms: f64,
    /// Cost per prompt token in a pass, ms.
    pub per_token_ms: f64,
    /// Most prompt tokens one pass takes (a request larger than this runs alone).
    pub max_batch_tokens: u32,
    /// Length of each vector.
    pub dimension: u32,
}

impl Default for EmbeddingsConfig {
    /// A small BERT-sized model: 384-number vectors, 5 ms a pass, 10 µs a token.
    fn default() -> Self {
        EmbeddingsConfig {
            pass_ms: 5.0,
            per_token_ms: 0.01,
            max_batch_tokens: 16_384,
            dimension: 384,
        }
    }
}

impl EmbeddingsConfig {
    /// The time of one pass over `tokens` prompt tokens, simulated ms.
    pub fn pass_time_ms(&self, tokens: u64) -> f64 {
        self.pass_ms + self.per_token_ms * tokens as f64
    }
}
