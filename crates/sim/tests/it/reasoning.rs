//! The simulator thinks: with `[reasoning]`, a chat stream's first tokens arrive
//! as `delta.reasoning` (vLLM 0.19.1 and later), the answer as `delta.content`, and
//! the usage counts the thinking in `completion_tokens_details.reasoning_tokens`;
//! `chat_template_kwargs.enable_thinking = false` turns it off.

use crate::common;

use common::{client, fixed, read_sse, Event, Server};
use goodput_sim::{ReasoningConfig, SimConfig};
use serde_json::{json, Value};

fn thinking(tokens: u32) -> SimConfig {
    SimConfig {
        reasoning: Some(ReasoningConfig {
            tokens,
            spread: 0.0,
        }),
        ..fixed(5.0, 1.0)
    }
}

async fn chat(server: &Server, extra: Value) -> Vec<Event> {
    let mut body = json!({"messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 12, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true}});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let resp = client()
        .post(server.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (events, err) = read_sse(resp).await;
    assert_eq!(err, None);
    events
}

/// (reasoning, content) text of each token chunk, and the final usage.
fn split(events: &[Event]) -> (Vec<(String, String)>, Value) {
    let mut chunks = Vec::new();
    let mut usage = Value::Null;
    for e in events.iter().filter(|e| e.data != "[DONE]") {
        let v = e.json();
        if let Some(d) = v["choices"].get(0).map(|c| &c["delta"]) {
            let s = |k: &str| d[k].as_str().unwrap_or("").to_string();
            chunks.push((s("reasoning"), s("content")));
        }
        if !v["usage"].is_null() {
            usage = v["usage"].clone();
        }
    }
    (chunks, usage)
}

#[tokio::test]
async fn a_thinking_chat_streams_reasoning_then_the_answer() {
    let server = Server::start(thinking(8)).await;
    let (chunks, usage) = split(&chat(&server, json!({})).await);
    assert_eq!(chunks.len(), 12, "{chunks:?}");
    for (i, (r, c)) in chunks.iter().enumerate() {
        assert_eq!(
            (i < 8, i >= 8),
            (!r.is_empty(), !c.is_empty()),
            "chunk {i}: {r:?} {c:?}"
        );
    }
    assert_eq!(usage["completion_tokens"], 12);
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 8);
    // Thinking up to the limit: no answer at all.
    let (chunks, usage) = split(&chat(&server, json!({"max_tokens": 6})).await);
    assert!(chunks.iter().all(|(r, c)| !r.is_empty() && c.is_empty()));
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 6);
    server.stop().await;
}

#[tokio::test]
async fn thinking_off_or_scaled_by_the_request() {
    let server = Server::start(thinking(4)).await;
    let off = json!({"chat_template_kwargs": {"enable_thinking": false}});
    let (chunks, usage) = split(&chat(&server, off).await);
    assert!(chunks.iter().all(|(r, _)| r.is_empty()), "{chunks:?}");
    assert!(usage.get("completion_tokens_details").is_none(), "{usage}");
    let high = json!({"reasoning_effort": "high"});
    let (_, usage) = split(&chat(&server, high).await);
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 8);
    // A word the simulator does not know is refused, naming the field.
    let r = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"messages": [{"role": "user", "content": "hi"}], "reasoning_effort": "max"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("reasoning_effort"));
    server.stop().await;
}

#[tokio::test]
async fn the_completions_endpoint_and_a_plain_config_do_not_think() {
    let server = Server::start(thinking(4)).await;
    let body = json!({"prompt": "hi", "max_tokens": 6, "ignore_eos": true, "stream": true});
    let resp = client()
        .post(server.url("/v1/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    assert!(events.iter().all(|e| !e.data.contains("reasoning")));
    server.stop().await;
    let server = Server::start(fixed(5.0, 1.0)).await;
    let (chunks, _) = split(&chat(&server, json!({})).await);
    assert!(chunks.iter().all(|(r, c)| r.is_empty() && !c.is_empty()));
    server.stop().await;
}
