//! The real-time server reproduces the model's virtual-time schedule, read from
//! the timing probe's planned times so a busy machine's late writes do not count.

use crate::common;

use common::{client, read_sse, Server};
use goodput_sim::model::simulate_closed_loop;
use goodput_sim::{preset, SimConfig};
use goodput_stamped::monotonic_ns;
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
        // The same prompt is sent three times; the virtual-time closed loop has no
        // prompt text, so it cannot model prefix-cache hits: compare without them.
        prefix_caching: false,
        ..preset("vllm-fast-b").unwrap()
    };
    let expected = simulate_closed_loop(&config, 1, 3, 576, 32);
    let server = Server::start(config).await;
    let prompt = "lorem ".repeat(576);
    for (i, sim) in expected.iter().enumerate() {
        let sent = monotonic_ns();
        let resp = client()
            .post(server.url("/v1/completions"))
            .header("x-goodput-probe", "1")
            .json(&json!({"prompt": prompt, "max_tokens": 32, "ignore_eos": true, "stream": true}))
            .send()
            .await
            .unwrap();
        let (events, err) = read_sse(resp).await;
        assert!(err.is_none());
        let tokens: Vec<_> = events
            .iter()
            .filter(|e| e.data != "[DONE]")
            .map(|e| e.json())
            .filter(|v| v["choices"].get(0).is_some())
            .collect();
        assert_eq!(tokens.len(), 32);
        // The timing probe: when the server planned each token (`sched`) and when it
        // wrote it. The plan comes from the model's virtual time; a busy machine
        // only makes the writes late, so the plan is what is compared with the model.
        let ns =
            |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}"));
        for t in &tokens {
            assert!(
                ns(t, "goodput_probe_ns") >= ns(t, "goodput_sched_ns"),
                "request {i}: a token written before its time: {t}"
            );
        }
        let sched: Vec<u64> = tokens.iter().map(|t| ns(t, "goodput_sched_ns")).collect();
        // TTFT from the client's send: only the request's way in is wall-clock here.
        let ttft = (sched[0] - sent) as f64 / 1e6;
        let want_ttft = sim.ttft() * 1e3 / scale;
        assert!(
            close(ttft, want_ttft),
            "request {i}: TTFT {ttft:.1} ms, model {want_ttft:.1} ms"
        );
        // First to last token, as planned: the model's decode time.
        let decode = (sched[31] - sched[0]) as f64 / 1e6;
        let want_decode = (sim.e2el() - sim.ttft()) * 1e3 / scale;
        assert!(
            close(decode, want_decode),
            "request {i}: first to last token {decode:.1} ms, model {want_decode:.1} ms"
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

/// The front-end time (`frontend_ms`) holds a served request back before the
/// engine schedules it, as in virtual time; the server wakes for it when idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_holds_a_request_in_the_front_end_as_the_model_does() {
    let config = SimConfig {
        load_time_ms: 0.0,
        prefix_caching: false,
        step_fixed_ms: 5.0,
        frontend_ms: 300.0,
        ..SimConfig::default()
    };
    let expected = simulate_closed_loop(&config, 1, 1, 64, 4);
    let server = Server::start(config).await;
    let sent = monotonic_ns();
    let resp = client()
        .post(server.url("/v1/completions"))
        .header("x-goodput-probe", "1")
        .json(&json!({"prompt": "lorem ".repeat(64), "max_tokens": 4, "ignore_eos": true, "stream": true}))
        .send()
        .await
        .unwrap();
    let (events, err) = read_sse(resp).await;
    assert!(err.is_none());
    let first = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| e.json())
        .find(|v| v["choices"].get(0).is_some())
        .expect("a token");
    let sched = first["goodput_sched_ns"].as_u64().expect("probe");
    let ttft = (sched - sent) as f64 / 1e6;
    // Never before the front-end is through (a busy machine only makes it later).
    assert!(ttft >= 300.0, "TTFT {ttft:.1} ms, front-end 300 ms");
    let want = expected[0].ttft() * 1e3;
    assert!(close(ttft, want), "TTFT {ttft:.1} ms, model {want:.1} ms");
}

/// The API server's per-chunk cost (`frontend_chunk_ms`) spaces a request's chunks
/// on the server as the model spaces them in virtual time: here each chunk costs
/// more than a step, so they go out one chunk cost apart, not one step apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_streams_chunks_behind_the_api_servers_queue_as_the_model_does() {
    let config = SimConfig {
        load_time_ms: 0.0,
        prefix_caching: false,
        step_fixed_ms: 5.0,
        frontend_chunk_ms: 40.0,
        ..SimConfig::default()
    };
    let expected = simulate_closed_loop(&config, 1, 1, 64, 4);
    let want_decode = (expected[0].e2el() - expected[0].ttft()) * 1e3;
    assert!(want_decode >= 3.0 * 40.0, "model: {want_decode:.1} ms");
    let server = Server::start(config).await;
    let resp = client()
        .post(server.url("/v1/completions"))
        .header("x-goodput-probe", "1")
        .json(&json!({"prompt": "lorem ".repeat(64), "max_tokens": 4, "ignore_eos": true, "stream": true}))
        .send()
        .await
        .unwrap();
    let (events, err) = read_sse(resp).await;
    assert!(err.is_none(), "{err:?} after {} events", events.len());
    let sched: Vec<u64> = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| e.json())
        .filter(|v| v["choices"].get(0).is_some())
        .map(|v| v["goodput_sched_ns"].as_u64().expect("probe"))
        .collect();
    assert_eq!(sched.len(), 4);
    let decode = (sched[3] - sched[0]) as f64 / 1e6;
    assert!(
        close(decode, want_decode),
        "first to last chunk {decode:.1} ms, model {want_decode:.1} ms"
    );
}
