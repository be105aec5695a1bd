//! Reasoning models, measured apart (#29) and counted at all (#24, items 1 and 4).
//!
//! A thinking server on 127.0.0.1 port 0 streams, after the role chunk, 20
//! reasoning chunks then the answer's chunks, 10 ms apart, the first after 50 ms
//! (the "Done when" stream). The recorded-shape streams in
//! `tests/fixtures/vllm/reasoning-*` follow vLLM's reasoning-parser output: the
//! chunk layout of the stream recorded from vLLM 0.32 beside them, with the
//! thinking under `delta.reasoning` (vLLM 0.19.1 and later, `DeltaMessage` in
//! `vllm/entrypoints/openai/engine/protocol.py`) or `delta.reasoning_content`
//! (earlier vLLM, and SGLang); vLLM sends no chunk for the `</think>` token and
//! no `completion_tokens_details`. They were written to that shape, not captured.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use common::cli::{goodput_output, goodput_run, succeeded, Scratch};
use common::request::send;
use common::script::*;
use futures_util::StreamExt;
use goodput::drive::client::{http_client, Limits, SseLimits, Target};
use goodput::drive::record::RequestRecord;
use goodput::measure::metrics::{request_metrics, RequestMetrics};
use serde_json::{json, Value};

fn limits() -> Limits {
    Limits {
        request_timeout: Duration::from_secs(20),
        stall_timeout: Some(Duration::from_secs(5)),
        sse: SseLimits::default(),
    }
}

fn metrics(rec: &RequestRecord) -> RequestMetrics {
    let slo = report::Slo::bounded([(report::SloMetric::Ttft, 10_000.0)]);
    request_metrics(rec, &slo).unwrap_or_else(|| panic!("a successful request: {rec:?}"))
}

/// A chat chunk whose delta carries `text` under `field`.
fn delta(field: &str, text: &str) -> String {
    let v = json!({"id": "c", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {field: text}, "finish_reason": null}]});
    format!("data: {v}\n\n")
}

/// The role chunk at once, `thinking` chunks of reasoning under `field`, then
/// `answer` answer chunks, 10 ms apart, the first after 50 ms; usage (with the
/// reasoning tokens in its details when `details`), `[DONE]`.
fn thinking_events(
    field: &str,
    thinking: usize,
    answer: usize,
    details: bool,
) -> Vec<(u64, String)> {
    let mut out = vec![(0, delta("role", "assistant"))];
    for i in 0..thinking + answer {
        let gap = if i == 0 { 50 } else { 10 };
        let chunk = if i < thinking {
            delta(field, " hm")
        } else {
            delta("content", " ok")
        };
        out.push((gap, chunk));
    }
    let n = thinking + answer;
    let mut usage = json!({"prompt_tokens": 8, "completion_tokens": n, "total_tokens": n + 8});
    if details {
        usage["completion_tokens_details"] = json!({"reasoning_tokens": thinking});
    }
    out.push((
        0,
        format!("data: {}\n\n{DONE}", json!({"choices": [], "usage": usage})),
    ));
    out
}

fn script(events: Vec<(u64, String)>) -> Vec<Step> {
    events.into_iter().map(|(ms, s)| step(ms, s)).collect()
}

async fn replay(steps: Vec<Step>) -> RequestRecord {
    let server = serve(sse_head(), steps, true).await;
    let client = http_client(2).unwrap();
    let target = Target::new(&server.url, "/v1/chat/completions", None);
    send(&client, &target, b"{}", Some(64), &limits()).await
}

