//! Tool calls (`[workload] tools`): how soon and how well a request called a tool
//! (definitions in the parent module's doc and in docs/report.md).
//!
//! Read off the record's [`crate::drive::record::ToolCalls`]: the arrival of the
//! first `delta.tool_calls` entry and of the last piece of a call, and each call's
//! arguments as streamed, which are valid when they parse as JSON and
//! schema-valid when they also satisfy the schema of the function they name
//! ([`super::tool_validity`]). A point's shares come with an interval: the Wilson
//! score interval on the calls judged, widened by the spread between trials (the
//! design effect, as the attainment's: `report::stats::dispersed`), at 95%.
//!
//! **Argument tokens** of a request: when its answer was tool calls only (no
//! content beyond the calls' names and arguments) and the server's usage counted
//! the tokens, usage's `completion_tokens` less its reasoning tokens: the tokens
//! the model generated for the calls, their names and the engine's call syntax
//! included. Otherwise the argument pieces (deltas) streamed, about one token each
//! where the engine streams a token a chunk (vLLM, SGLang); an engine that streams
//! arguments in larger pieces is undercounted.

use report::stats::dispersed::attainment_interval;
use report::stats::Z95;
use report::{ShareInterval, Stat, ToolCallSummary};

use super::{TrialMetrics, NS_PER_MS};
use crate::drive::record::RequestRecord;

/// What one successful request did with the tools it was given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestToolCalls {
    /// The request carried `tools` and asked for calls.
    pub asked: bool,
    /// Time to first tool call: the first chunk with a `delta.tool_calls` entry −
    /// send time, ms; `None` when it streamed no tool call.
    pub ttftc_ms: Option<f64>,
    /// Time to the complete calls: the last chunk with a piece of a call − send
    /// time, ms.
    pub complete_ms: Option<f64>,
    /// Tool calls streamed (those kept and those beyond the record's bound).
    pub calls: u64,
    /// Calls whose arguments were kept whole, and so judged.
    pub judged: u64,
    /// Of those, the ones whose arguments parse as JSON.
    pub valid: u64,
    /// Of those, the ones also valid against their function's schema.
    pub schema_valid: u64,
    /// Argument tokens (see the module's doc); `None` when it called no tool.
    pub argument_tokens: Option<u64>,
}

/// A successful request's tool-call facts.
pub fn request_tool_calls(r: &RequestRecord) -> RequestToolCalls {
    let ms = |t: u64| t.saturating_sub(r.sent) as f64 / NS_PER_MS;
    let mut m = RequestToolCalls {
        asked: r.tools_asked.is_some(),
        ..RequestToolCalls::default()
    };
    if let Some(tc) = &r.tool_calls {
        m.ttftc_ms = Some(ms(tc.first));
        m.complete_ms = Some(ms(tc.last));
        m.calls = tc.calls.len() as u64 + u64::from(tc.dropped);
        for c in tc.calls.iter().filter(|c| !c.cut) {
            let v = super::tool_validity::judge(c, r.tools_offered);
            m.judged += 1;
            m.valid += u64::from(v.json);
            m.schema_valid += u64::from(v.schema);
        }
        m.argument_tokens = Some(argument_tokens(r, tc));
    }
    m
}

/// A request's argument tokens (see the module's doc).
fn argument_tokens(r: &RequestRecord, tc: &crate::drive::record::ToolCalls) -> u64 {
    let pieces: u64 = tc.calls.iter().map(|c| u64::from(c.pieces)).sum();
    let answer: u64 = r
        .chunks
        .iter()
        .map(|c| u64::from(c.len.saturating_sub(c.reasoning)))
        .sum();
    let calls: u64 = tc
        .calls
        .iter()
        .map(|c| (c.name.len() + c.arguments.len()) as u64)
        .sum();
    let thought = r.chunks.iter().any(|c| c.reasoning > 0);
    let whole = tc.dropped == 0 && tc.calls.iter().all(|c| !c.cut);
    match r.completion_tokens {
        Some(n) if whole && answer <= calls && !r.tokens_estimated => {
            match (thought, r.reasoning_tokens) {
                (_, Some(reasoning)) => n.saturating_sub(reasoning),
                (false, None) => n,
                (true, None) => pieces,
            }
        }
        _ => pieces,
    }
}

