//! The simulator speaks vLLM's engine flags: `goodput sim --max-num-seqs N ...`
//! overrides its config's keys, on the command line and from a profile's `args`.

use crate::common;

use common::cli::{contains, goodput, PredicateBooleanExt, Scratch};
use common::load_share::start_sim_with;

/// One request at a time against eight, at concurrency 4: the first queues, so
/// its median TTFT is several whole requests long, the second's about a step.
const SEQS: &str = r#"
name = "sim-flags"
[slo]
ttft_ms = 10000
tpot_ms = 1000
[load]
points = [4]
requests_per_trial = 16
trials = 1
request_timeout_s = 30
[workload]
input_tokens = 32
output_tokens = 32
[engines.one]
kind = "sim"
preset = "default"
args = ["--time-scale", "4", "--max-num-seqs", "1"]
[engines.eight]
kind = "sim"
preset = "default"
args = ["--time-scale", "4", "--max-num-seqs=8"]
"#;

#[test]
fn max_num_seqs_from_a_profiles_args_makes_requests_queue() {
    let dir = Scratch::new();
    dir.run(SEQS, &["--quiet"]).assert().success();
    let r = dir.report();
    let ttft = |engine: &str| {
        let p = &r.load[engine].points[0];
        assert_eq!(p.completed, vec![16], "{engine}");
        p.median_ttft_ms.median.unwrap()
    };
    let (one, eight) = (ttft("one"), ttft("eight"));
    // The default preset's request is ~33 steps of ~12 ms, 100 ms at
    // --time-scale 4: a request behind three others waits about 300 ms.
    assert!(one > 100.0, "--max-num-seqs 1: median TTFT {one} ms");
    assert!(
        one > 5.0 * eight,
        "--max-num-seqs 1: {one} ms, --max-num-seqs 8: {eight} ms"
    );
    // The engine states the limit it was given (its /version), as vLLM would.
    let env = r.environment.as_ref().unwrap();
    for (engine, seqs) in [("one", 1), ("eight", 8)] {
        assert_eq!(
            env.engines[engine].limits["max_num_seqs"].value, seqs,
            "{engine}"
        );
    }
}

#[test]
fn the_kv_line_of_the_banner_follows_the_block_flags() {
    let kv_line = |args: &[&str]| {
        let sim = start_sim_with(args);
        sim.banner
            .iter()
            .find(|l| l.contains("GPU KV cache size"))
            .cloned()
            .unwrap_or_else(|| panic!("no KV line: {:?}", sim.banner))
    };
    // vllm-fast-b: 183 blocks of 16.
    assert!(kv_line(&["--preset", "vllm-fast-b"]).ends_with("GPU KV cache size: 2,928 tokens"));
    assert!(kv_line(&[
        "--preset",
        "vllm-fast-b",
        "--num-gpu-blocks-override",
        "300"
    ])
    .ends_with("GPU KV cache size: 4,800 tokens"));
    assert!(kv_line(&[
        "--preset",
        "vllm-fast-b",
        "--num-gpu-blocks-override=300",
        "--block-size=32",
    ])
    .ends_with("GPU KV cache size: 9,600 tokens"));
}

#[test]
fn an_override_the_simulator_cannot_take_is_a_usage_error_naming_the_flag() {
    // 10 blocks of 16 cannot hold one 2,048-token request.
    goodput()
        .args([
            "sim",
            "--preset",
            "vllm-fast-b",
            "--num-gpu-blocks-override",
            "10",
        ])
        .args(["--port", "0"])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(2)
        .stderr(contains(
            "--num-gpu-blocks-override 10: max_model_len = 2048 is out of range: must be 1..=160",
        ));
    goodput()
        .args(["sim", "--max-num-seqs", "0", "--port", "0"])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(2)
        .stderr(contains(
            "--max-num-seqs 0: max_num_seqs = 0 is out of range",
        ));
    goodput()
        .args(["sim", "--speculative-config", r#"{"method": "eagle3"}"#])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(2)
        .stderr(contains("--speculative-config").and(contains("supported: ngram")));
}
