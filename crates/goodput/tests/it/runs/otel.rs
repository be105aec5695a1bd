//! OpenTelemetry export of every measured request (docs/otel.md): `goodput run`
//! with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a receiver in the test, over
//! protobuf and JSON; each span checked against the run's own records, its
//! request id against the header the server received; an endpoint that is not
//! there costs a notice, not the run.

use std::collections::BTreeSet;
use std::process::Output;

use crate::common;

use common::cli::{goodput_run, succeeded, Scratch};
use common::otlp::{flag, float, int, text};
use goodput::drive::record::{read_records, RequestRecord};
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode, Span};

const SIM: &str = r#"
name = "otel-sim"
[slo]
ttft_ms = 500
[load]
points = [2]
requests_per_trial = 6
trials = 2
warmup_requests = 1
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 8
[engines.fixed]
kind = "sim"
preset = "fixed"
"#;

/// Runs `profile` in `dir` with the OTLP variables `vars`, off the test's runtime
/// (the receiver runs on it).
async fn run_with(dir: &Scratch, profile: &str, vars: &[(&str, String)]) -> Output {
    let mut cmd = goodput_run(&dir.write("p.toml", profile), &dir.path("r.json"));
    cmd.args(["--quiet", "--no-html"])
        .env("GOODPUT_TELEMETRY", "none");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    tokio::task::spawn_blocking(move || cmd.output().expect("goodput runs"))
        .await
        .expect("the run's thread")
}

fn records(dir: &Scratch) -> Vec<RequestRecord> {
    read_records(&dir.path("r.requests.jsonl")).expect("the run's records")
}

