//! Embeddings end to end (#40, item 4): runs on the simulator's embedding model
//! (`[embeddings]` in its configuration) with `api = "embeddings"` and
//! `[workload] inputs`: the report gives the whole answer's latency (a pass of
//! 30 ms reads as a median E2EL near 30 ms), requests, inputs and input tokens
//! per second, and no TTFT or TPOT; a capacity search finds the knee of a
//! one-request-a-pass engine under an E2EL bound; `compare` judges two runs on
//! E2EL and inputs/s; bounds an embeddings answer cannot have are refused; a
//! generative model's 404 is counted per request.

use crate::common;

use common::cli::{contains, goodput, PredicateBooleanExt, Scratch};

/// A simulated embedding model whose every pass takes `pass_ms`, one request a
/// pass when `one_a_pass`.
fn sim_config(pass_ms: f64, one_a_pass: bool) -> String {
    let batch = if one_a_pass {
        "max_batch_tokens = 1\n"
    } else {
        ""
    };
    format!(
        "model = \"embed\"\n[embeddings]\npass_ms = {pass_ms}\nper_token_ms = 0.0\n{batch}dimension = 32\n"
    )
}

fn profile(name: &str, cfg: &str, points: &str, slo: &str) -> String {
    format!(
        r#"
name = "{name}"
[slo]
{slo}
[load]
points = {points}
requests_per_trial = 12
trials = 1
warmup_requests = 1
request_timeout_s = 30
[workload]
input_tokens = 16
inputs = 4
calibrate = false
[telemetry]
source = "none"
[engines.embed]
kind = "sim"
api = "embeddings"
args = ["--config", "{cfg}"]
"#
    )
}

