//! The simulator as an OpenAI server on its own: `n`, prompt lists,
//! logprobs, echo, stop reasons, error bodies, field policy, detokenize.

use crate::common;

use std::collections::BTreeMap;

use common::{client, fixed, read_sse, Server};
use goodput_sim::SimConfig;
use serde_json::{json, Value};

async fn post(server: &Server, path: &str, body: Value) -> (u16, Value) {
    let r = client()
        .post(server.url(path))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// A quick engine model (not a fixed schedule), so choices are sequences.
fn model() -> SimConfig {
    SimConfig {
        time_scale: 50.0,
        load_time_ms: 0.0,
        ..SimConfig::default()
    }
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

#[tokio::test]
async fn prompt_lists_with_n_are_numbered_like_vllm_and_each_choice_is_a_sequence() {
    let server = Server::start(model()).await;
    let (status, v) = post(
        &server,
        "/v1/completions",
        json!({"prompt": ["lorem", "ipsum dolor", "sit amet elit"], "n": 2,
               "max_tokens": 5, "ignore_eos": true}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let choices = v["choices"].as_array().unwrap();
    let idx: Vec<u64> = choices
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(idx, [0, 1, 2, 3, 4, 5]);
    for c in choices {
        assert_eq!(c["text"].as_str().unwrap().split_whitespace().count(), 5);
        assert_eq!(c["finish_reason"], "length");
    }
    // The two choices of one prompt differ.
    assert_ne!(choices[0]["text"], choices[1]["text"]);
    // Usage: each prompt once, every choice's tokens.
    assert_eq!(v["usage"]["prompt_tokens"], 1 + 2 + 3);
    assert_eq!(v["usage"]["completion_tokens"], 30);
    // The model ran six sequences: each counted its own prompt.
    let text = client()
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(metric(&text, "vllm:prompt_tokens_total{"), 12.0);
    assert_eq!(metric(&text, "vllm:generation_tokens_total{"), 30.0);
    server.stop().await;
}

#[tokio::test]
async fn streamed_choices_carry_their_index_and_usage_sums_them() {
    let server = Server::start(fixed(2.0, 1.0)).await;
    let resp = client()
        .post(server.url("/v1/completions"))
        .json(
            &json!({"prompt": [[256, 257], [258]], "n": 2, "max_tokens": 4,
                      "ignore_eos": true, "stream": true,
                      "stream_options": {"include_usage": true}}),
        )
        .send()
        .await
        .unwrap();
    let (events, err) = read_sse(resp).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let mut text: BTreeMap<u64, String> = BTreeMap::new();
    let mut finished: BTreeMap<u64, usize> = BTreeMap::new();
    let mut usage = None;
    for e in &events[..events.len() - 1] {
        let v = e.json();
        let choices = v["choices"].as_array().unwrap();
        if choices.is_empty() {
            usage = Some(v["usage"].clone());
            continue;
        }
        assert_eq!(choices.len(), 1);
        let c = &choices[0];
        let i = c["index"].as_u64().unwrap();
        text.entry(i)
            .or_default()
            .push_str(c["text"].as_str().unwrap());
        if !c["finish_reason"].is_null() {
            *finished.entry(i).or_default() += 1;
        }
    }
    assert_eq!(text.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert!(text.values().all(|t| t.split_whitespace().count() == 4));
    assert_eq!(finished.values().copied().collect::<Vec<_>>(), [1, 1, 1, 1]);
    let usage = usage.expect("usage chunk");
    assert_eq!(usage["prompt_tokens"], 3);
    assert_eq!(usage["completion_tokens"], 16);
    assert_eq!(usage["total_tokens"], 19);
    server.stop().await;
}

/// GuideLLM asks for `continuous_usage_stats`: every token chunk carries `usage`
/// with the tokens streamed so far, then the usage chunk, as vLLM sends it.
#[tokio::test]
async fn continuous_usage_stats_put_usage_on_every_chunk() {
    let server = Server::start(fixed(2.0, 1.0)).await;
    let resp = client()
        .post(server.url("/v1/completions"))
        .json(
            &json!({"prompt": [256, 257, 258], "max_tokens": 4, "ignore_eos": true,
                      "stream": true, "stream_options":
                      {"include_usage": true, "continuous_usage_stats": true}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (events, err) = read_sse(resp).await;
    assert!(err.is_none(), "{err:?}");
    let mut so_far = Vec::new();
    for e in &events[..events.len() - 1] {
        let v = e.json();
        assert_eq!(v["usage"]["prompt_tokens"], 3, "{v}");
        so_far.push(v["usage"]["completion_tokens"].as_u64().unwrap());
    }
    // Four token chunks counting 1..4, then the usage chunk with all four.
    assert_eq!(so_far, [1, 2, 3, 4, 4]);
    server.stop().await;
}

#[tokio::test]
async fn completion_logprobs_and_echo_are_well_formed() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    let (status, v) = post(
        &server,
        "/v1/completions",
        json!({"prompt": "lorem ipsum", "max_tokens": 6, "ignore_eos": true,
               "logprobs": 3, "echo": true}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let c = &v["choices"][0];
    let text = c["text"].as_str().unwrap();
    assert!(text.starts_with("lorem ipsum "), "{text}");
    let lp = &c["logprobs"];
    let tokens: Vec<&str> = lp["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    // Two echoed prompt tokens, then the six generated ones.
    assert_eq!(tokens.len(), 2 + 6);
    assert_eq!(&tokens[..2], ["lorem", "ipsum"]);
    assert_eq!(tokens[2..].concat(), text["lorem ipsum".len()..]);
    assert!(lp["token_logprobs"][0].is_null());
    assert!(lp["top_logprobs"][0].is_null());
    let offsets: Vec<u64> = lp["text_offset"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_u64().unwrap())
        .collect();
    assert_eq!(offsets[..3], [0, 6, 11]);
    for k in 1..tokens.len() {
        let top = lp["top_logprobs"][k].as_object().unwrap();
        assert_eq!(top.len(), 3);
        let sampled = lp["token_logprobs"][k].as_f64().unwrap();
        assert_eq!(top[tokens[k]].as_f64().unwrap(), sampled);
        assert!(top.values().all(|x| x.as_f64().unwrap() <= sampled));
    }
    // Without logprobs, `logprobs` stays null.
    let (_, v) = post(
        &server,
        "/v1/completions",
        json!({"prompt": "x", "max_tokens": 2}),
    )
    .await;
    assert!(v["choices"][0]["logprobs"].is_null());
    server.stop().await;
}

#[tokio::test]
async fn chat_logprobs_stream_with_top_logprobs() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    let resp = client()
        .post(server.url("/v1/chat/completions"))
        .json(
            &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
                      "ignore_eos": true, "stream": true, "logprobs": true, "top_logprobs": 2}),
        )
        .send()
        .await
        .unwrap();
    let (events, err) = read_sse(resp).await;
    assert!(err.is_none());
    let mut entries = 0;
    for e in events.iter().filter(|e| e.data != "[DONE]") {
        let v = e.json();
        let c = &v["choices"][0];
        let content = c["delta"]["content"].as_str().unwrap();
        let lp = c["logprobs"]["content"].as_array().unwrap();
        let joined: String = lp.iter().map(|t| t["token"].as_str().unwrap()).collect();
        assert_eq!(joined, content);
        for t in lp {
            let token = t["token"].as_str().unwrap();
            assert_eq!(t["bytes"], json!(token.as_bytes()));
            let top = t["top_logprobs"].as_array().unwrap();
            assert_eq!(top.len(), 2);
            assert_eq!(top[0]["token"], token);
            assert_eq!(top[0]["logprob"], t["logprob"]);
        }
        entries += lp.len();
    }
    assert_eq!(entries, 4);
    server.stop().await;
}

#[tokio::test]
async fn stop_reason_names_the_matched_stop_string() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    let base = json!({"prompt": "a b c", "max_tokens": 8, "ignore_eos": true, "seed": 3});
    let (_, v) = post(&server, "/v1/completions", base.clone()).await;
    let full = v["choices"][0]["text"].as_str().unwrap().to_string();
    assert!(v["choices"][0]["stop_reason"].is_null());
    let stop = format!(" {}", full.split_whitespace().nth(3).unwrap());
    let cut = full.find(&stop).unwrap();
    let mut body = base.clone();
    body["stop"] = json!(["never-there", stop]);
    let (_, v) = post(&server, "/v1/completions", body.clone()).await;
    let c = &v["choices"][0];
    assert_eq!(c["finish_reason"], "stop");
    assert_eq!(c["stop_reason"], stop.as_str());
    assert_eq!(c["text"], &full[..cut]);
    body["include_stop_str_in_output"] = json!(true);
    let (_, v) = post(&server, "/v1/completions", body.clone()).await;
    assert_eq!(v["choices"][0]["text"], &full[..cut + stop.len()]);
    // Streamed: the last chunk carries it, the others null.
    body["include_stop_str_in_output"] = json!(false);
    body["stream"] = json!(true);
    let resp = client()
        .post(server.url("/v1/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (events, _) = read_sse(resp).await;
    let chunks: Vec<Value> = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| e.json())
        .collect();
    let (last, rest) = chunks.split_last().unwrap();
    assert_eq!(last["choices"][0]["stop_reason"], stop.as_str());
    assert!(rest
        .iter()
        .all(|c| c["choices"][0]["stop_reason"].is_null()));
    server.stop().await;
}

#[tokio::test]
async fn errors_are_json_in_vllm_shape() {
    let server = Server::start(SimConfig {
        max_model_len: 64,
        ..fixed(1.0, 1.0)
    })
    .await;
    let c = client();
    let r = c.get(server.url("/v1/nothing")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], 404);
    assert_eq!(v["error"]["type"], "NotFoundError");
    let r = c.get(server.url("/v1/completions")).send().await.unwrap();
    assert_eq!(r.status(), 405);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], 405);
    assert!(v["error"]["message"].as_str().unwrap().contains("GET"));
    let cases = [
        (
            json!({"prompt": "x", "temperature": -1}),
            "temperature",
            "temperature must be non-negative",
        ),
        (
            json!({"prompt": "x", "top_p": 1.5}),
            "top_p",
            "top_p must be in (0, 1]",
        ),
        (json!({"prompt": "x", "n": 0}), "n", "n must be at least 1"),
        (json!({"prompt": "x", "n": 1000}), "n", "at most 128"),
        (
            json!({"prompt": "x", "max_tokens": -1}),
            "max_tokens",
            "at least 1",
        ),
        (
            json!({"prompt": "x", "logprobs": 21}),
            "logprobs",
            "max allowed: 20",
        ),
        (
            json!({"prompt": "x", "best_of": 3}),
            "best_of",
            "not supported",
        ),
        (
            json!({"prompt": "x", "suffix": "!"}),
            "suffix",
            "`suffix` is not supported",
        ),
        (
            json!({"prompt": "x", "response_format": {"type": "json_object"}}),
            "response_format",
            "not supported",
        ),
        (
            json!({"prompt": "x", "frobnicate": true}),
            "frobnicate",
            "Unknown field `frobnicate`",
        ),
        (
            json!({"prompt": "w ".repeat(60), "max_tokens": 10}),
            "prompt",
            "This model's maximum context length is 64 tokens. However, you requested 70 tokens \
          (60 in the messages, 10 in the completion).",
        ),
        (
            json!({"prompt": "w ".repeat(64)}),
            "prompt",
            "maximum context length is 64 tokens",
        ),
    ];
    for (body, param, message) in cases {
        let (status, v) = post(&server, "/v1/completions", body.clone()).await;
        assert_eq!(status, 400, "{body}: {v}");
        assert_eq!(v["error"]["type"], "BadRequestError");
        assert_eq!(v["error"]["param"], param, "{body}: {v}");
        let m = v["error"]["message"].as_str().unwrap();
        assert!(m.contains(message), "{body}: {m}");
    }
    let (status, v) = post(
        &server,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "hi"}],
               "tools": [{"type": "function", "function": {}}]}),
    )
    .await;
    // Tools are served (a tool call); one without a function name is refused,
    // and so are tools on the completions API.
    assert_eq!(status, 400);
    assert_eq!(v["error"]["param"], "tools");
    let (status, v) = post(
        &server,
        "/v1/completions",
        json!({"prompt": "hi", "tools": [{"type": "function", "function": {"name": "f"}}]}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(v["error"]["param"], "tools");
    // Harmless fields and neutral values are accepted.
    let (status, v) = post(
        &server,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
               "user": "u", "tools": [], "temperature": 0.0, "presence_penalty": 0.5}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    server.stop().await;
}

#[tokio::test]
async fn detokenize_inverts_tokenize() {
    let server = Server::start(fixed(1.0, 1.0)).await;
    let ids_of = |text: &'static str| {
        let s = &server;
        async move {
            let (status, v) = post(s, "/tokenize", json!({"prompt": text})).await;
            assert_eq!(status, 200);
            v["tokens"].clone()
        }
    };
    // The tokenizer's normal form comes back exactly.
    let normal = "lorem ipsum, dolor (sit) amet!";
    let ids = ids_of(normal).await;
    let (_, v) = post(&server, "/detokenize", json!({"tokens": ids})).await;
    assert_eq!(v["prompt"], normal);
    // Anything else comes back as text with the same tokens.
    let odd = "Hello,  World!\n\tzebra — naïve 42";
    let ids = ids_of(odd).await;
    let (_, v) = post(&server, "/detokenize", json!({"tokens": ids})).await;
    let back = v["prompt"].as_str().unwrap();
    let (_, again) = post(&server, "/tokenize", json!({"prompt": back})).await;
    assert_eq!(again["tokens"], ids, "{back:?}");
    // Ids the tokenizer never produces are a 400.
    let (status, v) = post(&server, "/detokenize", json!({"tokens": [256, 99999]})).await;
    assert_eq!(status, 400);
    assert_eq!(v["error"]["param"], "tokens");
    let (_, v) = post(
        &server,
        "/tokenize",
        json!({"prompt": "lorem, ipsum", "return_token_strs": true}),
    )
    .await;
    assert_eq!(v["token_strs"], json!(["lorem", ",", "ipsum"]));
    server.stop().await;
}
