//! Reasoning models: thinking and answering measured apart (definitions in the
//! parent module's doc and in `docs/reasoning.md`).
//!
//! A chunk's reasoning bytes ([`crate::drive::record::Chunk::reasoning`]) say which part of
//! the output it carried; the request's `reasoning_tokens` come from
//! `usage.completion_tokens_details` where the engine gives them, else one per
//! reasoning chunk (the rule that counts output tokens without usage).

use report::{ReasoningSummary, Stat};

use super::{TrialMetrics, NS_PER_MS};
use crate::drive::record::RequestRecord;

/// What one successful request did before and while answering.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestReasoning {
    /// The stream carried reasoning text.
    pub streamed: bool,
    /// Time to first answer token: first answer chunk − send time, ms; `None` when
    /// the request gave no answer (a stream without reasoning: its TTFT).
    pub ttfat_ms: Option<f64>,
    /// The answer's TPOT: (E2EL − TTFAT) / (answer tokens − 1), ms, for answers of
    /// more than one token.
    pub answer_tpot_ms: Option<f64>,
    /// Reasoning tokens (usage details, else reasoning chunks), at most the output.
    pub reasoning_tokens: u64,
    /// Output tokens − reasoning tokens.
    pub answer_tokens: u64,
    /// `reasoning_tokens` was counted from chunks: the server gave no details.
    pub estimated: bool,
}

impl RequestReasoning {
    /// Reasoning and no answer at all (thinking up to the token limit): its own
    /// outcome, never good.
    pub fn no_answer(&self) -> bool {
        self.streamed && self.ttfat_ms.is_none()
    }
}

/// A successful request's reasoning facts; `output_tokens` and `e2el_ms` as its
/// [`super::RequestMetrics`] has them.
pub fn request_reasoning(r: &RequestRecord, output_tokens: u64, e2el_ms: f64) -> RequestReasoning {
    let chunks = r.chunks.iter().filter(|c| c.reasoning > 0).count() as u64;
    let streamed = chunks > 0 || r.reasoning_tokens.is_some_and(|n| n > 0);
    let reasoning_tokens = r.reasoning_tokens.unwrap_or(chunks).min(output_tokens);
    let answer_tokens = output_tokens - reasoning_tokens;
    let ttfat_ms = r
        .first_answer()
        .map(|c| c.t.saturating_sub(r.sent) as f64 / NS_PER_MS);
    let answer_tpot_ms = ttfat_ms
        .filter(|_| answer_tokens > 1)
        .map(|t| (e2el_ms - t).max(0.0) / (answer_tokens - 1) as f64);
    RequestReasoning {
        streamed,
        ttfat_ms,
        answer_tpot_ms,
        reasoning_tokens,
        answer_tokens,
        estimated: chunks > 0 && r.reasoning_tokens.is_none(),
    }
}

/// A trial's reasoning figures, gathered request by request ([`TrialReasoning::add`])
/// and then summarised ([`TrialReasoning::finish`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialReasoning {
    /// Successful requests added.
    pub completed: u64,
    /// Requests that streamed reasoning.
    pub reasoning_requests: u64,
    /// Requests that streamed reasoning and no answer.
    pub no_answer: u64,
    /// Requests whose reasoning tokens were counted from chunks.
    pub estimated: u64,
    /// Reasoning tokens, summed.
    pub reasoning_tokens: u64,
    /// Answer tokens, summed.
    pub answer_tokens: u64,
    /// TTFAT of each request that answered, ms.
    pub ttfats_ms: Vec<f64>,
    /// Answer TPOT of each request with a multi-token answer, ms.
    pub answer_tpots_ms: Vec<f64>,
    /// Median and p99 TTFAT (numpy's linear rule), ms.
    pub median_ttfat_ms: Option<f64>,
    /// See `median_ttfat_ms`.
    pub p99_ttfat_ms: Option<f64>,
    /// Median and p99 answer TPOT, ms.
    pub median_answer_tpot_ms: Option<f64>,
    /// See `median_answer_tpot_ms`.
    pub p99_answer_tpot_ms: Option<f64>,
    /// Mean reasoning tokens per successful request.
    pub mean_reasoning_tokens: Option<f64>,
    /// Mean answer tokens per successful request.
    pub mean_answer_tokens: Option<f64>,
}

