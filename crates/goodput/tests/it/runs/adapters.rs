//! LoRA adapters end to end (#40, item 3): a run on a simulator serving two
//! adapters, one three times slower (TTFT 120 ms against 40 ms), splits its
//! requests by weight, reports the adapters apart, and the warning and the
//! verdict name the slow one; with equal adapters nothing is named; an adapter
//! the server does not serve fails with vLLM's 404; `--lora-modules` is the
//! workload's table.

use crate::common;

use common::cli::{contains, goodput, PredicateBooleanExt, Scratch};

/// A fixed-schedule simulator (TTFT 40 ms, ITL 5 ms) serving `lora-a` at speed 1
/// and `lora-b` at `b_speed`.
fn sim_config(dir: &Scratch, b_speed: f64) -> String {
    let text = format!(
        "[schedule]\nttft_ms = 40\nitl_ms = 5\n\
         [adapters]\nmax_loras = 2\n[adapters.modules]\nlora-a = 1\nlora-b = {b_speed}\n"
    );
    dir.write("sim.toml", &text).display().to_string()
}

fn profile(config: &str, adapters: &str) -> String {
    format!(
        r#"
name = "lora-sim"
[slo]
ttft_ms = 100
[load]
points = [4]
requests_per_trial = 48
trials = 1
warmup_requests = 2
request_timeout_s = 30
seed = 3
[workload]
input_tokens = 16
output_tokens = 8
calibrate = false
{adapters}
[engines.sim]
kind = "sim"
args = ["--config", "{config}"]
"#
    )
}

const TWO: &str = "[workload.adapters]\nlora-a = 3\nlora-b = 1";

#[test]
fn a_slower_adapter_is_reported_apart_and_named() {
    let dir = Scratch::new();
    let config = sim_config(&dir, 3.0);
    dir.run(&profile(&config, TWO), &["--quiet"])
        .assert()
        .success();
    let r = dir.report();
    let s = r.load["sim"].points[0]
        .adapters
        .as_ref()
        .expect("an adapter block");
    let names: Vec<&str> = s.adapters.iter().map(|a| a.name.as_str()).collect();
    let by = |n: &str| s.adapters.iter().find(|a| a.name == n).unwrap();
    assert_eq!(names.len(), 2, "{names:?}");
    // 48 requests at weights 3:1: 36 expected for lora-a (Binomial sd 3).
    let a_sent = by("lora-a").sent[0];
    assert!((26..=46).contains(&a_sent), "lora-a sent {a_sent}");
    assert_eq!(a_sent + by("lora-b").sent[0], 48);
    let ttft = |n: &str| by(n).latency["ttft"].median_ms.unwrap();
    assert!((38.0..80.0).contains(&ttft("lora-a")), "{}", ttft("lora-a"));
    assert!(
        (118.0..170.0).contains(&ttft("lora-b")),
        "{}",
        ttft("lora-b")
    );
    // lora-b misses the 100 ms bound, lora-a meets it.
    assert_eq!(by("lora-b").good, 0);
    assert_eq!(by("lora-a").good, by("lora-a").completed);
    let j = s
        .judgements
        .iter()
        .find(|j| j.adapter == "lora-b" && j.metric == "ttft")
        .unwrap();
    assert_eq!(j.outcome, goodput::report::AdapterOutcome::Higher, "{j:?}");
    assert!(j.low_ms.unwrap() > 50.0, "{j:?}");
    // The requests file keeps each request's adapter.
    let records = std::fs::read_to_string(dir.path("r.requests.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(records.lines().next().unwrap()).unwrap();
    assert!(first["adapter"]
        .as_str()
        .is_some_and(|a| a.starts_with("lora-")));

    goodput()
        .args(["show", &dir.arg("r.json")])
        .assert()
        .success()
        .stdout(
            contains("LoRA adapters")
                .and(contains("An adapter's latency differs"))
                .and(contains(
                    "lora-b's TTFT is higher than the other adapters' by",
                ))
                .and(contains("Adapters differ on sim: lora-b's TTFT is higher")),
        );
    goodput()
        .args(["show", &dir.arg("r.json"), "--format", "markdown"])
        .assert()
        .success()
        .stdout(contains("**LoRA adapters").and(contains("lora-b's TTFT is higher")));
    // The page written beside the report has the section and the warning.
    let page = std::fs::read_to_string(dir.path("r.html")).unwrap();
    assert!(
        page.contains("id=\"adapters\""),
        "the page has the adapter table"
    );
    assert!(
        page.contains("lora-b's TTFT is higher than the other adapters'"),
        "the page's warnings and verdict name lora-b"
    );
}

#[test]
fn equal_adapters_are_not_named_and_an_unknown_one_is_a_404() {
    let dir = Scratch::new();
    let config = sim_config(&dir, 1.0);
    dir.run(&profile(&config, TWO), &["--quiet"])
        .assert()
        .success();
    goodput()
        .args(["show", &dir.arg("r.json")])
        .assert()
        .success()
        .stdout(contains("LoRA adapters").and(contains("latency differs").not()));

    // `--lora-modules` (vLLM's spelling) names the adapters, at equal weights;
    // one the server does not serve fails with vLLM's message.
    let dir = Scratch::new();
    let config = sim_config(&dir, 1.0);
    dir.run(
        &profile(&config, ""),
        &["--quiet", "--lora-modules", "lora-a=/tmp/a", "lora-x"],
    )
    .assert()
    .success();
    let r = dir.report();
    let p = &r.load["sim"].points[0];
    let s = p.adapters.as_ref().unwrap();
    let x = s.adapters.iter().find(|a| a.name == "lora-x").unwrap();
    assert_eq!(x.completed, 0);
    assert!(x.failed > 0);
    assert!(p.errors.contains_key("http_404"), "{:?}", p.errors);
    assert!(p
        .first_error
        .as_deref()
        .is_some_and(|e| e.contains("The model `lora-x` does not exist.")));

    dir.run(
        &profile(&config, "[workload.adapters]\nlora-a = -1"),
        &["--quiet"],
    )
    .assert()
    .failure()
    .stderr(contains("workload.adapters.lora-a").and(contains("positive")));
}
