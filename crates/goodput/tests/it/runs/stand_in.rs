//! The workloads of issue #40 against a server not written for goodput: the
//! stand-in (`tests/fixtures/openai_stand_in.py`, Python's standard library, vLLM's
//! wire shapes) is told what to do, and the report must find it: a tool call
//! streamed at 80 ms with every fourth call's arguments invalid; `lora-b` answered
//! at 120 ms and other models at 40 ms; embeddings in 30 ms; the images asked for.

use crate::common;

use common::cli::Scratch;
use common::stand_in::StandIn;

fn profile(url: &str, workload: &str, api: &str) -> String {
    format!(
        r#"
name = "stand-in"
[slo]
e2el_ms = 5000
[load]
points = [4]
requests_per_trial = 40
trials = 1
warmup_requests = 2
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 8
{workload}
[engines.stand-in]
url = "{url}"
model = "base"
api = "{api}"
"#
    )
}

#[test]
fn a_tool_call_at_80_ms_with_every_fourth_invalid() {
    let Some(server) = StandIn::start(&["--tool-call-ms", "80", "--invalid-every", "4"]) else {
        return;
    };
    let dir = Scratch::new();
    let p = profile(&server.url, "tools = 2\ntool_choice = \"required\"", "chat");
    dir.run(&p, &["--quiet", "--slo", "ttftc:5000"])
        .assert()
        .success();
    let r = dir.report();
    let point = &r.load["stand-in"].points[0];
    let tc = point.tool_calls.as_ref().expect("a tool-call block");
    assert_eq!(tc.calls, 40, "{tc:?}");
    let ttftc = tc.median_ttftc_ms.median.expect("a median TTFTC");
    assert!(
        (75.0..140.0).contains(&ttftc),
        "median TTFTC {ttftc} ms, the server waits 80"
    );
    let share = tc.valid_share.expect("a valid share");
    assert!(
        (0.65..=0.85).contains(&share),
        "valid share {share}, the server breaks every fourth"
    );
    // Every request carried the two function definitions.
    let sent = server.requests();
    assert_eq!(sent.len(), 42, "40 measured and 2 warm-up requests");
    assert!(sent.iter().all(|q| q["tools"] == 2), "{sent:?}");
}

#[test]
fn lora_b_at_120_ms_and_lora_a_at_40_are_reported_apart() {
    let Some(server) = StandIn::start(&["--adapter-ms", "lora-b=120", "--default-ms", "40"]) else {
        return;
    };
    let dir = Scratch::new();
    let p = profile(
        &server.url,
        "[workload.adapters]\nlora-a = 3\nlora-b = 1",
        "chat",
    );
    dir.run(&p, &["--quiet", "--slo", "ttft:1000"])
        .assert()
        .success();
    let r = dir.report();
    let point = &r.load["stand-in"].points[0];
    let a = point.adapters.as_ref().expect("an adapters block");
    let of = |name: &str| {
        a.adapters
            .iter()
            .find(|x| x.name == name)
            .unwrap_or_else(|| panic!("{name} in {a:?}"))
    };
    let ttft = |name: &str| of(name).latency["ttft"].median_ms.expect("a median TTFT");
    assert!(
        (110.0..170.0).contains(&ttft("lora-b")),
        "lora-b {}",
        ttft("lora-b")
    );
    assert!(
        (35.0..80.0).contains(&ttft("lora-a")),
        "lora-a {}",
        ttft("lora-a")
    );
    // Split by weight 3:1 (40 requests: lora-b about 10).
    let b: u64 = of("lora-b").sent.iter().sum();
    assert!((4..=18).contains(&b), "lora-b was sent {b} of 40");
    // The judgement names lora-b as the slow one.
    assert!(
        a.judgements
            .iter()
            .any(|j| j.adapter == "lora-b" && j.metric == "ttft" && j.outcome.as_str() == "higher"),
        "{:?}",
        a.judgements
    );
    // What the server received: each request's model is the adapter drawn.
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|q| q["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        models.iter().all(|m| m == "lora-a" || m == "lora-b"),
        "{models:?}"
    );
}

#[test]
fn embeddings_answered_in_30_ms_have_a_median_near_30() {
    let Some(server) = StandIn::start(&["--embed-ms", "30"]) else {
        return;
    };
    let dir = Scratch::new();
    let p = profile(&server.url, "inputs = 4", "embeddings").replace("output_tokens = 8\n", "");
    dir.run(&p, &["--quiet"]).assert().success();
    let r = dir.report();
    let point = &r.load["stand-in"].points[0];
    let e2el = point
        .median_e2el_ms
        .as_ref()
        .and_then(|s| s.median)
        .expect("a median E2EL");
    assert!(
        (28.0..60.0).contains(&e2el),
        "median E2EL {e2el} ms, the server waits 30"
    );
    let e = point.embeddings.as_ref().expect("an embeddings block");
    assert_eq!(e.inputs_per_request, 4);
    let sent = server.requests();
    assert!(sent.iter().all(|q| q["inputs"] == 4), "{sent:?}");
}

#[test]
fn requests_carry_the_images_asked_for() {
    let Some(server) = StandIn::start(&[]) else {
        return;
    };
    let dir = Scratch::new();
    let p = profile(
        &server.url,
        "images = 2\nimage_size = [64, 48]\nimage_format = \"jpeg\"",
        "chat",
    );
    dir.run(&p, &["--quiet"]).assert().success();
    let sent = server.requests();
    assert_eq!(sent.len(), 42);
    for q in &sent {
        assert_eq!(q["images"], serde_json::json!([[64, 48], [64, 48]]), "{q}");
    }
    let r = dir.report();
    let im = r.load["stand-in"].points[0]
        .images
        .as_ref()
        .expect("an images block");
    assert_eq!((im.images, im.width, im.height), (80, 64, 48));
    // The stand-in reports usage: the image tokens are counted by the server.
    assert_eq!(
        (im.prompt_tokens_counted, im.prompt_tokens_unknown),
        (40, 0)
    );
}
