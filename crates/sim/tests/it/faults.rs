//! Timing probe and fault injection: each fault does what it says.

use crate::common;

use std::time::{Duration, Instant};

use common::{client, fixed, read_sse, Server};
use futures_util::StreamExt;
use goodput_sim::config::FaultRule;
use goodput_stamped::MonoClock;
use serde_json::{json, Value};

async fn stream_with_fault(server: &Server, fault: &str, max_tokens: u32) -> reqwest::Response {
    client()
        .post(server.url("/v1/completions"))
        .header("x-goodput-fault", fault)
        .json(
            &json!({"prompt": "a b c", "max_tokens": max_tokens, "ignore_eos": true,
                      "stream": true, "stream_options": {"include_usage": true}}),
        )
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn probe_timestamps_every_chunk_with_the_instant_clock() {
    let server = Server::start(fixed(20.0, 10.0)).await;
    let mono = MonoClock::new();
    let resp = client()
        .post(server.url("/v1/chat/completions"))
        .header("x-goodput-probe", "1")
        .json(&json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5,
                      "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}))
        .send()
        .await
        .unwrap();
    let (events, err) = read_sse(resp).await;
    assert!(err.is_none());
    let json_events: Vec<_> = events.iter().filter(|e| e.data != "[DONE]").collect();
    assert_eq!(json_events.len(), 6);
    for e in json_events {
        let v = e.json();
        let sent = v["goodput_probe_ns"].as_u64().expect("probe field");
        let received = mono.ns(e.at);
        assert!(sent <= received, "sent {sent} after received {received}");
        assert!(
            received - sent < 200_000_000,
            "{} ns in flight",
            received - sent
        );
    }
    // Without the header (and probe = false) there is no probe field.
    let resp = client()
        .post(server.url("/v1/completions"))
        .json(&json!({"prompt": "x", "max_tokens": 2, "ignore_eos": true, "stream": true}))
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    assert!(events[0].json().get("goodput_probe_ns").is_none());
}

#[tokio::test]
async fn probe_can_be_configured() {
    let mut config = fixed(1.0, 1.0);
    config.probe = true;
    let server = Server::start(config).await;
    let (events, _) = read_sse(stream_with_fault(&server, "", 3).await).await;
    assert!(events[0].json()["goodput_probe_ns"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn drop_after_closes_the_connection_without_done() {
    let server = Server::start(fixed(5.0, 5.0)).await;
    let (events, err) = read_sse(stream_with_fault(&server, "drop_after=3", 10).await).await;
    assert!(err.is_some(), "the body must end in an error");
    assert_eq!(events.len(), 3);
    assert!(events.iter().all(|e| e.data != "[DONE]"));
}

#[tokio::test]
async fn stall_after_keeps_the_connection_open_and_silent() {
    let server = Server::start(fixed(5.0, 5.0)).await;
    let resp = stream_with_fault(&server, "stall_after=2", 10).await;
    let mut stream = resp.bytes_stream();
    let mut received = String::new();
    let silent = loop {
        match tokio::time::timeout(Duration::from_millis(400), stream.next()).await {
            Ok(Some(Ok(b))) => received.push_str(std::str::from_utf8(&b).unwrap()),
            Ok(other) => panic!("stream ended: {other:?}"),
            Err(_) => break true,
        }
    };
    assert!(silent);
    assert_eq!(received.matches("data: ").count(), 2);
    // Shutting the server down ends the stalled stream.
    let stop = tokio::spawn(server.stop());
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next()).await;
    assert!(matches!(end, Ok(None) | Ok(Some(Err(_)))), "{end:?}");
    stop.await.unwrap();
}

#[tokio::test]
async fn status_faults_answer_with_error_json() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    for (code, kind) in [(500, "InternalServerError"), (429, "RateLimitError")] {
        let r = stream_with_fault(&server, &format!("status={code}"), 3).await;
        assert_eq!(r.status().as_u16(), code);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], code);
        assert_eq!(v["error"]["type"], kind);
    }
    let r = stream_with_fault(&server, "explode", 3).await;
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn malformed_sends_a_chunk_that_is_not_json() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    let (events, err) = read_sse(stream_with_fault(&server, "malformed", 4).await).await;
    assert!(err.is_none());
    let bad = events
        .iter()
        .filter(|e| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err())
        .count();
    assert_eq!(bad, 1);
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn no_choices_and_bad_usage() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    let (events, _) = read_sse(stream_with_fault(&server, "no_choices", 3).await).await;
    let tokens: Vec<Value> = events[..3].iter().map(|e| e.json()).collect();
    assert!(tokens.iter().all(|v| v.get("choices").is_none()));

    let (events, _) = read_sse(stream_with_fault(&server, "bad_usage", 4).await).await;
    let streamed = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter(|e| {
            e.json()["choices"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
        })
        .count();
    assert_eq!(streamed, 4);
    let usage = events[events.len() - 2].json();
    assert_ne!(usage["usage"]["completion_tokens"].as_u64().unwrap(), 4);
}

#[tokio::test]
async fn endless_ignores_max_tokens() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    let resp = stream_with_fault(&server, "endless", 3).await;
    let mut stream = resp.bytes_stream();
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while text.matches("data: ").count() < 20 {
        assert!(Instant::now() < deadline);
        let b = stream.next().await.unwrap().unwrap();
        text.push_str(std::str::from_utf8(&b).unwrap());
    }
    assert!(!text.contains("[DONE]"));
}

#[tokio::test]
async fn not_sse_answers_html() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    let r = stream_with_fault(&server, "not_sse", 3).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(r.text().await.unwrap().contains("<html>"));
}

#[tokio::test]
async fn configured_faults_hit_every_nth_request() {
    let mut config = fixed(1.0, 1.0);
    config.faults = vec![FaultRule {
        spec: "status=503".parse().unwrap(),
        every: 2,
    }];
    let server = Server::start(config).await;
    let mut codes = Vec::new();
    for _ in 0..4 {
        let r = stream_with_fault_free(&server).await;
        codes.push(r.status().as_u16());
        let _ = r.bytes().await;
    }
    assert_eq!(codes, vec![200, 503, 200, 503]);
}

async fn stream_with_fault_free(server: &Server) -> reqwest::Response {
    client()
        .post(server.url("/v1/completions"))
        .json(&json!({"prompt": "a", "max_tokens": 2, "ignore_eos": true}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn faults_apply_in_model_mode_too() {
    let server = Server::start(goodput_sim::SimConfig {
        time_scale: 50.0,
        load_time_ms: 0.0,
        ..goodput_sim::preset("vllm-fast-b").unwrap()
    })
    .await;
    let (events, err) = read_sse(stream_with_fault(&server, "drop_after=2", 10).await).await;
    assert!(err.is_some());
    assert_eq!(events.len(), 2);
}
