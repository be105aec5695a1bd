//! The readers on the real tools' files (`tests/fixtures/peers/`, how each was made
//! in its README): the tool's own figures come through exactly.

use std::path::PathBuf;

use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/peers")
        .join(rel)
}

fn json(rel: &str) -> Value {
    let text = std::fs::read_to_string(fixture(rel)).expect("the fixture");
    serde_json::from_str(&text).expect("JSON")
}

fn only_point(r: &report::Report) -> &report::Point {
    let e = r.load.values().next().expect("one engine");
    assert_eq!(e.points.len(), 1);
    &e.points[0]
}

#[test]
fn a_detailed_vllm_result_keeps_vllms_figures_and_gains_the_grids() {
    let v = json("vllm/detailed.json");
    let r = super::read(&fixture("vllm/detailed.json")).expect("read");
    assert_eq!(r.profile, "vllm bench serve");
    assert_eq!(
        r.run.as_ref().map(|r| r.load_mode.as_str()),
        Some("concurrency")
    );
    let p = only_point(&r);
    assert_eq!(p.x, 2.0);
    for (stat, key) in [
        (&p.median_ttft_ms, "median_ttft_ms"),
        (&p.p99_ttft_ms, "p99_ttft_ms"),
        (&p.median_tpot_ms, "median_tpot_ms"),
        (&p.p99_tpot_ms, "p99_tpot_ms"),
        (&p.median_itl_ms, "median_itl_ms"),
        (&p.p99_itl_ms, "p99_itl_ms"),
        (&p.output_throughput, "output_throughput"),
        (&p.request_throughput, "request_throughput"),
        (&p.goodput_rps, "request_goodput"),
    ] {
        assert_eq!(stat.median, v[key].as_f64(), "{key}");
        assert_eq!(stat.n, 1, "{key}");
    }
    assert_eq!(p.completed, vec![20]);
    assert_eq!(p.ttft_quantiles_ms.len(), 51);
    // The grid's ends are the extreme requests: the min and max of vLLM's `ttfts`.
    let ttfts: Vec<f64> = v["ttfts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .collect();
    let min = ttfts.iter().copied().fold(f64::INFINITY, f64::min) * 1000.0;
    assert_eq!(p.ttft_quantiles_ms[0], min);
    assert_eq!(p.mean_output_tokens.and_then(|s| s.median), Some(16.0));
}

#[test]
fn a_summary_vllm_result_at_a_rate_says_what_it_lacks() {
    let v = json("vllm/summary.json");
    let r = super::read(&fixture("vllm/summary.json")).expect("read");
    assert_eq!(r.run.as_ref().map(|r| r.load_mode.as_str()), Some("rate"));
    let p = only_point(&r);
    assert_eq!(p.x, 4.0);
    assert_eq!(
        p.median_e2el_ms.and_then(|s| s.median),
        v["median_e2el_ms"].as_f64()
    );
    assert!(p.ttft_quantiles_ms.is_empty());
    let notices = r
        .run
        .as_ref()
        .map(|r| {
            let texts: Vec<&str> = r.notices.iter().map(|n| n.text.as_str()).collect();
            texts.join(" | ")
        })
        .unwrap_or_default();
    assert!(notices.contains("--save-detailed"), "{notices}");
    assert!(notices.contains("without --goodput"), "{notices}");
    assert_eq!(p.extra["vllm"]["p90_ttft_ms"], v["p90_ttft_ms"]);
}

#[test]
fn guidellms_benchmarks_keep_its_figures_under_goodputs_names() {
    let v = json("guidellm/benchmarks.json");
    let b = &v["benchmarks"][0]["metrics"];
    let r = super::read(&fixture("guidellm/benchmarks.json")).expect("read");
    assert!(r.profile.starts_with("GuideLLM 0.8"), "{}", r.profile);
    let p = only_point(&r);
    assert_eq!(p.x, 2.0);
    assert_eq!(
        p.median_ttft_ms.median,
        b["time_to_first_token_ms"]["successful"]["median"].as_f64()
    );
    assert_eq!(
        p.p99_ttft_ms.median,
        b["time_to_first_token_ms"]["successful"]["percentiles"]["p99"].as_f64()
    );
    assert_eq!(
        p.median_tpot_ms.median,
        b["inter_token_latency_ms"]["successful"]["median"].as_f64()
    );
    assert_eq!(
        p.request_throughput.median,
        b["requests_per_second"]["successful"]["mean"].as_f64()
    );
    assert_eq!(p.completed, vec![20]);
    assert_eq!(p.ttft_quantiles_ms.len(), 51);
    assert_eq!(p.median_itl_ms.n, 0, "GuideLLM has no per-chunk gaps");
    let header = crate::render::table::header_text(&r);
    assert!(
        header.contains("as GuideLLM 0.8.1 ran it: 64 prompt tokens, 16 out"),
        "{header}"
    );
}

#[test]
fn aiperfs_export_keeps_its_figures_and_reads_the_requests_beside_it() {
    let v = json("aiperf/profile_export_aiperf.json");
    let r = super::read(&fixture("aiperf/profile_export_aiperf.json")).expect("read");
    assert!(r.profile.starts_with("AIPerf 0.13"), "{}", r.profile);
    let p = only_point(&r);
    assert_eq!(p.x, 2.0);
    assert_eq!(
        p.median_ttft_ms.median,
        v["time_to_first_token"]["p50"].as_f64()
    );
    assert_eq!(
        p.p99_tpot_ms.median,
        v["inter_token_latency"]["p99"].as_f64()
    );
    assert_eq!(
        p.median_itl_ms.median,
        v["inter_chunk_latency"]["p50"].as_f64()
    );
    assert_eq!(
        p.request_throughput.median,
        v["request_throughput"]["avg"].as_f64()
    );
    assert_eq!(p.completed, vec![20]);
    assert_eq!(p.ttft_quantiles_ms.len(), 51, "from profile_export.jsonl");
}

#[test]
fn a_goodput_report_and_garbage_read_as_before() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"backend\": 1").expect("write");
    let e = format!("{:#}", super::read(&bad).expect_err("not JSON"));
    assert!(e.contains("bad.json"), "{e}");
    let other = dir.path().join("other.json");
    std::fs::write(&other, "{\"hello\": 1}").expect("write");
    let e = format!("{:#}", super::read(&other).expect_err("not a report"));
    assert!(e.contains("not a goodput report"), "{e}");
    let reference =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/l4-gpu1-vllm.json");
    let r = super::read(&reference).expect("the reference report");
    assert_eq!(r.profile, "l4-gpu1");
    assert!(r.run.is_none(), "read as it is, not converted");
}