/// #24.1: vLLM's `delta.reasoning` (and the older `reasoning_content`) is text:
/// TTFT is the first reasoning chunk (50 ms), not the first answer chunk (250 ms),
/// and TPOT spreads every token over the whole stream.
#[tokio::test]
async fn reasoning_chunks_count_under_either_field_name() {
    for field in ["reasoning", "reasoning_content"] {
        let rec = replay(script(thinking_events(field, 20, 10, false))).await;
        assert_eq!(rec.error, None, "{field}: {rec:?}");
        assert_eq!(rec.chunks.len(), 30, "{field}: every chunk counted");
        assert!(rec.chunks[..20]
            .iter()
            .all(|c| c.reasoning == c.len && c.len > 0));
        assert!(rec.chunks[20..].iter().all(|c| c.reasoning == 0));
        assert_eq!(rec.first_reasoning(), rec.chunks.first());
        assert_eq!(rec.first_answer(), rec.chunks.get(20));
        let m = metrics(&rec);
        assert!(
            m.ttft_ms.unwrap() >= 45.0 && m.ttft_ms.unwrap() < 200.0,
            "{field}: TTFT {}",
            m.ttft_ms.unwrap()
        );
        let ttfat = m.reasoning.ttfat_ms.unwrap();
        assert!(
            ttfat >= m.ttft_ms.unwrap() + 190.0,
            "{field}: TTFAT {ttfat}, TTFT {}",
            m.ttft_ms.unwrap()
        );
        // 29 gaps of 10 ms between the first and last token.
        let tpot = m.tpot_ms.unwrap();
        assert!(
            tpot >= 9.0,
            "{field}: TPOT {tpot} counts the reasoning tokens' time"
        );
        assert_eq!(
            (m.reasoning.reasoning_tokens, m.reasoning.answer_tokens),
            (20, 10)
        );
        assert!(
            m.reasoning.estimated,
            "no usage details: counted from chunks"
        );
    }
    // With usage details, they are the count.
    let rec = replay(script(thinking_events("reasoning", 20, 10, true))).await;
    assert_eq!(rec.reasoning_tokens, Some(20));
    assert!(!metrics(&rec).reasoning.estimated);
}

/// #24.4: a UTF-8 byte order mark before the first event no longer drops it.
#[tokio::test]
async fn a_byte_order_mark_before_the_first_event_keeps_it() {
    let first = format!("\u{FEFF}{}", text_chunk("a"));
    let steps = vec![
        step(50, first),
        step(50, text_chunk("bb")),
        step(10, text_chunk("ccc")),
        step(0, format!("{}{DONE}", usage_chunk(3, 3))),
    ];
    let server = serve(sse_head(), steps, true).await;
    let client = http_client(2).unwrap();
    let target = Target::new(&server.url, "/v1/completions", None);
    let rec = send(&client, &target, b"{}", Some(3), &limits()).await;
    assert_eq!(rec.error, None, "{rec:?}");
    let lens: Vec<u32> = rec.chunks.iter().map(|c| c.len).collect();
    assert_eq!(lens, [1, 2, 3], "the first event is kept");
    assert!(
        metrics(&rec).ttft_ms.unwrap() < 95.0,
        "TTFT from the first chunk"
    );
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/vllm/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// vLLM's reasoning parser's stream, under both field names: 10 reasoning chunks,
/// the `</think>` token sent as no chunk, 8 answer chunks (the first `\n\n`), usage
/// without details; each event 20 ms after the one before.
#[tokio::test]
async fn recorded_shape_vllm_reasoning_streams_under_both_names() {
    for name in [
        "reasoning-field-stream-chat.txt",
        "reasoning-content-field-stream-chat.txt",
    ] {
        let text = fixture(name);
        let steps: Vec<Step> = text
            .split_inclusive("\n\n")
            .map(|e| step(20, e.as_bytes().to_vec()))
            .collect();
        let rec = replay(steps).await;
        assert_eq!(rec.error, None, "{name}: {rec:?}");
        assert_eq!(rec.chunks.len(), 18, "{name}");
        assert_eq!(
            rec.completion_tokens,
            Some(19),
            "{name}: </think> is a token"
        );
        let m = metrics(&rec);
        // First reasoning chunk: the second event; first answer chunk: the 12th.
        assert!(
            m.ttft_ms.unwrap() >= 38.0,
            "{name}: TTFT {} is the role chunk's",
            m.ttft_ms.unwrap()
        );
        let ttfat = m.reasoning.ttfat_ms.unwrap();
        assert!(ttfat - m.ttft_ms.unwrap() >= 190.0, "{name}: TTFAT {ttfat}");
        assert_eq!(m.reasoning.reasoning_tokens, 10, "{name}");
        assert_eq!(m.reasoning.answer_tokens, 9, "{name}");
    }
}

/// What the thinking server was asked, and how it answers: 20 reasoning chunks
/// (40 with `reasoning_effort = "high"`, none with `enable_thinking = false`), then
/// the answer, within `max_tokens` in all.
#[derive(Clone, Default)]
struct Asked(Arc<Mutex<Vec<Value>>>);

async fn think(State(asked): State<Asked>, body: Bytes) -> impl IntoResponse {
    let v: Value = serde_json::from_slice(&body).unwrap_or_default();
    asked.0.lock().unwrap().push(v.clone());
    let max = v["max_tokens"].as_u64().unwrap_or(30) as usize;
    let thinking = match (
        &v["chat_template_kwargs"]["enable_thinking"],
        &v["reasoning_effort"],
    ) {
        (Value::Bool(false), _) => 0,
        (_, e) if e == "high" => 40,
        _ => 20,
    }
    .min(max);
    let events = thinking_events("reasoning", thinking, (max - thinking).min(10), false);
    let body = futures_util::stream::iter(events).then(|(ms, s)| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok::<_, std::io::Error>(Bytes::from(s))
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(body),
    )
}

async fn thinking_server() -> (String, Asked, tokio::task::JoinHandle<()>) {
    let asked = Asked::default();
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(think))
        .route(
            "/v1/models",
            get(|| async { axum::Json(json!({"object": "list", "data": [{"id": "m"}]})) }),
        )
        .with_state(asked.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, asked, task)
}

