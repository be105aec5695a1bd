//! Embeddings requests (`api = "embeddings"`): answers read whole, so a request
//! has an E2EL and no TTFT, TPOT or output tokens; a trial has inputs and input
//! tokens per second (definitions in the parent module's doc and in
//! docs/report.md).
//!
//! Read off the record's [`crate::drive::record::Embedded`] (inputs sent, headers
//! time, vectors returned and their length) and its `done`, `sent` and
//! `usage.prompt_tokens`.

use report::{EmbeddingsSummary, Stat};

use super::{RequestMetrics, RequestReasoning, RequestToolCalls, TrialMetrics, NS_PER_MS};
use crate::drive::record::RequestRecord;

/// The metrics of a successful embeddings request of end-to-end latency
/// `e2el_ms`: no TTFT, TPOT or output tokens (judged by the caller).
pub(super) fn request_metrics(e2el_ms: f64) -> RequestMetrics {
    RequestMetrics {
        ttft_ms: None,
        e2el_ms,
        tpot_ms: None,
        output_tokens: 0,
        reasoning: RequestReasoning::default(),
        tool_calls: RequestToolCalls::default(),
        good: false,
    }
}

/// A trial's embeddings figures, gathered request by request
/// ([`TrialEmbeddings::add`]) and then summarised ([`TrialEmbeddings::finish`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialEmbeddings {
    /// Embeddings requests among the trial's records, failed ones included.
    pub requests: u64,
    /// Inputs of the successful ones.
    pub inputs: u64,
    /// Their `usage.prompt_tokens`, over those that gave it.
    pub input_tokens: u64,
    /// Inputs of each successful request (for the variance of inputs/s).
    pub inputs_each: Vec<f64>,
    /// Response headers − send time of each successful request, ms.
    pub headers_ms: Vec<f64>,
    /// Inputs a request carried (the first embeddings request's).
    pub inputs_per_request: Option<u32>,
    /// The vectors' length, from the first successful request that gave one.
    pub dimension: Option<u32>,
    /// Inputs of successful requests / trial duration.
    pub input_throughput: Option<f64>,
    /// Prompt tokens of successful requests / trial duration.
    pub input_token_throughput: Option<f64>,
    /// Median of `headers_ms`.
    pub median_headers_ms: Option<f64>,
}

impl TrialEmbeddings {
    /// Adds a successful request (nothing when it is not an embeddings request).
    pub fn add(&mut self, r: &RequestRecord) {
        let Some(e) = &r.embeddings else { return };
        self.inputs = self.inputs.saturating_add(u64::from(e.inputs));
        self.inputs_each.push(f64::from(e.inputs));
        self.input_tokens = self
            .input_tokens
            .saturating_add(r.prompt_tokens.unwrap_or(0));
        if let Some(h) = e.headers {
            self.headers_ms
                .push(h.saturating_sub(r.sent) as f64 / NS_PER_MS);
        }
        self.dimension = self.dimension.or(e.dimension);
    }

    /// Counts the trial's embeddings requests and sets the rates over its
    /// duration, `duration_s`.
    pub fn finish(&mut self, records: &[RequestRecord], duration_s: Option<f64>) {
        let mut asked = records.iter().filter_map(|r| r.embeddings.as_ref());
        self.inputs_per_request = asked.clone().next().map(|e| e.inputs);
        self.requests = asked.by_ref().count() as u64;
        if self.requests == 0 {
            return;
        }
        if let Some(d) = duration_s.filter(|d| *d > 0.0) {
            self.input_throughput = Some(self.inputs as f64 / d);
            self.input_token_throughput = Some(self.input_tokens as f64 / d);
        }
        let mut h = self.headers_ms.clone();
        self.median_headers_ms = crate::stats::median_p99(&mut h).0;
    }

    /// Whether the trial's requests were embeddings requests.
    pub fn is_embeddings(&self) -> bool {
        self.requests > 0
    }

    /// The variance of inputs/s over a trial of `d` seconds: that of the sum of
    /// the requests' inputs, `n · s²(inputs)`, over `d²` (0 when every request
    /// carried the same number).
    pub fn input_rate_var(&self, d: Option<f64>) -> Option<f64> {
        let d = d.filter(|d| *d > 0.0)?;
        let v = &self.inputs_each;
        if v.len() < 2 {
            return None;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let s2 = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some(n * s2 / (d * d))
    }
}

/// The point's embeddings summary; `None` when its trials sent no embeddings
/// request.
pub fn embeddings_summary(trials: &[TrialMetrics]) -> Option<EmbeddingsSummary> {
    let first = trials.iter().find(|t| t.embeddings.is_embeddings())?;
    let stat = |f: fn(&TrialEmbeddings) -> Option<f64>| {
        Stat::from_trials(trials.iter().map(|t| f(&t.embeddings)))
    };
    Some(EmbeddingsSummary {
        inputs_per_request: first.embeddings.inputs_per_request.unwrap_or(0),
        input_throughput: stat(|t| t.input_throughput),
        input_token_throughput: stat(|t| t.input_token_throughput),
        median_headers_ms: stat(|t| t.median_headers_ms),
        dimension: trials.iter().find_map(|t| t.embeddings.dimension),
    })
}

#[cfg(test)]
mod tests {
    use report::{Slo, SloMetric};