/// A trial's tool-call figures, gathered request by request
/// ([`TrialToolCalls::add`]) and then summarised ([`TrialToolCalls::finish`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialToolCalls {
    /// Successful requests that asked for tool calls.
    pub asked: u64,
    /// Successful requests that streamed a tool call.
    pub called: u64,
    /// Calls, judged calls and valid calls, summed.
    pub calls: u64,
    /// See `calls`.
    pub judged: u64,
    /// See `calls`.
    pub valid: u64,
    /// See `calls`.
    pub schema_valid: u64,
    /// Argument tokens of each request that called a tool.
    pub argument_tokens: Vec<f64>,
    /// Their median.
    pub median_argument_tokens: Option<f64>,
    /// TTFTC of each request that called a tool, ms.
    pub ttftcs_ms: Vec<f64>,
    /// Time to the complete calls of the same requests, ms.
    pub completes_ms: Vec<f64>,
    /// Median and p99 TTFTC (numpy's linear rule), ms.
    pub median_ttftc_ms: Option<f64>,
    /// See `median_ttftc_ms`.
    pub p99_ttftc_ms: Option<f64>,
    /// Median time to the complete calls, ms.
    pub median_complete_ms: Option<f64>,
}

impl TrialToolCalls {
    /// Adds one successful request.
    pub fn add(&mut self, r: &RequestToolCalls) {
        self.asked += u64::from(r.asked);
        self.called += u64::from(r.ttftc_ms.is_some());
        self.calls += r.calls;
        self.judged += r.judged;
        self.valid += r.valid;
        self.schema_valid += r.schema_valid;
        self.argument_tokens
            .extend(r.argument_tokens.map(|n| n as f64));
        self.ttftcs_ms.extend(r.ttftc_ms);
        self.completes_ms.extend(r.complete_ms);
    }

    /// Medians and p99s of what was added.
    pub fn finish(&mut self) {
        let median_p99 = |v: &[f64]| crate::stats::median_p99(&mut v.to_vec());
        (self.median_ttftc_ms, self.p99_ttftc_ms) = median_p99(&self.ttftcs_ms);
        self.median_complete_ms = median_p99(&self.completes_ms).0;
        self.median_argument_tokens = median_p99(&self.argument_tokens).0;
    }
}

/// The point's [`ToolCallSummary`]; `None` when no request of its trials asked
/// for tool calls or streamed one.
pub fn tool_call_summary(trials: &[TrialMetrics]) -> Option<ToolCallSummary> {
    if trials
        .iter()
        .all(|t| t.tool_calls.asked == 0 && t.tool_calls.called == 0)
    {
        return None;
    }
    let stat = |f: fn(&TrialToolCalls) -> Option<f64>| {
        Stat::from_trials(trials.iter().map(|t| f(&t.tool_calls)))
    };
    let sum = |f: fn(&TrialToolCalls) -> u64| trials.iter().map(|t| f(&t.tool_calls)).sum();
    let (valid, judged): (u64, u64) = (sum(|t| t.valid), sum(|t| t.judged));
    let schema_valid = sum(|t| t.schema_valid);
    Some(ToolCallSummary {
        median_ttftc_ms: stat(|t| t.median_ttftc_ms),
        p99_ttftc_ms: stat(|t| t.p99_ttftc_ms),
        median_tool_call_ms: stat(|t| t.median_complete_ms),
        asked: trials.iter().map(|t| t.tool_calls.asked).collect(),
        called: trials.iter().map(|t| t.tool_calls.called).collect(),
        calls: sum(|t| t.calls),
        valid,
        judged,
        valid_share: (judged > 0).then(|| valid as f64 / judged as f64),
        valid_interval: share_interval(trials, |t| t.valid, Z95),
        schema_valid,
        schema_valid_share: (judged > 0).then(|| schema_valid as f64 / judged as f64),
        schema_valid_interval: share_interval(trials, |t| t.schema_valid, Z95),
        median_argument_tokens: stat(|t| t.median_argument_tokens),
    })
}

/// The interval of a share of the judged calls over trials (`of` picks the
/// calls counted), read at the normal quantile `z`; `None` when none was judged.
pub fn share_interval(
    trials: &[TrialMetrics],
    of: fn(&TrialToolCalls) -> u64,
    z: f64,
) -> Option<ShareInterval> {
    let counts: Vec<(u64, u64)> = trials
        .iter()
        .map(|t| (of(&t.tool_calls), t.tool_calls.judged))
        .collect();
    interval_of(&counts, z)
}