/// Three engines of one report on one thinking server: thinking, thinking off,
/// and thinking past the limit (no answer).
fn profile(url: &str) -> String {
    let engine = |name: &str, extra: &str| {
        format!("[engines.{name}]\nurl = \"{url}\"\nmodel = \"m\"\napi = \"chat\"\n{extra}\n")
    };
    format!(
        "name = \"reasoning\"\n[slo]\nttft_ms = 1000\n[load]\npoints = [1]\n\
         requests_per_trial = 4\nwarmup_requests = 0\n[workload]\ninput_tokens = 8\n\
         output_tokens = 30\ncalibrate = false\nchat_template_kwargs = {{ enable_thinking = true }}\n\
         [server_metrics]\nenabled = false\n{}{}{}",
        engine("think", ""),
        engine("plain", "chat_template_kwargs = { enable_thinking = false }"),
        engine("overthink", "reasoning_effort = \"high\""),
    )
}

fn point<'a>(r: &'a report::Report, engine: &str) -> &'a report::Point {
    &r.load[engine].points[0]
}

/// The "Done when": TTFT ~50 ms, median TTFAT ~250 ms, 20 reasoning
/// tokens in the report; `--slo ttfat:...` decides goodput; thinking on and off
/// are two engines of one report that `compare` sets side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_measures_thinking_and_answering_apart() {
    let (url, asked, task) = thinking_server().await;
    let dir = Scratch::new();
    let prof = dir.dir().join("p.toml");
    std::fs::write(&prof, profile(&url)).unwrap();
    let out = dir.dir().join("r.json");
    let run = |slo: &'static str| {
        let (prof, out) = (prof.clone(), out.clone());
        tokio::task::spawn_blocking(move || {
            let _ = std::fs::remove_file(&out);
            let _ = std::fs::remove_file(goodput::drive::record::records_path(&out));
            let o = goodput_run(&prof, &out)
                .args(["--slo", slo])
                .output()
                .unwrap();
            succeeded(&o, "goodput run");
            report::read_report(&out).unwrap()
        })
    };
    let r = run("ttfat:150").await.unwrap();
    let think = point(&r, "think");
    let ttft = think.median_ttft_ms.median.unwrap();
    let s = think.reasoning.as_ref().expect("a reasoning summary");
    let ttfat = s.median_ttfat_ms.median.unwrap();
    assert!((45.0..150.0).contains(&ttft), "TTFT {ttft}");
    assert!((245.0..400.0).contains(&ttfat), "TTFAT {ttfat}");
    assert_eq!(s.mean_reasoning_tokens.median, Some(20.0));
    assert_eq!(s.mean_answer_tokens.median, Some(10.0));
    assert_eq!(s.no_answer, [0]);
    assert_eq!(think.good, Some(vec![0]), "TTFAT over 150 ms: none good");
    assert_eq!(think.slo_check.as_ref().unwrap().misses["ttfat"], 4);
    // The raw facts in the requests file: each chunk's reasoning bytes.
    let records =
        goodput::drive::record::read_records(&goodput::drive::record::records_path(&out)).unwrap();
    let rec = records.iter().find(|r| r.engine == "think").unwrap();
    assert_eq!(rec.chunks.iter().filter(|c| c.reasoning > 0).count(), 20);
    assert_eq!(
        rec.reasoning_tokens, None,
        "the server gave no usage details"
    );
    // Thinking off: the answer is the first token, TTFAT is TTFT, all good.
    let plain = point(&r, "plain");
    assert!(plain.reasoning.is_none());
    assert_eq!(plain.good, Some(vec![4]));
    // Thinking past max_tokens: succeeded, no answer, never good, warned.
    let over = point(&r, "overthink").reasoning.as_ref().unwrap();
    assert_eq!(
        (over.no_answer.clone(), over.mean_answer_tokens.median),
        (vec![4], Some(0.0))
    );
    let shown = goodput_output(&["show", out.to_str().unwrap()]);
    let shown = succeeded(&shown, "goodput show");
    assert!(shown.contains("Requests without an answer"), "{shown}");
    assert!(shown.contains("TTFAT ≤ 150 ms"), "{shown}");
    assert!(shown.contains("Thinking and answering"), "{shown}");
    let compared = goodput_output(&["compare", out.to_str().unwrap()]);
    assert!(succeeded(&compared, "goodput compare").contains("median TTFAT ms"));
    let page = dir.dir().join("r.html");
    let o = goodput_output(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    succeeded(&o, "goodput report");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Thinking and answering") && html.contains("TTFAT"));
    // The controls reached the server, per engine.
    let bodies = asked.0.lock().unwrap().clone();
    let off = bodies
        .iter()
        .filter(|b| b["chat_template_kwargs"]["enable_thinking"] == false)
        .count();
    let high = bodies
        .iter()
        .filter(|b| b["reasoning_effort"] == "high")
        .count();
    assert_eq!((off, high), (4, 4));
    // A looser bound: the thinking engine's requests are good.
    let r = run("ttfat:2000").await.unwrap();
    assert_eq!(point(&r, "think").good, Some(vec![4]));
    task.abort();
}

/// The documented example: thinking on and off as two simulator engines.
#[test]
fn the_example_profile_runs_thinking_on_and_off_as_two_engines() {
    let text = include_str!("../../../../../examples/reasoning-sim.toml");
    let plan = goodput::define::profile::Profile::parse(text, "reasoning-sim.toml")
        .unwrap()
        .into_plan("reasoning-sim.toml", &Default::default())
        .unwrap();
    assert_eq!(plan.slo.bound(report::SloMetric::Ttfat), Some(4000.0));
    let fields = |e: &str| {
        serde_json::Value::Object(goodput::define::plan::chat_fields(&plan.engines[e], None))
    };
    assert_eq!(fields("thinking"), json!({}));
    assert_eq!(
        fields("no-thinking"),
        json!({"chat_template_kwargs": {"enable_thinking": false}})
    );
}
