//! `goodput tune` end to end on the simulator, over a space whose best point is
//! known: an engine whose scheduler costs as much CPU time as its step, paid
//! serially unless `--async-scheduling` hides it (then TPOT doubles, past the SLO
//! at any load), and whose capacity is its `--max-num-seqs` (a request beyond it
//! waits a whole request, past the TTFT bound, with room for a fit on a busy machine). The best is `--max-num-seqs 8
//! --async-scheduling`, the runner-up `--max-num-seqs 2 --async-scheduling`.

use crate::common;

use common::cli::{goodput, succeeded};

const ENGINE: &str = "async_scheduling = false\nsched_cpu_ms = 8.0\nstep_fixed_ms = 8.0\n";

fn profile(dir: &std::path::Path) -> std::path::PathBuf {
    let cfg = dir.join("engine.toml");
    std::fs::write(&cfg, ENGINE).unwrap();
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        format!(
            r#"
name = "tune-sim"
[slo]
ttft_ms = 80
tpot_ms = 12
attainment = 0.8
[load]
points = [1]
requests_per_trial = 16
trials = 1
warmup_requests = 0
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 16
calibrate = false
[telemetry]
source = "none"
[search]
min = 1
max = 8
[engines.vllm]
kind = "sim"
args = ["--config", "{}"]
[tune]
engine = "vllm"
max_candidates_measured = 5
[tune.flags]
"--max-num-seqs" = [1, 2, 8]
"--async-scheduling" = [true, false]
"#,
            cfg.display()
        ),
    )
    .unwrap();
    p
}

/// `goodput tune PROFILE -o OUT --quiet`.
fn tune_cmd(p: &std::path::Path, out: &std::path::Path) -> assert_cmd::Command {
    let mut c = goodput();
    c.args([
        "tune",
        &p.display().to_string(),
        "-o",
        &out.display().to_string(),
        "--quiet",
    ]);
    c
}

/// Runs the tune to success: its answer and what it printed.
fn tune(p: &std::path::Path, out: &std::path::Path) -> (report::Tune, String) {
    let o = tune_cmd(p, out).output().unwrap();
    let stdout = succeeded(&o, "goodput tune");
    let t = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    (t, stdout)
}

#[test]
fn tune_picks_the_known_best_by_measurement_with_fewer_trials_than_searching_all() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile(dir.path());
    let out = dir.path().join("tune.json");
    let (t, stdout) = tune(&p, &out);
    assert_eq!(t.scheme, report::TuneScheme::ModelGuided, "{:?}", t.notes);
    // Every candidate is in the answer, in the space's order, each predicted.
    assert_eq!(t.candidates.len(), 6);
    assert_eq!(
        t.candidates[0].args,
        vec!["--max-num-seqs", "1", "--async-scheduling"]
    );
    assert_eq!(t.candidates[5].args, vec!["--max-num-seqs", "8"]);
    assert!(
        t.candidates.iter().all(|c| c.predicted.is_some()),
        "{:?}",
        t.candidates
    );
    // The known best, picked by a measurement.
    let best = t.best.as_ref().expect("a best");
    assert_eq!(
        best.args,
        vec!["--max-num-seqs", "8", "--async-scheduling"],
        "{stdout}"
    );
    assert_eq!(best.capacity.max_load, Some(8.0), "{best:?}");
    let row = &t.candidates[4];
    assert_eq!(row.measured.as_ref().and_then(|m| m.max_load), Some(8.0));
    assert!(row.report.is_some());
    assert!(
        best.command.iter().any(|w| w == "--async-scheduling"),
        "{best:?}"
    );
    // The runner-up, apart from it.
    let r = t.runner_up.as_ref().expect("a runner-up");
    assert_eq!(
        r.args,
        vec!["--max-num-seqs", "2", "--async-scheduling"],
        "{stdout}"
    );
    assert_eq!(r.judgement, report::TuneJudgement::Best, "{r:?}");
    // Without async scheduling nothing meets TPOT: measured at the space's end.
    assert_eq!(
        t.candidates[5].measured.as_ref().map(|m| m.max_load),
        Some(None)
    );
    // Fewer real searches, and fewer real trials, than searching every candidate.
    let measured = t.candidates.iter().filter(|c| c.measured.is_some()).count();
    assert!(measured < 6, "{measured} measured");
    let trials: u32 = t
        .candidates
        .iter()
        .filter_map(|c| c.measured.as_ref().map(|m| m.trials))
        .sum();
    assert_eq!(trials, t.trials_run);
    assert!(t.trials_run < t.full_search_trials_estimate, "{t:?}");
    // Each measured candidate's search is an ordinary report beside the answer.
    for c in t.candidates.iter().filter(|c| c.measured.is_some()) {
        let rep = report::read_report(&dir.path().join(c.report.as_ref().unwrap())).unwrap();
        assert!(rep.capacity.contains_key("vllm"));
    }
    // The verdict, at the end of tune and in `show`.
    assert!(
        stdout.contains("Run vllm with --max-num-seqs 8 --async-scheduling: 8 concurrent requests"),
        "{stdout}"
    );
    let shown = goodput()
        .args(["show", &out.display().to_string()])
        .output()
        .unwrap();
    let shown = succeeded(&shown, "goodput show tune.json");
    assert!(
        shown.contains("predicted") && shown.contains("measured"),
        "{shown}"
    );
    assert!(
        shown.contains("the runner-up (--max-num-seqs 2 --async-scheduling"),
        "{shown}"
    );
    // Resumed: the answer and one candidate's search removed, the others are
    // reused (no trial of theirs runs again) and the answer is the same.
    let removed = t.candidates[0]
        .report
        .clone()
        .expect("the first end measured");
    std::fs::remove_file(&out).unwrap();
    std::fs::remove_file(dir.path().join(&removed)).unwrap();
    let (again, _) = tune(&p, &out);
    let first_trials = t.candidates[0].measured.as_ref().map_or(0, |m| m.trials);
    assert_eq!(again.trials_run, first_trials, "{:?}", again.notes);
    assert_eq!(again.trials_reused, t.trials_run - first_trials);
    assert_eq!(again.best.as_ref().map(|b| &b.args), Some(&best.args));
    assert!(
        again.notes.iter().any(|n| n.starts_with("resumed:")),
        "{:?}",
        again.notes
    );
    // A profile changed since is refused, naming --fresh; --fresh starts over.
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(
        &p,
        text.replace("requests_per_trial = 16", "requests_per_trial = 15"),
    )
    .unwrap();
    tune_cmd(&p, &out)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--fresh"));
}

