//! Images in chat requests (#40, item 2): a run on the simulator with `images = 2`
//! of 56 × 28 pixels sends them as data URLs; the simulator decodes them and counts
//! 2 tokens each (28-pixel tokens), so every request's `usage.prompt_tokens` is 4
//! above the same run's without images, and the report says the server counted
//! them. Images on the completions API are refused.

use crate::common;

use common::cli::{contains, goodput, PredicateBooleanExt, Scratch};

fn profile(api: &str, images: &str) -> String {
    format!(
        r#"
name = "image-sim"
[slo]
ttft_ms = 5000
[load]
points = [2]
requests_per_trial = 6
trials = 1
warmup_requests = 0
request_timeout_s = 30
seed = 7
[workload]
input_tokens = 16
output_tokens = 4
calibrate = false
{images}
[engines.sim]
kind = "sim"
preset = "default"
api = "{api}"
"#
    )
}

/// `prompt_tokens` of each record by index.
fn prompt_tokens(dir: &Scratch) -> Vec<(u64, u64, serde_json::Value)> {
    let text = std::fs::read_to_string(dir.path("r.requests.jsonl")).unwrap();
    let mut v: Vec<(u64, u64, serde_json::Value)> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|r| {
            let index = r["index"].as_u64().unwrap();
            let tokens = r["prompt_tokens"].as_u64().unwrap();
            (index, tokens, r["images"].clone())
        })
        .collect();
    v.sort_by_key(|r| r.0);
    v
}

#[test]
fn images_reach_the_server_and_count_in_its_prompt_tokens() {
    let plain = Scratch::new();
    plain
        .run(&profile("chat", ""), &["--quiet"])
        .assert()
        .success();
    let with = Scratch::new();
    let images = "images = 2\nimage_size = [56, 28]";
    with.run(&profile("chat", images), &["--quiet"])
        .assert()
        .success();
    let (a, b) = (prompt_tokens(&plain), prompt_tokens(&with));
    assert_eq!(a.len(), 6);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.0, y.0);
        assert_eq!(y.1, x.1 + 4, "request {}: 2 images of 2 tokens", x.0);
        assert_eq!(y.2["count"], 2);
        assert_eq!(
            (y.2["width"].as_u64(), y.2["height"].as_u64()),
            (Some(56), Some(28))
        );
        assert!(y.2["bytes"].as_u64().unwrap() > 100);
        assert!(x.2.is_null());
    }
    let r = with.report();
    let s = r.load["sim"].points[0]
        .images
        .clone()
        .expect("an images block");
    assert_eq!((s.requests, s.images, s.width, s.height), (6, 12, 56, 28));
    assert_eq!((s.prompt_tokens_counted, s.prompt_tokens_unknown), (6, 0));
    assert!(plain.report().load["sim"].points[0].images.is_none());
    goodput()
        .args(["show", &with.arg("r.json")])
        .assert()
        .success()
        .stdout(
            contains("Images")
                .and(contains("12 of 56x28"))
                .and(contains("counted by the server")),
        );
}

#[test]
fn images_need_the_chat_api() {
    let dir = Scratch::new();
    dir.run(&profile("completions", "images = 1"), &["--quiet"])
        .assert()
        .failure()
        .stderr(contains("workload.images").and(contains("completions API")));
}
