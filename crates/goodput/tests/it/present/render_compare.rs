//! `compare` pairs points only when they measure the same thing: the same load mode
//! (x means the same quantity), the same workload and, for goodput, the same SLO.

use crate::common;

use common::reports::{additive, reference};

use goodput::report::{self, Report, RunInfo};

/// The reference's numbers as if a goodput run in `mode` with `workload` made them.
fn run_of(mode: &str, workload: serde_json::Value) -> Report {
    let mut r = reference();
    r.run = Some(RunInfo {
        schema: report::SCHEMA.into(),
        load_mode: report::LoadMode::from_word(mode),
        planned_trials: 2,
        requests_per_trial: 16,
        workload,
        ..Default::default()
    });
    r
}

fn synthetic(input: u32) -> serde_json::Value {
    serde_json::json!({"kind": "synthetic", "input_tokens": input, "output_tokens": 128})
}

fn compare(a: Report, b: Report) -> String {
    goodput::judge::compare::reports_text(
        &[("base.json".to_string(), a), ("cand.json".to_string(), b)],
        false,
    )
}

#[test]
fn a_rate_run_is_not_paired_with_a_concurrency_run() {
    let out = compare(
        run_of("concurrency", synthetic(512)),
        run_of("rate", synthetic(512)),
    );
    assert!(
        out.contains("Not compared: base.json ran in concurrency mode and cand.json in rate mode"),
        "{out}"
    );
    for word in ["worse", "better", "%"] {
        assert!(!out.contains(word), "{word} in {out}");
    }
}

#[test]
fn a_reference_report_counts_as_concurrency() {
    let out = compare(reference(), additive());
    assert!(
        out.contains("base.json ran in concurrency mode and cand.json in rate mode"),
        "{out}"
    );
}

#[test]
fn different_workloads_are_not_paired() {
    let out = compare(
        run_of("concurrency", synthetic(512)),
        run_of("concurrency", synthetic(2048)),
    );
    assert!(out.contains("Not compared: the workloads differ"), "{out}");
    assert!(out.contains("\"input_tokens\":2048"), "{out}");
    assert!(!out.contains("median TTFT ms"), "{out}");
}

#[test]
fn different_slos_compare_latency_but_not_goodput() {
    let base = run_of("concurrency", synthetic(512));
    let mut cand = run_of("concurrency", synthetic(512));
    cand.slo.bounds.set(report::SloMetric::Ttft, Some(2000.0));
    let out = compare(base, cand);
    assert!(out.contains("median TTFT ms"), "{out}");
    assert!(
        out.contains("goodput req/s and SLO attainment not compared: the SLOs differ (base.json: TTFT ≤ 1000 ms"),
        "{out}"
    );
    let rows = out.lines().filter(|l| l.contains("goodput req/s")).count();
    assert_eq!(rows, 1, "only the note names goodput: {out}");
}

#[test]
fn alike_runs_are_compared_in_full_without_notes() {
    let out = compare(
        run_of("concurrency", synthetic(512)),
        run_of("concurrency", synthetic(512)),
    );
    assert!(!out.contains("Not compared"), "{out}");
    assert!(!out.contains("not recorded"), "{out}");
    assert!(!out.contains("SLOs differ"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.contains("goodput req/s")).count(),
        6,
        "one goodput row per engine and load level: {out}"
    );
}

#[test]
fn an_unrecorded_workload_is_said() {
    let out = compare(reference(), reference());
    assert!(
        out.contains("workload not recorded in base.json, cand.json"),
        "{out}"
    );
}

#[test]
fn attainment_is_compared_beside_goodput_and_only_under_the_same_slo() {
    let with = |a: f64| {
        let mut r = run_of("concurrency", synthetic(800));
        for e in r.load.values_mut() {
            for p in &mut e.points {
                // Three trials (all of them in {median,min,max}), tightly spread: a
                // difference a two-trial t test over a whole table could not show.
                p.attainment = Some(report::Stat {
                    median: Some(a),
                    min: Some(a - 0.01),
                    max: Some(a + 0.01),
                    n: 3,
                });
            }
        }
        r
    };
    let text = compare(with(0.5), with(0.95));
    let row = text
        .lines()
        .find(|l| l.contains("SLO attainment"))
        .unwrap_or_else(|| panic!("no attainment row: {text}"));
    assert!(row.contains("better"), "higher attainment is better: {row}");
    let mut other = with(0.95);
    other.slo.bounds.set(report::SloMetric::Ttft, Some(2000.0));
    let text = compare(with(0.5), other);
    let rows = text
        .lines()
        .filter(|l| l.contains("SLO attainment") && !l.contains("not compared"));
    assert_eq!(rows.count(), 0, "only the note names attainment: {text}");
    // Reports without attainment (the reference) get no empty row.
    let text = compare(reference(), reference());
    assert!(!text.contains("SLO attainment"), "{text}");
}

/// One server run twice, named `server` once and after its model the next time:
/// two reports of one engine each pair those engines (#37), and say so; with
/// several engines a side, pairing stays by name.
#[test]
fn two_single_engine_reports_pair_whatever_the_names() {
    let mut base = reference();
    base.load.retain(|n, _| n == "vllm-fast-b");
    let mut cand = reference();
    cand.load.retain(|n, _| n == "vllm-fast-b");
    let result = cand.load.shift_remove("vllm-fast-b").unwrap();
    cand.load.insert("server".into(), result);
    let reports = vec![
        ("a.json".to_string(), base.clone()),
        ("b.json".to_string(), cand),
    ];
    let out = goodput::judge::compare::reports_text(&reports, false);
    assert!(out.contains("named differently"), "{out}");
    assert!(out.contains("server (b.json)"), "{out}");
    assert!(!out.contains("only in"), "{out}");
    // Several engines a side: by name only.
    let mut two = reference();
    two.load
        .retain(|n, _| n == "vllm-ngram" || n == "vllm-no-async");
    let reports = vec![
        ("a.json".to_string(), reference()),
        ("b.json".to_string(), two),
    ];
    let out = goodput::judge::compare::reports_text(&reports, false);
    assert!(out.contains("engine vllm-fast-b: only in a.json"), "{out}");
}
