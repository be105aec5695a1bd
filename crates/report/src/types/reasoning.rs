//! goodput addition: a reasoning model's point, thinking and answering apart.

use serde::{Deserialize, Serialize};

use crate::stats::Stat;

/// goodput addition: how a point's requests split between reasoning (thinking) and
/// answering. Present only when some successful request of the point streamed
/// reasoning (a model that does not reason answers from its first token: its
/// time to first answer token is its TTFT).
///
/// Scalars are per-trial values summarised as `{median,min,max,n}`, like the
/// point's own; definitions in `goodput`'s `metrics` module and `docs/reasoning.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ReasoningSummary {
    /// Median time to first answer token (TTFAT) of each trial: the first chunk of
    /// answer text (`delta.content`) − send time, ms, over the requests that
    /// answered. TTFT counts from the first token of either kind.
    pub median_ttfat_ms: Stat,
    /// p99 TTFAT of each trial, ms.
    pub p99_ttfat_ms: Stat,
    /// Median TPOT of the answer of each trial: (last answer chunk − first answer
    /// chunk) / (answer tokens − 1), ms, for answers of more than one token.
    pub median_answer_tpot_ms: Stat,
    /// p99 TPOT of the answer of each trial, ms.
    pub p99_answer_tpot_ms: Stat,
    /// Mean reasoning tokens per successful request of each trial.
    pub mean_reasoning_tokens: Stat,
    /// Mean answer tokens per successful request of each trial (output tokens −
    /// reasoning tokens).
    pub mean_answer_tokens: Stat,
    /// Requests that streamed reasoning, one entry per trial.
    pub reasoning_requests: Vec<u64>,
    /// Requests that streamed reasoning and no answer at all (thinking up to the
    /// token limit), one entry per trial: never good, and warned about.
    pub no_answer: Vec<u64>,
    /// Requests whose reasoning token count was counted from chunks because the
    /// server gave no `usage.completion_tokens_details.reasoning_tokens`.
    #[serde(default)]
    pub estimated_reasoning_tokens: u64,
}

impl ReasoningSummary {
    /// Requests without an answer, over all trials.
    pub fn no_answer_total(&self) -> u64 {
        self.no_answer.iter().sum()
    }
}
