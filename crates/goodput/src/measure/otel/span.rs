//! One finished request as a span: built from its record after the trial, never
//! while it is timed, with the request's own send and end times, the GenAI
//! semantic conventions' attributes where they fit, and goodput's own
//! (`goodput.*`, the metrics from [`crate::measure::metrics`], the one place
//! they are derived).

use std::borrow::Cow;
use std::time::{Duration, UNIX_EPOCH};

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SpanData};

use crate::drive::record::RequestRecord;
use crate::measure::metrics::request_metrics;
use report::Slo;

/// Characters of a failure's detail kept in the span's status.
const DETAIL_CHARS: usize = 200;

/// What every span of a trial shares.
pub struct TrialSpans<'a> {
    /// Unix time (seconds) when the trial's clock started: record times are
    /// nanoseconds after it.
    pub started_unix_s: f64,
    /// The engine's environment as the report has it (model, URL, API).
    pub engine: Option<&'a report::EngineEnv>,
    /// The SLO each request is judged by (`goodput.good`).
    pub slo: &'a Slo,
}

/// The instrumentation scope of goodput's spans.
pub fn scope() -> InstrumentationScope {
    InstrumentationScope::builder("goodput")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// The span of `rec`; `None` when the trial's start is not a time (no span can
/// be placed).
pub fn request_span(
    rec: &RequestRecord,
    trial: &TrialSpans<'_>,
    ids: &RandomIdGenerator,
    scope: &InstrumentationScope,
) -> Option<SpanData> {
    let start = Duration::try_from_secs_f64(trial.started_unix_s).ok()?;
    let at = |ns: u64| UNIX_EPOCH + start + Duration::from_nanos(ns);
    let operation = operation(trial.engine);
    let model = trial.engine.and_then(|e| e.model.as_deref());
    let name = match model {
        Some(m) => format!("{operation} {m}"),
        None => operation.to_string(),
    };
    let status = match rec.error_label() {
        None => Status::Ok,
        Some(label) => {
            let detail = rec.error_detail.as_deref().unwrap_or("");
            let detail = crate::redact::cut_chars(&crate::redact::text(detail), DETAIL_CHARS);
            Status::error(if detail.is_empty() {
                label
            } else {
                format!("{label}: {detail}")
            })
        }
    };
    Some(SpanData {
        span_context: SpanContext::new(
            ids.new_trace_id(),
            ids.new_span_id(),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ),
        parent_span_id: SpanId::INVALID,
        parent_span_is_remote: false,
        span_kind: SpanKind::Client,
        name: Cow::Owned(name),
        start_time: at(rec.sent),
        end_time: at(rec.done.unwrap_or(rec.sent).max(rec.sent)),
        attributes: attributes(rec, trial, operation, model),
        dropped_attributes_count: 0,
        events: Default::default(),
        links: Default::default(),
        status,
        instrumentation_scope: scope.clone(),
    })
}

/// The GenAI operation: `chat` for the chat API, `text_completion` for completions.
fn operation(engine: Option<&report::EngineEnv>) -> &'static str {
    match engine.and_then(|e| e.api.as_deref()) {
        Some("chat") => "chat",
        _ => "text_completion",
    }
}

