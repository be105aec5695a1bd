//! `POST /v1/embeddings` on the simulator's embedding model: vLLM's answer shape,
//! seeded vectors, token counts, passes that batch what waits, vLLM's errors, and
//! a generative model's 404.

use std::time::{Duration, Instant};

use goodput_sim::{EmbeddingsConfig, SimConfig};
use serde_json::{json, Value};

use crate::common::{client, Server};

fn embed_model(pass_ms: f64) -> SimConfig {
    SimConfig {
        model: "e".into(),
        max_model_len: 64,
        embeddings: Some(EmbeddingsConfig {
            pass_ms,
            per_token_ms: 0.0,
            dimension: 8,
            ..EmbeddingsConfig::default()
        }),
        ..SimConfig::default()
    }
}

async fn post(server: &Server, body: Value) -> (u16, Value) {
    let r = client()
        .post(server.url("/v1/embeddings"))
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test]
async fn answers_are_vllm_lists_of_seeded_unit_vectors() {
    let server = Server::start(embed_model(1.0)).await;
    let (status, v) = post(
        &server,
        json!({"model": "e", "input": ["a b c", "d e", "a b c"]}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["object"], "list");
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 3);
    let vec = |i: usize| -> Vec<f64> {
        data[i]["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    assert_eq!((data[1]["index"].as_u64(), vec(0).len()), (Some(1), 8));
    assert_eq!(vec(0), vec(2), "the same input, the same vector");
    assert_ne!(vec(0), vec(1));
    let norm: f64 = vec(1).iter().map(|x| x * x).sum();
    assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    assert_eq!(v["usage"]["prompt_tokens"], 8);
    assert_eq!(v["usage"]["total_tokens"], 8);
    // Token ids and a single text are inputs too.
    let (_, v) = post(&server, json!({"input": [[1, 2, 3], [4]]})).await;
    assert_eq!(v["usage"]["prompt_tokens"], 4);
    let (_, v) = post(&server, json!({"input": "one"})).await;
    assert_eq!(v["data"].as_array().map(Vec::len), Some(1));
    // The metrics count them as finished requests with their prompt tokens.
    let m = client()
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        m.contains("vllm:request_success_total{model_name=\"e\",finished_reason=\"length\"} 3.0"),
        "{m}"
    );
    assert!(
        m.contains("vllm:prompt_tokens_total{model_name=\"e\"} 13.0"),
        "{m}"
    );
    server.stop().await;
}

#[tokio::test]
async fn requests_waiting_together_share_a_pass() {
    let server = Server::start(embed_model(150.0)).await;
    let start = Instant::now();
    let one = post(&server, json!({"input": "x"}));
    let (a, b, c) = tokio::join!(one, post(&server, json!({"input": "y"})), async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        post(&server, json!({"input": "z"})).await
    });
    let took = start.elapsed();
    assert_eq!((a.0, b.0, c.0), (200, 200, 200));
    // The first pass takes what waits when it starts (x, maybe y); z, arriving
    // 20 ms later, waits for the next: two passes in all, not three.
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_millis(440),
        "{took:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn errors_are_vllms() {
    let server = Server::start(embed_model(1.0)).await;
    let (status, v) = post(&server, json!({"model": "other", "input": "x"})).await;
    assert_eq!(
        (status, v["error"]["message"].as_str()),
        (404, Some("The model `other` does not exist."))
    );
    let long = "w ".repeat(100);
    let (status, v) = post(&server, json!({"input": [long]})).await;
    assert_eq!(status, 400);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maximum context length is 64"),
        "{v}"
    );
    let (status, v) = post(&server, json!({"input": []})).await;
    assert_eq!((status, v["error"]["param"].as_str()), (400, Some("input")));
    server.stop().await;
    // A generative model has no such route (vLLM registers it for embedding models).
    let server = Server::start(SimConfig::default()).await;
    let (status, v) = post(&server, json!({"input": "x"})).await;
    assert_eq!((status, v["error"]["code"].as_u64()), (404, Some(404)));
    server.stop().await;
}