/// The span whose `goodput.request_id` is `id`.
fn span_of<'a>(spans: &'a [(String, Span)], id: &str) -> &'a Span {
    let found: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| text(&s.attributes, "goodput.request_id").as_deref() == Some(id))
        .collect();
    assert_eq!(found.len(), 1, "one span for request {id}");
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_measured_request_is_one_span_carrying_its_records_figures() {
    let rx = common::otlp::start().await;
    let dir = Scratch::new();
    let o = run_with(
        &dir,
        SIM,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url.clone())],
    )
    .await;
    succeeded(&o, "goodput run with OTLP export");
    let recs = records(&dir);
    assert_eq!(recs.len(), 12, "2 trials of 6 measured requests");
    let spans = rx.spans();
    assert_eq!(
        spans.len(),
        recs.len(),
        "one span per measured request, warm-up excluded"
    );
    assert!(rx
        .exports()
        .iter()
        .all(|e| e.content_type == "application/x-protobuf"));
    let ids: BTreeSet<&str> = recs
        .iter()
        .filter_map(|r| r.request_id.as_deref())
        .collect();
    assert_eq!(ids.len(), recs.len(), "every request has its own id");
    let model = dir.report().environment.expect("environment").engines["fixed"]
        .model
        .clone()
        .expect("the served model");
    let started: Vec<f64> = dir.report().load["fixed"].points[0]
        .trials
        .iter()
        .map(|t| t.started_unix_s.expect("the trial's start"))
        .collect();
    for r in &recs {
        let s = span_of(&spans, r.request_id.as_deref().unwrap_or(""));
        let a = &s.attributes;
        assert!(r.ok(), "{r:?}");
        assert_eq!(spans[0].0, "goodput", "OTEL_SERVICE_NAME's default");
        assert_eq!(s.kind, SpanKind::Client as i32);
        assert_eq!(s.name, format!("text_completion {model}"));
        assert_eq!(
            s.status.as_ref().map(|st| st.code),
            Some(StatusCode::Ok as i32)
        );
        // The record's own figures, by formulas written here.
        let ttft = (r.chunks[0].t - r.sent) as f64 / 1e6;
        let last = r.chunks.last().unwrap().t;
        let e2el = (last - r.sent) as f64 / 1e6;
        let n = r.completion_tokens.unwrap();
        let close = |k: &str, want: f64| {
            let got = float(a, k).unwrap_or_else(|| panic!("{k} missing"));
            assert!((got - want).abs() < 1e-9, "{k}: {got} vs {want}");
        };
        close("goodput.ttft_ms", ttft);
        close("goodput.e2el_ms", e2el);
        close("goodput.tpot_ms", (e2el - ttft) / (n - 1) as f64);
        close("goodput.load", 2.0);
        assert_eq!(flag(a, "goodput.good"), Some(ttft <= 500.0));
        assert_eq!(int(a, "goodput.trial"), Some(i64::from(r.trial)));
        assert_eq!(text(a, "goodput.engine").as_deref(), Some("fixed"));
        assert_eq!(
            text(a, "gen_ai.operation.name").as_deref(),
            Some("text_completion")
        );
        assert_eq!(text(a, "gen_ai.request.model"), Some(model.clone()));
        assert_eq!(int(a, "gen_ai.usage.output_tokens"), Some(n as i64));
        assert_eq!(
            int(a, "gen_ai.usage.input_tokens"),
            r.prompt_tokens.map(|p| p as i64)
        );
        assert_eq!(int(a, "gen_ai.request.max_tokens"), Some(8));
        assert_eq!(text(a, "server.address").as_deref(), Some("127.0.0.1"));
        assert!(int(a, "server.port").is_some_and(|p| p > 0));
        assert_eq!(text(a, "goodput.error"), None);
        // The span lasts from the send to the end, on the wall clock of its trial.
        assert_eq!(
            s.end_time_unix_nano - s.start_time_unix_nano,
            r.done.unwrap() - r.sent
        );
        let trial_start_ns = started[r.trial as usize] * 1e9;
        let from_start = s.start_time_unix_nano as f64 - trial_start_ns;
        assert!(
            (from_start - r.sent as f64).abs() < 1e3,
            "{from_start} vs {}",
            r.sent
        );
    }
    let otel = dir.report().run.unwrap().otel.expect("run.otel");
    assert_eq!(
        (otel.spans, otel.exported, otel.dropped, otel.failed),
        (12, 12, 0, 0)
    );
    assert_eq!(otel.endpoint, format!("{}/v1/traces", rx.url));
    assert_eq!(otel.protocol, report::OtlpProtocol::HttpProtobuf);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_export_carries_the_request_id_the_server_received_and_the_headers_asked() {
    let rx = common::otlp::start().await;
    let server = common::recording::start().await;
    let dir = Scratch::new();
    let profile = format!(
        "name = \"otel-url\"\n[slo]\nttft_ms = 1000\n[load]\npoints = [2]\n\
         requests_per_trial = 5\ntrials = 1\nwarmup_requests = 0\n[workload]\n\
         input_tokens = 8\noutput_tokens = 4\n[engines.rec]\nurl = \"{}\"\nmodel = \"m\"\n\
         api = \"chat\"\n",
        server.url
    );
    let vars = [
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{}/v1/traces", rx.url),
        ),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".into()),
        ("OTEL_SERVICE_NAME", "bench-x".into()),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "x-collector-key=k3y-s3cr3t".into(),
        ),
    ];
    let o = run_with(&dir, &profile, &vars).await;
    succeeded(&o, "goodput run with OTLP/JSON export");
    let exports = rx.exports();
    assert!(!exports.is_empty());
    for e in &exports {
        assert!(
            e.content_type.starts_with("application/json"),
            "{}",
            e.content_type
        );
        assert_eq!(e.headers["x-collector-key"], "k3y-s3cr3t");
    }
    let spans = rx.spans();
    assert_eq!(spans.len(), 5);
    assert!(spans
        .iter()
        .all(|(service, s)| service == "bench-x" && s.name == "chat m"));
    let received: BTreeSet<String> = server
        .bodies()
        .into_iter()
        .map(|r| r.request_id.expect("each request carried x-request-id"))
        .collect();
    let recorded: BTreeSet<String> = records(&dir)
        .into_iter()
        .map(|r| r.request_id.expect("each record keeps its id"))
        .collect();
    let exported: BTreeSet<String> = spans
        .iter()
        .map(|(_, s)| text(&s.attributes, "goodput.request_id").expect("the id attribute"))
        .collect();
    assert_eq!(received.len(), 5);
    assert_eq!(received, recorded);
    assert_eq!(received, exported);
    // The collector's key is a secret: no output holds it.
    let report = std::fs::read_to_string(dir.path("r.json")).unwrap();
    assert!(!report.contains("k3y-s3cr3t"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_is_not_there_is_a_notice_and_the_run_still_succeeds() {
    let port = common::server::closed_port();
    let dir = Scratch::new();
    let vars = [(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        format!("http://127.0.0.1:{port}"),
    )];
    let o = run_with(&dir, SIM, &vars).await;
    succeeded(&o, "goodput run exporting to a closed port");
    let info = dir.report().run.unwrap();
    let otel = info.otel.clone().expect("run.otel");
    assert_eq!((otel.spans, otel.exported, otel.failed), (12, 0, 12));
    let notice = info
        .notices
        .iter()
        .find(|n| n.kind == report::NoticeKind::Otel)
        .expect("an otel notice");
    assert!(
        notice.text.contains("12 of 12 spans not exported"),
        "{}",
        notice.text
    );
    // A protocol goodput does not speak is refused the same way.
    let dir = Scratch::new();
    let vars = [
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:1".to_string(),
        ),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".into()),
    ];
    let o = run_with(&dir, SIM, &vars).await;
    succeeded(&o, "goodput run with an OTLP protocol it does not speak");
    let info = dir.report().run.unwrap();
    assert!(info.otel.is_none());
    assert!(info
        .notices
        .iter()
        .any(|n| n.kind == report::NoticeKind::Otel && n.text.contains("`grpc`")));
}