/// The interval of `(valid, judged)` counts of each trial at `z`.
pub fn interval_of(counts: &[(u64, u64)], z: f64) -> Option<ShareInterval> {
    let d = attainment_interval(counts, z)?;
    Some(ShareInterval {
        low: d.low,
        high: d.high,
        design_effect: d.design_effect,
        trials: d.trials,
    })
}

#[cfg(test)]
mod tests {
    use report::{Slo, SloMetric};

    use super::*;
    use crate::drive::record::tool_calls::ToolCall;
    use crate::drive::record::{Chunk, ToolCalls};
    use crate::measure::metrics::{point_slo, point_summary, trial_metrics, trial_slo};

    /// A successful request sent at 0 with chunks at 10 and 40 ms; tools asked
    /// when `asked`, and a call of `arguments` (first delta at `first` ms, last
    /// piece at 40 ms) when given.
    fn record(index: u32, asked: bool, call: Option<(u64, &str)>) -> RequestRecord {
        let mut r = RequestRecord::new("e", 1.0, 0, index, 0);
        r.sent = 0;
        r.done = Some(50_000_000);
        r.chunks = [10, 40]
            .map(|ms| Chunk {
                t: ms * 1_000_000,
                len: 4,
                reasoning: 0,
                lag: None,
                bound: None,
            })
            .to_vec();
        r.completion_tokens = Some(2);
        r.tools_asked = asked.then_some(2);
        r.tool_calls = call.map(|(first, arguments)| {
            Box::new(ToolCalls {
                first: first * 1_000_000,
                last: 40_000_000,
                calls: vec![ToolCall {
                    index: 0,
                    name: "get_weather".into(),
                    arguments: arguments.into(),
                    cut: false,
                    pieces: 1,
                }],
                dropped: 0,
            })
        });
        r
    }

    #[test]
    fn ttftc_and_the_valid_share_come_from_the_records() {
        let records = [
            record(0, true, Some((10, "{\"city\":\"Oslo\"}"))),
            record(1, true, Some((20, "{\"city\":"))),
            record(2, true, None),
        ];
        let m = request_tool_calls(&records[0]);
        assert_eq!(m.ttftc_ms, Some(10.0));
        assert_eq!(m.complete_ms, Some(40.0));
        assert_eq!((m.calls, m.judged, m.valid), (1, 1, 1));
        assert_eq!(request_tool_calls(&records[1]).valid, 0);

        let slo = Slo::bounded([(SloMetric::Ttftc, 15.0)]);
        let t = trial_metrics(&records, &slo);
        assert_eq!(t.good, 1, "20 ms misses, no call misses");
        assert_eq!(t.values(SloMetric::Ttftc), [10.0, 20.0]);
        assert_eq!(t.tool_calls.median_ttftc_ms, Some(15.0));
        let p = point_summary(1.0, &[t], &[], false);
        let s = p.tool_calls.clone().unwrap();
        assert_eq!((s.asked, s.called), (vec![3], vec![2]));
        assert_eq!((s.calls, s.valid, s.judged), (2, 1, 2));
        assert_eq!(s.valid_share, Some(0.5));
        assert_eq!(
            (SloMetric::Ttftc.def().median)(&p).and_then(|m| m.median),
            Some(15.0)
        );

        // The percentile form: the request without a call is infinitely slow.
        let ts = trial_slo(&records, &slo);
        assert_eq!(ts.misses.get("ttftc"), Some(&2));
        assert_eq!(ts.missing[SloMetric::Ttftc as usize], 1);
        let p50 = Slo {
            percentile: Some(50.0),
            ..Slo::bounded([(SloMetric::Ttftc, 25.0)])
        };
        let (_, check) = point_slo(&[trial_slo(&records, &p50)], &p50);
        assert_eq!(check.percentiles_ms.get("ttftc"), Some(&Some(20.0)));
        let p90 = Slo {
            percentile: Some(90.0),
            ..p50.clone()
        };
        let (_, check) = point_slo(&[trial_slo(&records, &p90)], &p90);
        assert_eq!(check.percentiles_ms.get("ttftc"), Some(&None));
        assert!(!check.meets);
    }

    #[test]
    fn a_point_without_tools_has_no_block() {
        let t = trial_metrics(&[record(0, false, None)], &Slo::default());
        assert!(point_summary(1.0, &[t], &[], false).tool_calls.is_none());
    }
}