impl TrialReasoning {
    /// Adds one successful request.
    pub fn add(&mut self, r: &RequestReasoning) {
        self.completed += 1;
        self.reasoning_requests += u64::from(r.streamed);
        self.no_answer += u64::from(r.no_answer());
        self.estimated += u64::from(r.estimated);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(r.reasoning_tokens);
        self.answer_tokens = self.answer_tokens.saturating_add(r.answer_tokens);
        self.ttfats_ms.extend(r.ttfat_ms);
        self.answer_tpots_ms.extend(r.answer_tpot_ms);
    }

    /// Medians, p99s and means of what was added.
    pub fn finish(&mut self) {
        let median_p99 = |v: &[f64]| crate::stats::median_p99(&mut v.to_vec());
        (self.median_ttfat_ms, self.p99_ttfat_ms) = median_p99(&self.ttfats_ms);
        (self.median_answer_tpot_ms, self.p99_answer_tpot_ms) = median_p99(&self.answer_tpots_ms);
        let mean = |sum: u64| (self.completed > 0).then(|| sum as f64 / self.completed as f64);
        self.mean_reasoning_tokens = mean(self.reasoning_tokens);
        self.mean_answer_tokens = mean(self.answer_tokens);
    }
}

/// The point's [`ReasoningSummary`]; `None` when no request of its trials streamed
/// reasoning.
pub fn reasoning_summary(trials: &[TrialMetrics]) -> Option<ReasoningSummary> {
    if trials.iter().all(|t| t.reasoning.reasoning_requests == 0) {
        return None;
    }
    let stat = |f: fn(&TrialReasoning) -> Option<f64>| {
        Stat::from_trials(trials.iter().map(|t| f(&t.reasoning)))
    };
    Some(ReasoningSummary {
        median_ttfat_ms: stat(|r| r.median_ttfat_ms),
        p99_ttfat_ms: stat(|r| r.p99_ttfat_ms),
        median_answer_tpot_ms: stat(|r| r.median_answer_tpot_ms),
        p99_answer_tpot_ms: stat(|r| r.p99_answer_tpot_ms),
        mean_reasoning_tokens: stat(|r| r.mean_reasoning_tokens),
        mean_answer_tokens: stat(|r| r.mean_answer_tokens),
        reasoning_requests: trials
            .iter()
            .map(|t| t.reasoning.reasoning_requests)
            .collect(),
        no_answer: trials.iter().map(|t| t.reasoning.no_answer).collect(),
        estimated_reasoning_tokens: trials.iter().map(|t| t.reasoning.estimated).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::record::Chunk;
    use crate::measure::metrics::{point_slo, request_metrics, trial_metrics, trial_slo};

    const MS: u64 = 1_000_000;

    /// Sent at 0: `thinking` reasoning chunks then `answer` answer chunks, 10 ms
    /// apart, the first at 50 ms (the issue's stream); usage without details.
    fn rec(index: u32, thinking: u64, answer: u64) -> RequestRecord {
        let mut r = RequestRecord::new("e", 1.0, 0, index, 0);
        r.chunks = (0..thinking + answer)
            .map(|i| Chunk {
                t: (50 + 10 * i) * MS,
                len: 3,
                reasoning: if i < thinking { 3 } else { 0 },
                lag: None,
                bound: None,
            })
            .collect();
        r.completion_tokens = Some(thinking + answer);
        r.done = r.chunks.last().map(|c| c.t + MS);
        r
    }

    fn slo(ttfat: f64) -> report::Slo {
        report::Slo::bounded([(report::SloMetric::Ttfat, ttfat)])
    }

    #[test]
    fn the_issue_stream_gives_ttft_50_ttfat_250_and_20_reasoning_tokens() {
        let records: Vec<RequestRecord> = (0..3).map(|i| rec(i, 20, 10)).collect();
        let m = request_metrics(&records[0], &slo(300.0)).unwrap();
        assert_eq!(m.ttft_ms, Some(50.0));
        assert_eq!(m.reasoning.ttfat_ms, Some(250.0));
        assert_eq!(
            (m.reasoning.reasoning_tokens, m.reasoning.answer_tokens),
            (20, 10)
        );
        // The answer: 9 gaps of 10 ms over 9 tokens after its first.
        assert_eq!(m.reasoning.answer_tpot_ms, Some(10.0));
        assert!(m.reasoning.estimated && m.good);
        assert!(!request_metrics(&records[0], &slo(200.0)).unwrap().good);
        let t = trial_metrics(&records, &slo(300.0));
        assert_eq!(t.median_ttft_ms, Some(50.0));
        assert_eq!(t.reasoning.median_ttfat_ms, Some(250.0));
        let s = reasoning_summary(&[t]).unwrap();
        assert_eq!(s.median_ttfat_ms.median, Some(250.0));
        assert_eq!(s.mean_reasoning_tokens.median, Some(20.0));
        assert_eq!(s.mean_answer_tokens.median, Some(10.0));
        assert_eq!((s.no_answer, s.estimated_reasoning_tokens), (vec![0], 3));
    }

    #[test]
    fn usage_details_win_and_are_bounded_by_the_output() {
        let mut r = rec(0, 20, 10);
        r.reasoning_tokens = Some(25);
        let m = request_metrics(&r, &report::Slo::default()).unwrap();
        assert_eq!(
            (m.reasoning.reasoning_tokens, m.reasoning.answer_tokens),
            (25, 5)
        );
        assert!(!m.reasoning.estimated);
        r.reasoning_tokens = Some(u64::MAX);
        let m = request_metrics(&r, &report::Slo::default()).unwrap();
        assert_eq!(
            (m.reasoning.reasoning_tokens, m.reasoning.answer_tokens),
            (30, 0)
        );
    }

    #[test]
    fn a_model_that_does_not_reason_has_ttfat_equal_to_ttft_and_no_summary() {
        let r = rec(0, 0, 10);
        let m = request_metrics(&r, &slo(60.0)).unwrap();
        assert_eq!(m.reasoning.ttfat_ms, m.ttft_ms);
        assert!(m.good && !m.reasoning.streamed);
        assert_eq!(reasoning_summary(&[trial_metrics(&[r], &slo(60.0))]), None);
    }

    #[test]
    fn no_answer_is_its_own_outcome_never_good_and_infinitely_slow() {
        let records = vec![rec(0, 20, 0), rec(1, 20, 10), rec(2, 20, 10)];
        let any = report::Slo::bounded([(report::SloMetric::Ttft, 1000.0)]);
        let m = request_metrics(&records[0], &any).unwrap();
        assert!(m.reasoning.no_answer() && !m.good);
        assert_eq!(m.reasoning.ttfat_ms, None);
        let t = trial_metrics(&records, &any);
        assert_eq!((t.completed, t.good, t.reasoning.no_answer), (3, 2, 1));
        let ts = trial_slo(&records, &slo(300.0));
        assert_eq!((ts.misses["no_answer"], ts.misses["ttfat"]), (1, 1));
        // Percentile form: at p50 the two answers decide, at p90 the no-answer does.
        let form = |p: f64| report::Slo {
            percentile: Some(p),
            ..slo(300.0)
        };
        let (_, check) = point_slo(std::slice::from_ref(&ts), &form(50.0));
        assert!(check.meets, "{check:?}");
        let (_, check) = point_slo(&[ts], &form(90.0));
        assert!(!check.meets);
        assert_eq!(check.percentiles_ms["ttfat"], None);
    }
}
