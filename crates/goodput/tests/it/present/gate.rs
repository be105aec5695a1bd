//! `goodput gate`: compare's judgement as a CI job's exit status. On the
//! simulator's engine model in virtual time (the engines of `compare_decides.rs`):
//! an A/A pair passes, a decode 10% slower fails on TPOT, a gate on a metric the
//! slowdown does not touch passes, one trial a side cannot decide; the binary
//! exits 0, 1 and 2 for them and writes the Markdown summary where asked and to
//! `$GITHUB_STEP_SUMMARY`.

use crate::common;

use common::cli::{goodput, Scratch};
use goodput::judge::compare::gate::{gate, Outcome};
use goodput::judge::compare::{Input, Options};
use goodput::model::predict::simulated::{calibration_plan, noisy_engine, side};

fn pair(trials: u32, slower: f64) -> [Input; 2] {
    let plan = calibration_plan(trials, 32).unwrap();
    [
        side(&plan, &noisy_engine(11, 1.0), "base.json"),
        side(&plan, &noisy_engine(12, slower), "cand.json"),
    ]
}

#[test]
fn the_gate_passes_an_a_a_pair_fails_a_slower_decode_and_cannot_decide_one_trial() {
    let opts = Options::default();
    let g = gate(&pair(3, 1.0), &[], &opts);
    assert_eq!(g.outcome, Outcome::Pass, "{}", g.line);
    let g = gate(&pair(3, 1.1), &[], &opts);
    assert_eq!(g.outcome, Outcome::Fail, "{}", g.line);
    assert!(g.line.contains("median TPOT ms"), "{}", g.line);
    assert!(
        g.markdown.starts_with("## goodput gate: FAIL"),
        "{}",
        g.markdown
    );
    assert!(g.markdown.contains("**worse**"), "{}", g.markdown);
    // Gated on the prefill side only, a decode slowdown does not fail it.
    let g = gate(&pair(3, 1.1), &["median TTFT ms"], &opts);
    assert_ne!(g.outcome, Outcome::Fail, "{}", g.markdown);
    // One trial a side: nothing testable, no answer.
    let g = gate(&pair(1, 1.1), &[], &opts);
    assert_eq!(g.outcome, Outcome::Undecided, "{}", g.line);
    assert!(g.line.contains("--trials 2"), "{}", g.line);
}

#[test]
fn the_binary_exits_by_the_gate_and_writes_the_summary() {
    let dir = Scratch::new();
    let write = |name: &str, input: &Input| {
        let path = dir.path(name);
        std::fs::write(&path, goodput::report::io::to_json(&input.report).unwrap()).unwrap();
        path
    };
    let [base, slow] = pair(3, 1.1);
    let b = write("base.json", &base);
    let s = write("slow.json", &slow);
    let summary = dir.path("summary.md");
    let md = dir.path("gate.md");
    let out = goodput()
        .args([
            "gate",
            &b.to_string_lossy(),
            &s.to_string_lossy(),
            "--markdown",
        ])
        .arg(&md)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        common::cli::text(&out.stdout)
    );
    assert!(common::cli::text(&out.stdout).starts_with("gate: FAIL"));
    let written = std::fs::read_to_string(&md).unwrap();
    assert!(written.contains("| median TPOT ms |"), "{written}");
    assert_eq!(std::fs::read_to_string(&summary).unwrap(), written);
    // The baseline against itself passes.
    goodput()
        .args(["gate", &b.to_string_lossy(), &b.to_string_lossy()])
        .env_remove("GITHUB_STEP_SUMMARY")
        .assert()
        .code(0);
    // An unknown metric is a usage error naming the keys.
    let out = goodput()
        .args([
            "gate",
            &b.to_string_lossy(),
            &s.to_string_lossy(),
            "--metric",
            "tpot",
        ])
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(common::cli::text(&out.stderr).contains("median_tpot_ms"));
}