    use super::super::{point_summary, request_metrics, trial_metrics};
    use crate::drive::record::{Embedded, ErrorKind, RequestRecord};

    const MS: u64 = 1_000_000;

    /// An embeddings request sent at `sent` ms, headers at `+h`, whole at `+e`.
    fn rec(index: u32, sent: u64, h: u64, e: u64) -> RequestRecord {
        let mut r = RequestRecord::new("e", 1.0, 0, index, sent * MS);
        r.embeddings = Some(Box::new(Embedded {
            inputs: 4,
            headers: Some((sent + h) * MS),
            returned: Some(4),
            dimension: Some(8),
            body_bytes: Some(100),
        }));
        r.prompt_tokens = Some(40);
        r.status = Some(200);
        r.done = Some((sent + e) * MS);
        r
    }

    fn slo(e2el: f64) -> Slo {
        let mut s = Slo::default();
        s.bounds.set(SloMetric::E2el, Some(e2el));
        s
    }

    #[test]
    fn an_embeddings_request_has_its_latency_and_no_streamed_metric() {
        let m = request_metrics(&rec(0, 10, 25, 30), &slo(31.0)).unwrap();
        assert_eq!((m.ttft_ms, m.tpot_ms, m.e2el_ms), (None, None, 30.0));
        assert_eq!(m.output_tokens, 0);
        assert!(m.good);
        assert_eq!(m.value(SloMetric::E2el), Some(30.0));
        assert_eq!(m.value(SloMetric::Ttft), None);
        assert!(
            !request_metrics(&rec(0, 10, 25, 30), &slo(29.0))
                .unwrap()
                .good
        );
    }

    #[test]
    fn a_trial_has_inputs_per_second_and_no_tokens_out() {
        // Three requests one after another, 30 ms each: 90 ms, 12 inputs.
        let mut records: Vec<_> = (0..3).map(|i| rec(i, u64::from(i) * 30, 20, 30)).collect();
        let mut failed = rec(3, 0, 20, 30);
        failed.error = Some(ErrorKind::InputsMismatch);
        records.push(failed);
        let t = trial_metrics(&records, &slo(100.0));
        assert_eq!((t.completed, t.failed, t.good), (3, 1, 3));
        assert_eq!(t.errors.get("inputs_mismatch"), Some(&1));
        assert!(t.median_ttft_ms.is_none() && t.median_tpot_ms.is_none());
        assert!(t.output_throughput.is_none() && t.median_itl_ms.is_none());
        assert_eq!(t.median_e2el_ms, Some(30.0));
        let d = 0.09;
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-6);
        assert!(close(t.embeddings.input_throughput, 12.0 / d));
        assert!(close(t.embeddings.input_token_throughput, 120.0 / d));
        assert!(close(t.request_throughput, 3.0 / d));
        assert_eq!(t.embeddings.median_headers_ms, Some(20.0));
        assert_eq!(t.embeddings.requests, 4);
        assert_eq!(t.embeddings.input_rate_var(Some(d)), Some(0.0));
        assert!(t.figures.contains_key("input_throughput"));
        assert!(t.figures.contains_key("median_e2el_ms"));
        assert!(!t.figures.contains_key("median_ttft_ms"));
        let p = point_summary(1.0, &[t], &[0.5], false);
        assert_eq!(p.median_ttft_ms.n, 0);
        assert_eq!(p.output_throughput.n, 0);
        assert!(p.ttft_quantiles_ms.is_empty());
        let e = p.embeddings.unwrap();
        assert_eq!((e.inputs_per_request, e.dimension), (4, Some(8)));
        assert!(close(e.input_throughput.median, 12.0 / d));
    }

    #[test]
    fn a_generation_trial_has_no_embeddings_summary() {
        let t = trial_metrics(&[], &Slo::default());
        assert!(!t.embeddings.is_embeddings());
        assert!(point_summary(1.0, &[t], &[0.5], false).embeddings.is_none());
    }
}