#[test]
fn a_candidate_that_fails_to_start_is_recorded_and_flags_the_model_does_not_speak_are_halved() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("engine.toml");
    std::fs::write(&cfg, "max_num_seqs = 2\nstep_fixed_ms = 4.0\n").unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        format!(
            r#"
name = "tune-halving"
[slo]
ttft_ms = 30
attainment = 0.8
[load]
points = [1]
requests_per_trial = 8
trials = 1
warmup_requests = 0
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 10
calibrate = false
[telemetry]
source = "none"
[search]
min = 1
max = 4
[engines.e]
kind = "sim"
args = ["--config", "{}"]
[tune]
engine = "e"
[tune.flags]
"--max-num-seqs" = [0, 1, 2]
"--seed" = [1]
"#,
            cfg.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("t.json");
    let (t, stdout) = tune(&p, &out);
    assert_eq!(t.scheme, report::TuneScheme::SuccessiveHalving);
    assert!(
        t.notes.iter().any(|n| n.contains("does not speak --seed")),
        "{:?}",
        t.notes
    );
    assert!(t.candidates[0].failure.is_some(), "{:?}", t.candidates[0]);
    assert!(t.candidates.iter().all(|c| c.predicted.is_none()));
    let best = t.best.as_ref().expect("a best");
    assert_eq!(
        best.args,
        vec!["--max-num-seqs", "2", "--seed", "1"],
        "{stdout}"
    );
}

#[test]
fn cost_picks_the_cheapest_candidate_that_meets_the_slo_at_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("engine.toml");
    std::fs::write(&cfg, "step_fixed_ms = 8.0\n").unwrap();
    let p = dir.path().join("p.toml");
    // One slot queues the load's other three requests a whole request each, past
    // the TTFT bound; four slots serve them at once.
    std::fs::write(
        &p,
        format!(
            r#"
name = "tune-cost"
[slo]
ttft_ms = 80
tpot_ms = 30
attainment = 0.8
[load]
points = [1]
requests_per_trial = 12
trials = 2
warmup_requests = 0
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 16
calibrate = false
[telemetry]
source = "none"
[engines.vllm]
kind = "sim"
args = ["--config", "{}"]
usd_per_hour = 2.0
[tune]
engine = "vllm"
objective = "cost"
load = 4
[tune.flags]
"--max-num-seqs" = [1, 4]
"#,
            cfg.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("t.json");
    let (t, stdout) = tune(&p, &out);
    assert_eq!(t.objective, report::TuneObjective::Cost);
    assert_eq!(t.scheme, report::TuneScheme::PriceOrder);
    let one = t.candidates[0].cost.as_ref().expect("measured at the load");
    assert!(!one.meets, "{one:?}");
    let best = t.best.as_ref().expect("a best");
    assert_eq!(best.args, vec!["--max-num-seqs", "4"], "{stdout}");
    let k = best.cost.as_ref().expect("its cost");
    assert!(k.meets && k.load == 4.0 && k.usd_per_hour == 2.0, "{k:?}");
    let usd = k
        .usd_per_million_good_tokens
        .and_then(|s| s.median)
        .expect("a cost per good token");
    assert!(usd > 0.0, "{k:?}");
    // Only candidates that meet qualify: no runner-up here.
    assert!(t.runner_up.is_none(), "{:?}", t.runner_up);
    assert!(
        stdout.contains("Run vllm with --max-num-seqs 4: $")
            && stdout.contains("per million good tokens"),
        "{stdout}"
    );
}

#[test]
fn max_trials_stops_the_tune_after_the_search_that_spends_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile(dir.path());
    let out = dir.path().join("tune.json");
    let o = tune_cmd(&p, &out)
        .args(["--max-trials", "1"])
        .output()
        .unwrap();
    succeeded(&o, "goodput tune --max-trials 1");
    let t: report::Tune = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let measured = t.candidates.iter().filter(|c| c.measured.is_some()).count();
    assert_eq!(measured, 1, "{:?}", t.notes);
    assert!(
        t.notes.iter().any(|n| n.contains("max_trials = 1")),
        "{:?}",
        t.notes
    );
}
