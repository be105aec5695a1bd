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
    /// goodput addition: the interval of `valid_share` (95% Wilson on the calls
    /// judged, widened by the spread between trials as the attainment's is);
    /// absent when no call was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_interval: Option<ShareInterval>,
    /// goodput addition: of the judged calls, the ones whose arguments are valid
    /// JSON *and* valid against the JSON schema of the function the call names
    /// (a call naming a function the request did not offer is not), over all
    /// trials.
    #[serde(default)]
    pub schema_valid: u64,
    /// `schema_valid / judged`; absent when no call was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_valid_share: Option<f64>,
    /// The interval of `schema_valid_share`, as `valid_interval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_valid_interval: Option<ShareInterval>,
    /// goodput addition: median argument tokens of each trial, over the requests
    /// that called a tool (see `RequestRecord`'s `tool_calls` and docs/report.md
    /// for how they are counted: usage's completion tokens when the answer was
    /// tool calls only, else the argument deltas).
    #[serde(default, skip_serializing_if = "no_trials")]
    pub median_argument_tokens: Stat,
}

/// goodput addition: the interval of a share of tool calls, and what it allows
/// for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct ShareInterval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// The design effect the interval allows for: the variance of the pooled share
    /// over a binomial's, from the spread of the per-trial shares (1 with one
    /// trial, never below 1).
    pub design_effect: f64,
    /// Trials with calls judged.
    #[serde(default)]
    pub trials: u32,
}

/// goodput addition: a point's requirement on a share of valid tool calls
/// (`[slo] min_valid_tool_calls`, `min_schema_valid_tool_calls`) and its
/// judgement: `meets` when the share's interval lies at or above the requirement,
/// `fails` when it lies below (or no call was judged), `undecided` otherwise. The
/// point's own judgement is `fails` when one of these fails, `undecided` when one
/// is undecided and none fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallCheck {
    /// Which share: `valid` (arguments parse as JSON) or `schema_valid` (and match
    /// the schema of the function named).
    pub share: String,
    /// The share required (`slo.min_valid_tool_calls` or
    /// `slo.min_schema_valid_tool_calls`).
    pub required: f64,
    /// Calls of that kind, over all trials.
    pub valid: u64,
    /// Calls judged, over all trials.
    pub judged: u64,
    /// The share's interval, at the check's level; absent when no call was
    /// judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<ShareInterval>,
    /// The requirement's judgement.
    pub judgement: super::Judgement,
}

fn no_trials(s: &Stat) -> bool {
    s.n == 0
}
