//! LoRA adapters (`[adapters]`): the names a request may give in `model`, vLLM's
//! 404 for another, `/v1/models` listing them after the model, and the timing: an
//! adapter that is not resident loads first (one slot: swapping shows in TTFT),
//! a slow adapter's tokens come later. Wall-clock on loopback: a fixed schedule
//! (TTFT 20 ms), a load of 150 ms and bounds far apart.

use crate::common;

use std::time::{Duration, Instant};

use common::{client, fixed, read_sse, Server};
use goodput_sim::config::adapters::AdaptersConfig;
use serde_json::{json, Value};

/// The time to the first streamed event of a request naming `model`; the status
/// when it is not 200.
async fn ttft(server: &Server, model: &str) -> Result<Duration, (u16, Value)> {
    let start = Instant::now();
    let r = client()
        .post(server.url("/v1/completions"))
        .json(&json!({"model": model, "prompt": "hi", "max_tokens": 2, "stream": true}))
        .send()
        .await
        .unwrap();
    if r.status().as_u16() != 200 {
        return Err((r.status().as_u16(), r.json().await.unwrap()));
    }
    let mut r = r;
    let first = r.chunk().await.unwrap();
    let t = start.elapsed();
    assert!(first.is_some());
    let _ = read_sse(r).await;
    Ok(t)
}

#[tokio::test]
async fn adapters_are_served_listed_swapped_and_slowed() {
    let mut config = fixed(20.0, 5.0);
    let mut a = AdaptersConfig::named(["lora-a", "lora-b"], 1);
    a.load_ms = 150.0;
    a.modules.insert("lora-slow".into(), 5.0);
    config.adapters = Some(a);
    let base = config.model.clone();
    let server = Server::start(config).await;

    let models: Value = client()
        .get(server.url("/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [base.as_str(), "lora-a", "lora-b", "lora-slow"]);
    assert_eq!(models["data"][1]["parent"], base.as_str());

    let (status, body) = ttft(&server, "lora-x").await.unwrap_err();
    assert_eq!(status, 404);
    assert_eq!(
        body["error"]["message"],
        "The model `lora-x` does not exist."
    );
    assert_eq!(body["error"]["param"], "model");

    // The base model: 20 ms. lora-a's first request loads it (+150 ms); the next
    // finds it resident; lora-b evicts it (one slot), so lora-a loads again.
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let plain = ms(ttft(&server, &base).await.unwrap());
    assert!(plain < 120.0, "base {plain}");
    let load = ms(ttft(&server, "lora-a").await.unwrap());
    assert!((150.0..600.0).contains(&load), "first lora-a {load}");
    let resident = ms(ttft(&server, "lora-a").await.unwrap());
    assert!(resident < 120.0, "resident lora-a {resident}");
    ttft(&server, "lora-b").await.unwrap();
    let swapped = ms(ttft(&server, "lora-a").await.unwrap());
    assert!(swapped >= 150.0, "swapped-in lora-a {swapped}");
    // A slowdown of 5: the first token due at 5 x 20 ms after the load.
    let slow = ms(ttft(&server, "lora-slow").await.unwrap());
    assert!(slow >= 250.0, "lora-slow {slow}");
    server.stop().await;
}