fn attributes(
    rec: &RequestRecord,
    trial: &TrialSpans<'_>,
    operation: &'static str,
    model: Option<&str>,
) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("gen_ai.operation.name", operation),
        KeyValue::new("goodput.engine", rec.engine.clone()),
        KeyValue::new("goodput.load", rec.x),
        KeyValue::new("goodput.trial", i64::from(rec.trial)),
        KeyValue::new("goodput.index", i64::from(rec.index)),
    ];
    let mut put = |k: &'static str, v: Option<Value>| {
        if let Some(v) = v {
            a.push(KeyValue::new(k, v));
        }
    };
    let int = |v: Option<u64>| v.map(|n| Value::I64(i64::try_from(n).unwrap_or(i64::MAX)));
    put("gen_ai.request.model", model.map(|m| m.to_string().into()));
    put(
        "gen_ai.request.max_tokens",
        int(rec.requested_tokens.map(u64::from)),
    );
    put("gen_ai.usage.input_tokens", int(rec.prompt_tokens));
    put("gen_ai.usage.output_tokens", int(rec.completion_tokens));
    put(
        "gen_ai.response.finish_reasons",
        rec.finish_reason
            .as_ref()
            .map(|r| Value::Array(Array::String(vec![StringValue::from(r.clone())]))),
    );
    let server = trial
        .engine
        .and_then(|e| e.url.as_deref())
        .and_then(|u| reqwest::Url::parse(u).ok());
    put(
        "server.address",
        server
            .as_ref()
            .and_then(|u| u.host_str().map(|h| h.to_string().into())),
    );
    put(
        "server.port",
        int(server
            .and_then(|u| u.port_or_known_default())
            .map(u64::from)),
    );
    put("http.response.status_code", int(rec.status.map(u64::from)));
    put(
        "goodput.attempt",
        int((rec.attempt > 0).then_some(u64::from(rec.attempt))),
    );
    if let Some(id) = &rec.request_id {
        put("goodput.request_id", Some(id.clone().into()));
        put(
            "http.request.header.x-request-id",
            Some(Value::Array(Array::String(vec![StringValue::from(
                id.clone(),
            )]))),
        );
    }
    let error = rec.error_label();
    put("error.type", error.clone().map(Value::from));
    put("goodput.error", error.map(Value::from));
    let m = request_metrics(rec, trial.slo);
    if let Some(m) = &m {
        put("goodput.ttft_ms", m.ttft_ms.map(Value::from));
        put("goodput.e2el_ms", Some(m.e2el_ms.into()));
        put("goodput.tpot_ms", m.tpot_ms.map(Value::from));
    }
    // A failed request is not good.
    put("goodput.good", Some(m.is_some_and(|m| m.good).into()));
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::record::{Chunk, ErrorKind};
    use std::time::SystemTime;

    fn find<'a>(s: &'a SpanData, k: &str) -> Option<&'a Value> {
        s.attributes
            .iter()
            .find(|kv| kv.key.as_str() == k)
            .map(|kv| &kv.value)
    }

    fn engine() -> report::EngineEnv {
        report::EngineEnv {
            kind: "url".into(),
            url: Some("http://10.0.0.7:8000".into()),
            api: Some("chat".into()),
            model: Some("m7".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_good_request_becomes_a_client_span_at_its_own_times_with_its_metrics() {
        let mut r = RequestRecord::new("e", 4.0, 1, 9, 1_000_000);
        r.sent = 2_000_000;
        r.chunks = [12_000_000u64, 14_000_000, 16_000_000]
            .map(|t| Chunk {
                t,
                len: 1,
                reasoning: 0,
                lag: None,
                bound: None,
            })
            .to_vec();
        r.done = Some(17_000_000);
        r.prompt_tokens = Some(32);
        r.completion_tokens = Some(3);
        r.requested_tokens = Some(3);
        r.status = Some(200);
        r.request_id = Some("goodput-00000000000000ab-9".into());
        let mut slo = Slo::default();
        slo.bounds.set(report::SloMetric::Ttft, Some(50.0));
        let e = engine();
        let t = TrialSpans {
            started_unix_s: 1_700_000_000.5,
            engine: Some(&e),
            slo: &slo,
        };
        let s = request_span(&r, &t, &RandomIdGenerator::default(), &scope()).unwrap();
        assert_eq!(s.name, "chat m7");
        assert_eq!(s.span_kind, SpanKind::Client);
        assert_eq!(s.status, Status::Ok);
        let unix = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_nanos();
        assert_eq!(unix(s.start_time), 1_700_000_000_502_000_000);
        assert_eq!(unix(s.end_time), 1_700_000_000_517_000_000);
        assert_eq!(find(&s, "goodput.ttft_ms"), Some(&Value::F64(10.0)));
        assert_eq!(find(&s, "goodput.tpot_ms"), Some(&Value::F64(2.0)));
        assert_eq!(find(&s, "goodput.e2el_ms"), Some(&Value::F64(14.0)));
        assert_eq!(find(&s, "goodput.good"), Some(&Value::Bool(true)));
        assert_eq!(find(&s, "goodput.load"), Some(&Value::F64(4.0)));
        assert_eq!(find(&s, "goodput.trial"), Some(&Value::I64(1)));
        assert_eq!(find(&s, "gen_ai.request.model"), Some(&Value::from("m7")));
        assert_eq!(find(&s, "gen_ai.usage.input_tokens"), Some(&Value::I64(32)));
        assert_eq!(find(&s, "gen_ai.usage.output_tokens"), Some(&Value::I64(3)));
        assert_eq!(find(&s, "gen_ai.request.max_tokens"), Some(&Value::I64(3)));
        assert_eq!(find(&s, "server.address"), Some(&Value::from("10.0.0.7")));
        assert_eq!(find(&s, "server.port"), Some(&Value::I64(8000)));
        assert_eq!(
            find(&s, "goodput.request_id"),
            Some(&Value::from("goodput-00000000000000ab-9"))
        );
        assert_eq!(find(&s, "goodput.error"), None);
    }

    #[test]
    fn a_failed_request_has_an_error_status_its_kind_and_is_not_good() {
        let mut r = RequestRecord::new("e", 1.0, 0, 0, 0);
        r.done = Some(5_000_000);
        r.status = Some(429);
        r.error = Some(ErrorKind::Http);
        r.error_detail = Some("HTTP 429: slow down".into());
        let slo = Slo::default();
        let t = TrialSpans {
            started_unix_s: 1.0,
            engine: None,
            slo: &slo,
        };
        let s = request_span(&r, &t, &RandomIdGenerator::default(), &scope()).unwrap();
        assert_eq!(s.name, "text_completion");
        assert_eq!(s.status, Status::error("http_429: HTTP 429: slow down"));
        assert_eq!(find(&s, "goodput.error"), Some(&Value::from("http_429")));
        assert_eq!(find(&s, "error.type"), Some(&Value::from("http_429")));
        assert_eq!(find(&s, "goodput.good"), Some(&Value::Bool(false)));
        assert_eq!(find(&s, "goodput.ttft_ms"), None);
        let bad = TrialSpans {
            started_unix_s: f64::NAN,
            engine: None,
            slo: &slo,
        };
        assert!(request_span(&r, &bad, &RandomIdGenerator::default(), &scope()).is_none());
    }
}
