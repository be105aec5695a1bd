//! Each warning rule: when it fires and when it does not.

use goodput::render::warnings::{warnings, Warning, WarningKind};
use goodput::render::warnings_text;
use goodput::report::{self, EngineFailure, Outlier, Report, RunInfo, RunStatus, Stat, TrialInfo};

mod failures;
mod gpu_and_trials;
mod load;

const REFERENCE: &str = include_str!("../../../../../../tests/data/l4-gpu1-vllm.json");

fn reference() -> Report {
    report::io::parse_report(REFERENCE).expect("reference parses")
}

fn stat(v: f64, n: u32) -> Stat {
    Stat {
        median: Some(v),
        min: Some(v),
        max: Some(v),
        n,
    }
}

/// One engine, one point at x=1, that triggers no rule: 200 requests in each of two
/// trials, within the SLO, a cool GPU, some good requests.
fn clean() -> Report {
    let mut r = reference();
    r.load.truncate(1);
    let e = &mut r.load[0];
    e.points.truncate(1);
    let p = &mut e.points[0];
    p.completed = vec![200, 200];
    p.median_ttft_ms = stat(400.0, 2);
    p.median_tpot_ms = stat(40.0, 2);
    p.goodput_rps = stat(0.5, 2);
    p.request_throughput = stat(0.5, 2);
    p.output_throughput = stat(64.0, 2);
    if let Some(g) = p.gpu.as_mut() {
        g.thermal_share = Some(0.0);
        g.median_sm_mhz = stat(1900.0, 2);
    }
    r
}

fn point(r: &mut Report) -> &mut report::Point {
    &mut r.load[0].points[0]
}

fn kinds(r: &Report) -> Vec<WarningKind> {
    warnings(r).into_iter().map(|w| w.kind).collect()
}

fn only(r: &Report, kind: WarningKind) -> Warning {
    let ws: Vec<Warning> = warnings(r).into_iter().filter(|w| w.kind == kind).collect();
    assert_eq!(ws.len(), 1, "expected one {kind:?}: {ws:#?}");
    ws.into_iter().next().expect("one warning")
}

fn concurrency_run(r: &mut Report, mode: &str) {
    r.run = Some(RunInfo {
        schema: report::SCHEMA.into(),
        load_mode: report::LoadMode::from_word(mode),
        planned_trials: 2,
        requests_per_trial: 200,
        ..Default::default()
    });
}

#[test]
fn clean_report_has_no_warnings() {
    let r = clean();
    assert_eq!(kinds(&r), vec![]);
    assert_eq!(warnings_text(&r, true), "No warnings.\n");
}

#[test]
fn reference_gets_the_warnings_its_readme_asks_for() {
    let r = reference();
    let ws = warnings(&r);
    let count = |k| ws.iter().filter(|w| w.kind == k).count();
    assert_eq!(
        count(WarningKind::ThermalThrottle),
        6,
        "every point is throttled"
    );
    assert_eq!(
        count(WarningKind::FewRequestsForP99),
        6,
        "16 requests per trial"
    );
    assert_eq!(count(WarningKind::GoodputZero), 6);
    assert_eq!(count(WarningKind::MissingTrials), 1);
    assert_eq!(
        count(WarningKind::KvPoolOverflow),
        0,
        "prompt lengths unknown"
    );
    assert_eq!(
        count(WarningKind::Outliers),
        0,
        "the slowest request is at most 2x the median"
    );
    assert_eq!(count(WarningKind::LoadNotReached), 0, "16 requests, x <= 4");
    let missing = only(&r, WarningKind::MissingTrials);
    assert_eq!(
        (missing.engine.as_str(), missing.x),
        ("vllm-no-async", Some(4.0))
    );
    assert!(
        missing.message.contains("1 of 2 trials"),
        "{}",
        missing.message
    );
    let zero = ws
        .iter()
        .find(|w| w.kind == WarningKind::GoodputZero)
        .expect("goodput zero");
    assert!(
        zero.message
            .contains("median TTFT 1437.2 ms is 1.44x the 1000 ms SLO"),
        "{}",
        zero.message
    );
    let text = warnings_text(&r, false);
    assert!(text.contains("GPU thermally throttled"));
    assert!(text.contains("vllm-fast-b x=1, 4: p99 TTFT and TPOT come from 16 requests"));
}

#[test]
fn warnings_name_engine_and_load_level_in_text() {
    let mut r = clean();
    point(&mut r).estimated_tokens = Some(3);
    let text = warnings_text(&r, false);
    assert!(text.starts_with("Warnings: 1 kind, 1 in all\n"), "{text}");
    assert!(
        text.contains("    vllm-fast-b x=1: output tokens of 3 requests"),
        "{text}"
    );
    assert!(
        text.contains("    -> Make the server report usage"),
        "{text}"
    );
}