#[test]
fn a_run_reports_the_whole_answers_latency_and_inputs_per_second() {
    let dir = Scratch::new();
    let cfg = dir.write("sim.toml", &sim_config(30.0, false));
    let p = profile(
        "embed-sim",
        &cfg.display().to_string(),
        "[1]",
        "e2el_ms = 1000",
    );
    dir.run(&p, &["--quiet"]).assert().success();
    let r = dir.report();
    let point = &r.load["embed"].points[0];
    let e = point.embeddings.as_ref().expect("an embeddings block");
    assert_eq!((e.inputs_per_request, e.dimension), (4, Some(32)));
    // One request at a time, each a pass of 30 ms: a median near 30 ms.
    let e2el = point.median_e2el_ms.as_ref().unwrap().median.unwrap();
    assert!((29.5..45.0).contains(&e2el), "median E2EL {e2el} ms");
    let rps = point.request_throughput.median.unwrap();
    let ips = e.input_throughput.median.unwrap();
    assert!(
        (ips / rps - 4.0).abs() < 1e-6,
        "{ips} inputs/s, {rps} req/s"
    );
    assert!(e.input_token_throughput.median.unwrap() > ips);
    // Nothing streamed: no TTFT, TPOT, ITL or output tokens.
    for s in [
        &point.median_ttft_ms,
        &point.median_tpot_ms,
        &point.median_itl_ms,
        &point.output_throughput,
    ] {
        assert_eq!(s.n, 0, "{s:?}");
    }
    assert!(point.ttft_quantiles_ms.is_empty());
    assert_eq!(point.slo_check.as_ref().unwrap().good, 12);
    // The records hold what each answer carried.
    let records = std::fs::read_to_string(dir.path("r.requests.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(records.lines().next().unwrap()).unwrap();
    assert_eq!(first["embeddings"]["inputs"], 4);
    assert_eq!(first["embeddings"]["returned"], 4);
    assert_eq!(first["embeddings"]["dimension"], 32);
    assert!(first["prompt_tokens"].as_u64().unwrap() >= 4 * 16);
    assert!(first["chunks"].as_array().unwrap().is_empty());

    // Text, Markdown and HTML show the embeddings table, and no TTFT figure.
    let show = |format: &str| {
        let o = goodput()
            .args(["show", &dir.arg("r.json"), "--format", format])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let text = show("table");
    assert!(
        text.contains("Embeddings") && text.contains("inputs/s"),
        "{text}"
    );
    assert!(text.contains("n/a"), "{text}");
    let md = show("markdown");
    assert!(
        md.contains("**Embeddings") && md.contains("| n/a |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.path("r.html")).expect("the page");
    assert!(html.contains("id=\"embeddings\""), "no embeddings section");
}

#[test]
fn a_search_finds_an_embeddings_capacity_and_compare_judges_two_runs() {
    let dir = Scratch::new();
    // One request a pass of 40 ms: x requests in flight wait about 40·x ms, so
    // E2EL <= 150 ms holds to x = 3 and fails from x = 4 (160 ms).
    let cfg = dir.write("sim.toml", &sim_config(40.0, true));
    let search = "[search]\nmin = 1\nmax = 8\n";
    let p = profile(
        "embed-search",
        &cfg.display().to_string(),
        "[1]",
        "e2el_ms = 150",
    );
    let p = dir.write("s.toml", &format!("{p}{search}"));
    let out = dir.path("s.json");
    let o = goodput()
        .args([
            "search",
            &p.display().to_string(),
            "-o",
            &out.display().to_string(),
            "--quiet",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = goodput::report::read_report(&out).unwrap();
    let c = &r.capacity["embed"];
    assert_eq!((c.max_load, c.failing), (Some(3.0), Some(4.0)), "{c:?}");
    assert_eq!(
        c.limited_by,
        goodput::report::Limit::Metric(goodput::report::SloMetric::E2el),
        "{c:?}"
    );

    // Two runs of the same engine at two levels: compare tests E2EL and inputs/s,
    // and no streamed figure.
    let p = dir.write(
        "c.toml",
        &profile("c", &cfg.display().to_string(), "[1, 2]", "e2el_ms = 150"),
    );
    for out in ["a.json", "b.json"] {
        goodput()
            .args([
                "run",
                &p.display().to_string(),
                "-o",
                &dir.arg(out),
                "--quiet",
            ])
            .assert()
            .success();
    }
    goodput()
        .args(["compare", &dir.arg("a.json"), &dir.arg("b.json")])
        .assert()
        .success()
        .stdout(
            contains("median E2EL ms")
                .and(contains("inputs/s"))
                .and(contains("TTFT").not())
                .and(contains("output tok/s").not()),
        );
}

#[test]
fn bounds_an_embeddings_answer_cannot_have_are_refused() {
    let dir = Scratch::new();
    let cfg = dir.write("sim.toml", &sim_config(1.0, false));
    let p = profile(
        "embed-slo",
        &cfg.display().to_string(),
        "[1]",
        "ttft_ms = 100",
    );
    dir.run(&p, &["--quiet"])
        .assert()
        .failure()
        .stderr(contains("slo.ttft_ms").and(contains("e2el_ms")));
    let p = profile(
        "embed-slo",
        &cfg.display().to_string(),
        "[1]",
        "e2el_ms = 100",
    );
    dir.run(&p, &["--quiet", "--slo", "tpot:10"])
        .assert()
        .failure()
        .stderr(contains("tpot").and(contains("embeddings")));
}

#[test]
fn a_generative_model_asked_for_embeddings_fails_each_request_by_name() {
    let dir = Scratch::new();
    let p = r#"
name = "not-embed"
[slo]
e2el_ms = 1000
[load]
points = [1]
requests_per_trial = 3
trials = 1
warmup_requests = 0
request_timeout_s = 30
[workload]
input_tokens = 8
inputs = 2
calibrate = false
[telemetry]
source = "none"
[engines.gen]
kind = "sim"
preset = "default"
api = "embeddings"
"#;
    // 4: no request succeeded.
    dir.run(p, &["--quiet"])
        .assert()
        .code(4)
        .stdout(contains("No request succeeded"));
    let r = dir.report();
    let point = &r.load["gen"].points[0];
    assert_eq!(point.errors.get("http_404"), Some(&3), "{:?}", point.errors);
    assert!(point
        .first_error
        .as_deref()
        .unwrap()
        .contains("/v1/embeddings"));
}
