//! The real-time server reproduces the model's virtual-time schedule.

mod common;

use std::time::Instant;

use common::{client, read_sse, Server};
use goodput_sim::model::simulate_closed_loop;
use goodput_sim::{preset, SimConfig};
use serde_json::json;

fn close(actual_ms: f64, expected_ms: f64) -> bool {
    (actual_ms - expected_ms).abs() <= 15.0 + 0.3 * expected_ms
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_timing_matches_the_virtual_time_model() {
    let scale = 10.0;
    let config = SimConfig {
        time_scale: scale,
        load_time_ms: 0.0,
        ..preset("vllm-fast-b").unwrap()
    };
    let expected = simulate_closed_loop(&config, 1, 3, 576, 32);
    let server = Server::start(config).await;
    let prompt = "lorem ".repeat(576);
    for (i, sim) in expected.iter().enumerate() {
        let sent = Instant::now();
        let resp = client()
            .post(server.url("/v1/completions"))
            .json(&json!({"prompt": prompt, "max_tokens": 32, "ignore_eos": true, "stream": true}))
            .send()
            .await
            .unwrap();
        let (events, err) = read_sse(resp).await;
        assert!(err.is_none());
        let tokens: Vec<_> = events.iter().filter(|e| e.data != "[DONE]").collect();
        assert_eq!(tokens.len(), 32);
        let ttft = tokens[0].at.duration_since(sent).as_secs_f64() * 1e3;
        let want_ttft = sim.ttft() * 1e3 / scale;
        assert!(
            close(ttft, want_ttft),
            "request {i}: TTFT {ttft:.1} ms, model {want_ttft:.1} ms"
        );
        let e2e = tokens[31].at.duration_since(sent).as_secs_f64() * 1e3;
        let want_e2e = sim.e2el() * 1e3 / scale;
        assert!(
            close(e2e, want_e2e),
            "request {i}: E2E {e2e:.1} ms, model {want_e2e:.1} ms"
        );
    }
    // The first request ran on a cool card, the later ones throttled.
    assert!(expected[1].ttft() > 4.0 * expected[0].ttft());
    let gpu: serde_json::Value = client()
        .get(server.url("/sim/gpu"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(gpu["thermal_throttled"], true);
    assert_eq!(gpu["sm_clock_mhz"], 400.0);
    assert_eq!(gpu["throttle_reasons"], json!(["sw_thermal_slowdown"]));
}
