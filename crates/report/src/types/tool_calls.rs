//! goodput addition: a point's tool calls (`[workload] tools`), timed and judged.

use serde::{Deserialize, Serialize};

use crate::stats::Stat;

/// goodput addition: how fast and how well a point's requests called tools.
/// Present only when some request of the point asked for tool calls or streamed
/// one.
///
/// Scalars are per-trial values summarised as `{median,min,max,n}`, like the
/// point's own; definitions in `goodput`'s `metrics` module and `docs/report.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ToolCallSummary {
    /// Median time to first tool call (TTFTC) of each trial: the first chunk with
    /// a `delta.tool_calls` entry − send time, ms, over the requests that called a
    /// tool.
    pub median_ttftc_ms: Stat,
    /// p99 TTFTC of each trial, ms.
    pub p99_ttftc_ms: Stat,
    /// Median time to the complete calls of each trial: the last chunk that
    /// carried a piece of a call − send time, ms.
    pub median_tool_call_ms: Stat,
    /// Requests that asked for tool calls (carried `tools`), one entry per trial.
    pub asked: Vec<u64>,
    /// Successful requests that streamed at least one tool call, one entry per
    /// trial.
    pub called: Vec<u64>,
    /// Tool calls streamed, over all trials.
    pub calls: u64,
    /// Of the judged calls (those whose arguments were kept whole), the ones whose
    /// arguments parse as JSON, over all trials.
    pub valid: u64,
    /// Calls judged for validity, over all trials (`calls` less those too long to
    /// keep).
    pub judged: u64,
    /// `valid / judged`; absent when no call was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_share: Option<f64>,
}
