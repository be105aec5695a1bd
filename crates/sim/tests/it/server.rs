//! The server end to end on loopback: timing, shapes, endpoints, errors.

use crate::common;

use std::time::{Duration, Instant};

use common::{client, fixed, read_sse, stream_text, Server};
use goodput_sim::{preset, SimConfig};
use serde_json::{json, Value};

/// Loose: the test machine has 2 cores shared with other builds.
fn close(actual_ms: f64, expected_ms: f64) -> bool {
    (actual_ms - expected_ms).abs() <= 15.0 + 0.3 * expected_ms
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_schedule_stream_has_the_configured_ttft_and_itl() {
    let server = Server::start(fixed(120.0, 40.0)).await;
    let sent_ns = goodput_stamped::monotonic_ns();
    let sent = Instant::now();
    let resp = client()
        .post(server.url("/v1/completions"))
        .header("x-goodput-probe", "1")
        .json(
            &json!({"prompt": "hello there", "max_tokens": 8, "stream": true, "ignore_eos": true}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let (events, err) = read_sse(resp).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let tokens: Vec<_> = events.iter().filter(|e| e.data != "[DONE]").collect();
    assert_eq!(tokens.len(), 8);
    // The timing probe: when the server planned each token and when it wrote it.
    // The plan is exact (the fixed schedule from the request's arrival); a busy
    // machine only makes writes and reads late, never early, so wall-clock figures
    // are checked as lower bounds and the plan exactly.
    let ns = |e: &common::Event, k: &str| {
        let v = e.json();
        v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}"))
    };
    let sched: Vec<u64> = tokens.iter().map(|e| ns(e, "goodput_sched_ns")).collect();
    for (e, &s) in tokens.iter().zip(&sched) {
        assert!(ns(e, "goodput_probe_ns") >= s, "written before its time");
    }
    for w in sched.windows(2) {
        let gap = (w[1] - w[0]) as f64 / 1e6;
        assert!((gap - 40.0).abs() < 0.01, "planned ITL {gap} ms");
    }
    let planned_ttft = (sched[0] - sent_ns) as f64 / 1e6;
    assert!(
        (120.0..120.0 + 500.0).contains(&planned_ttft),
        "planned first token {planned_ttft} ms after the send"
    );
    let ttft = tokens[0].at.duration_since(sent).as_secs_f64() * 1e3;
    assert!(ttft >= 120.0, "TTFT {ttft} ms: never earlier than planned");
    let mut itl: Vec<f64> = tokens
        .windows(2)
        .map(|w| w[1].at.duration_since(w[0].at).as_secs_f64() * 1e3)
        .collect();
    itl.sort_by(f64::total_cmp);
    let median = itl[itl.len() / 2];
    assert!(close(median, 40.0), "median ITL {median} ms: {itl:?}");
    let total = tokens[7].at.duration_since(sent).as_secs_f64() * 1e3;
    assert!(total >= 120.0 + 7.0 * 40.0, "last token at {total} ms");
    let last = tokens[7].json();
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    assert_eq!(last["object"], "text_completion");
    assert!(last["choices"][0]["logprobs"].is_null());
    server.stop().await;
}

#[tokio::test]
async fn chat_stream_with_usage_has_vllm_shape() {
    let server = Server::start(fixed(5.0, 2.0)).await;
    let resp = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({
            "model": "goodput-sim",
            "messages": [{"role": "user", "content": "Say something."}],
            "max_completion_tokens": 5, "ignore_eos": true, "stream": true,
            "stream_options": {"include_usage": true}
        }))
        .send()
        .await
        .unwrap();
    let (events, err) = read_sse(resp).await;
    assert!(err.is_none());
    assert_eq!(events.len(), 5 + 2);
    let first = events[0].json();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert!(first["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let usage = events[5].json();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 5);
    let prompt = usage["usage"]["prompt_tokens"].as_u64().unwrap();
    assert_eq!(usage["usage"]["total_tokens"], prompt + 5);
    assert_eq!(events[6].data, "[DONE]");
    assert_eq!(stream_text(&events).split_whitespace().count(), 5);
    // /tokenize counts the same prompt the same way.
    let tok: Value = client()
        .post(server.url("/tokenize"))
        .json(&json!({"messages": [{"role": "user", "content": "Say something."}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tok["count"].as_u64().unwrap(), prompt);
}

#[tokio::test]
async fn non_streaming_completion_and_determinism() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    let ask = |seed: i64| {
        let c = client();
        let url = server.url("/v1/completions");
        async move {
            let v: Value = c
                .post(url)
                .json(
                    &json!({"prompt": "a b c", "max_tokens": 6, "ignore_eos": true, "seed": seed}),
                )
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v
        }
    };
    let a = ask(1).await;
    assert_eq!(a["object"], "text_completion");
    assert_eq!(a["usage"]["prompt_tokens"], 3);
    assert_eq!(a["usage"]["completion_tokens"], 6);
    assert_eq!(a["choices"][0]["finish_reason"], "length");
    let text = a["choices"][0]["text"].as_str().unwrap().to_string();
    assert_eq!(text.split_whitespace().count(), 6);
    assert_eq!(ask(1).await["choices"][0]["text"], text.as_str());
    assert_ne!(ask(2).await["choices"][0]["text"], text.as_str());
    // A stop string cuts the text before it.
    let third = text.split_whitespace().nth(2).unwrap().to_string();
    let v: Value = client()
        .post(server.url("/v1/completions"))
        .json(
            &json!({"prompt": "a b c", "max_tokens": 6, "ignore_eos": true, "seed": 1,
                      "stop": [format!(" {third}")]}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(text.starts_with(v["choices"][0]["text"].as_str().unwrap()));
    assert!(
        !v["choices"][0]["text"].as_str().unwrap().contains(&third)
            || text.matches(&third).count() > 1
    );
}

#[tokio::test]
async fn small_endpoints() {
    let mut config = fixed(1.0, 1.0);
    config.load_time_ms = 300.0;
    let server = Server::start(config).await;
    let c = client();
    assert_eq!(
        c.get(server.url("/health")).send().await.unwrap().status(),
        503
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        c.get(server.url("/health")).send().await.unwrap().status(),
        200
    );
    let models: Value = c
        .get(server.url("/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "goodput-sim");
    let version: Value = c
        .get(server.url("/version"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(version["version"]
        .as_str()
        .unwrap()
        .starts_with("goodput-sim "));
    // What bounds queueing, as an engine states it (goodput's fit takes it as known).
    for limit in [
        "max_num_seqs",
        "max_num_batched_tokens",
        "kv_pool_tokens",
        "block_size",
    ] {
        assert!(version["limits"][limit].as_u64().unwrap() >= 1, "{version}");
    }
    let tok: Value = c
        .post(server.url("/tokenize"))
        .json(&json!({"prompt": "lorem ipsum, dolor"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tok["count"], 4);
    assert_eq!(tok["max_model_len"], 4096);
    assert_eq!(tok["tokens"].as_array().unwrap().len(), 4);
    let detok: Value = c
        .post(server.url("/detokenize"))
        .json(&json!({"tokens": tok["tokens"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(detok["prompt"], "lorem ipsum, dolor");
    let gpu: Value = c
        .get(server.url("/sim/gpu"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let keys: Vec<&str> = gpu
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "name",
            "sm_clock_mhz",
            "mem_clock_mhz",
            "max_sm_clock_mhz",
            "temperature_c",
            "power_w",
            "power_limit_w",
            "memory_used_mib",
            "memory_total_mib",
            "utilization_pct",
            "throttle_reasons",
            "thermal_throttled"
        ]
    );
    assert_eq!(gpu["name"], "goodput-sim GPU");
    assert_eq!(gpu["thermal_throttled"], false);
    assert_eq!(gpu["throttle_reasons"], json!([]));
}

#[tokio::test]
async fn metrics_use_vllm_names() {
    let config = SimConfig {
        time_scale: 20.0,
        ..preset("vllm-ngram").unwrap()
    };
    let server = Server::start(SimConfig {
        load_time_ms: 0.0,
        ..config
    })
    .await;
    let resp = client()
        .post(server.url("/v1/completions"))
        .json(&json!({"prompt": "a b c d", "max_tokens": 20, "ignore_eos": true, "stream": true}))
        .send()
        .await
        .unwrap();
    let (events, err) = read_sse(resp).await;
    assert!(err.is_none());
    assert_eq!(stream_text(&events).split_whitespace().count(), 20);
    let text = client()
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for name in [
        "vllm:num_requests_running{model_name=\"goodput-sim\"} 0.0",
        "vllm:num_requests_waiting{",
        "vllm:kv_cache_usage_perc{",
        "vllm:num_preemptions_total{",
        "vllm:prompt_tokens_total{model_name=\"goodput-sim\"} 4.0",
        "vllm:generation_tokens_total{model_name=\"goodput-sim\"} 20.0",
        "vllm:spec_decode_num_drafts_total{",
        "vllm:spec_decode_num_draft_tokens_total{",
        "vllm:spec_decode_num_accepted_tokens_total{",
        "block_size=\"16\",num_gpu_blocks=\"183\"",
        "# TYPE vllm:num_preemptions counter",
    ] {
        assert!(text.contains(name), "missing {name} in\n{text}");
    }
}

#[tokio::test]
async fn bad_requests_get_openai_errors() {
    let server = Server::start(SimConfig {
        time_scale: 50.0,
        load_time_ms: 0.0,
        ..preset("vllm-fast-b").unwrap()
    })
    .await;
    let c = client();
    let post = |body: Value| c.post(server.url("/v1/completions")).json(&body).send();
    let r = post(json!({"prompt": "w ".repeat(3000)})).await.unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "BadRequestError");
    assert_eq!(v["error"]["code"], 400);
    // One message for an over-long prompt, whatever limit it passes first.
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maximum context length is 2048"));
    let r = post(json!({"prompt": "w ".repeat(2000), "max_tokens": 100}))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maximum context length is 2048"));
    let r = c
        .post(server.url("/v1/completions"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "BadRequestError");
    let r = post(json!({"model": "other", "prompt": "x"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn disconnected_clients_are_freed_from_the_model() {
    let server = Server::start(SimConfig {
        time_scale: 10.0,
        load_time_ms: 0.0,
        thermal: None,
        ..preset("vllm-fast-b").unwrap()
    })
    .await;
    let resp = client()
        .post(server.url("/v1/completions"))
        .json(&json!({"prompt": "a b", "max_tokens": 1000, "ignore_eos": true, "stream": true}))
        .send()
        .await
        .unwrap();
    let mut stream = resp.bytes_stream();
    use futures_util::StreamExt;
    let _ = stream.next().await;
    let running = || async {
        let text = client()
            .get(server.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find(|l| l.starts_with("vllm:num_requests_running{"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap()
    };
    assert_eq!(running().await, 1.0);
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(5);
    while running().await != 0.0 {
        assert!(
            Instant::now() < deadline,
            "request still running after disconnect"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn speculative_chunks_carry_several_words() {
    let server = Server::start(SimConfig {
        time_scale: 20.0,
        load_time_ms: 0.0,
        ..preset("vllm-ngram").unwrap()
    })
    .await;
    // Different prompts draw different acceptance rates; some accept drafts.
    let mut multi = 0;
    for i in 0..6 {
        let resp = client()
            .post(server.url("/v1/completions"))
            .json(
                &json!({"prompt": format!("prompt number {i}"), "max_tokens": 24,
                          "ignore_eos": true, "stream": true}),
            )
            .send()
            .await
            .unwrap();
        let (events, _) = read_sse(resp).await;
        let words: Vec<usize> = events
            .iter()
            .filter(|e| e.data != "[DONE]")
            .map(|e| {
                e.json()["choices"][0]["text"]
                    .as_str()
                    .unwrap()
                    .split_whitespace()
                    .count()
            })
            .collect();
        assert_eq!(words.iter().sum::<usize>(), 24);
        multi += words.iter().filter(|&&w| w > 1).count();
    }
    assert!(multi > 0);
}

/// A server on one thread built as `goodput sim --threads 1` builds it (its own
/// timer, armed before the thread parks): many concurrent streams, none of their
/// chunks written before its time, every planned gap the ITL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_thread_server_with_its_own_timer_is_never_early() {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        goodput_sim::warm_allocator();
        let rt = tokio::runtime::Builder::new_current_thread()
            .on_thread_park(goodput_sim::server::timer::before_park)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addr_tx.send(listener.local_addr().unwrap()).unwrap();
            goodput_sim::serve(listener, fixed(30.0, 5.0), async {
                let _ = stop_rx.await;
            })
            .await
            .unwrap();
        });
    });
    let addr = addr_rx.recv().unwrap();
    let url = format!("http://{addr}/v1/completions");
    let streams: Vec<_> = (0..20)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move {
                let resp = client()
                    .post(url)
                    .header("x-goodput-probe", "1")
                    .json(&json!({"prompt": "a b", "max_tokens": 10, "stream": true, "ignore_eos": true}))
                    .send()
                    .await
                    .unwrap();
                read_sse(resp).await
            })
        })
        .collect();
    for s in streams {
        let (events, err) = s.await.unwrap();
        assert!(err.is_none(), "{err:?}");
        let tokens: Vec<Value> = events
            .iter()
            .filter(|e| e.data != "[DONE]")
            .map(|e| e.json())
            .collect();
        assert_eq!(tokens.len(), 10);
        let ns = |v: &Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}"));
        for t in &tokens {
            assert!(
                ns(t, "goodput_probe_ns") >= ns(t, "goodput_sched_ns"),
                "written before its time: {t}"
            );
        }
        for w in tokens.windows(2) {
            let gap = ns(&w[1], "goodput_sched_ns") - ns(&w[0], "goodput_sched_ns");
            assert!(gap.abs_diff(5_000_000) < 10_000, "planned ITL {gap} ns");
        }
    }
    let _ = stop_tx.send(());
    thread.join().unwrap();
}
