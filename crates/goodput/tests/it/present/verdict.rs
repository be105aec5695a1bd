//! The verdict's sentences on capacity results: the best engine and by how much,
//! ties, and an engine that fails even the lowest load.

use goodput::render::verdict::verdict;
use goodput::report::{self, Capacity, Report};

const REFERENCE: &str = include_str!("../../../../../tests/data/l4-gpu1-vllm.json");

fn with_capacity(loads: &[(&str, Option<f64>)]) -> Report {
    let mut r = report::io::parse_report(REFERENCE).unwrap();
    for (name, max) in loads {
        r.capacity.insert(
            name.to_string(),
            Capacity {
                mode: report::LoadMode::Concurrency,
                max_load: *max,
                passing: *max,
                failing: Some(max.unwrap_or(0.0) + 1.0),
                probes: 3,
                trials: 4,
                limited_by: report::Limit::Metric(report::SloMetric::Ttft),
                note: match max {
                    Some(_) => "meets the SLO".into(),
                    None => "fails even at the lowest load".into(),
                },
                ..Default::default()
            },
        );
    }
    r
}

#[test]
fn the_best_engine_and_its_margin_are_named() {
    let v = verdict(&with_capacity(&[
        ("a", Some(2.0)),
        ("b", Some(6.0)),
        ("c", None),
    ]))
    .join(" ");
    assert!(v.contains("b serves"), "{v}");
    assert!(v.contains("Best: b, 3x the load of the next"), "{v}");
    assert!(v.contains("c: not even"), "{v}");
}

#[test]
fn ties_name_every_engine_at_the_best_load() {
    let v = verdict(&with_capacity(&[
        ("a", Some(2.0)),
        ("b", Some(2.0)),
        ("c", Some(2.0)),
    ]))
    .join(" ");
    assert!(v.contains("a, b and c reach the same load, 2"), "{v}");
    // The report has no points of a, b, c: nothing to rank them by.
    assert!(v.contains("cannot be ranked"), "{v}");
    let v = verdict(&with_capacity(&[
        ("a", Some(4.0)),
        ("b", Some(4.0)),
        ("c", Some(1.0)),
    ]))
    .join(" ");
    assert!(v.contains("a and b reach the same load, 4"), "{v}");
    assert!(!v.contains("c tie"), "{v}");
}

const ADDITIVE: &str = include_str!("../../render_fixtures/additive.json");

/// The additive fixture with both engines' capacity at 4 req/s, and per-trial
/// goodput there of `fast` (sim-fast) and `spec` (the other), three trials each.
fn tied_at_4(fast: [f64; 3], spec: [f64; 3]) -> Report {
    let mut r = report::io::parse_report(ADDITIVE).unwrap();
    for (name, v) in [("sim-fast", fast), ("vllm <tp2> & spec", spec)] {
        let p = r.load[name].points.iter_mut().find(|p| p.x == 4.0).unwrap();
        p.trials.clear();
        p.goodput_rps = report::Stat {
            median: Some(v[1]),
            min: Some(v[0]),
            max: Some(v[2]),
            n: 3,
        };
        r.capacity.insert(
            name.to_string(),
            Capacity {
                mode: report::LoadMode::Rate,
                max_load: Some(4.0),
                passing: Some(4.0),
                failing: Some(8.0),
                ..Default::default()
            },
        );
    }
    r
}

#[test]
fn a_tie_is_ranked_by_goodput_at_the_shared_load_when_the_test_can_tell() {
    let v = verdict(&tied_at_4([3.9, 3.95, 4.0], [5.65, 5.75, 5.8])).join(" ");
    assert!(
        v.contains("sim-fast and vllm <tp2> & spec reach the same load, 4; at that load"),
        "{v}"
    );
    // The leader first, with compare's interval (the report's first engine,
    // sim-fast, is compare's baseline).
    assert!(
        v.contains("vllm <tp2> & spec leads: vllm <tp2> & spec has 45% ("),
        "{v}"
    );
    assert!(v.contains("more goodput than sim-fast"), "{v}");
}

#[test]
fn a_tie_the_test_cannot_tell_apart_says_what_would() {
    let v = verdict(&tied_at_4([3.5, 3.95, 4.4], [3.6, 4.0, 4.5])).join(" ");
    assert!(v.contains("cannot be told apart"), "{v}");
    // How far apart they could be, and what would separate a difference of the
    // size seen (2.1%, of the means over trials).
    assert!(v.contains("+2.1% (−"), "{v}");
    assert!(
        v.contains("trials each would separate a difference of 2.1%"),
        "{v}"
    );
}

#[test]
fn no_engine_passing_even_the_lowest_load_is_said_plainly() {
    let v = verdict(&with_capacity(&[("a", None), ("b", None)])).join(" ");
    assert!(v.contains("No engine serves"), "{v}");
    assert!(v.contains("even at the lowest load"), "{v}");
}

#[test]
fn the_engines_own_metrics_say_why_a_load_fails() {
    // The reference fails everywhere; give its vllm-fast-b x=1 point the server's
    // view: requests queued most of the time, and preemptions.
    let mut r = report::io::parse_report(REFERENCE).unwrap();
    let p = &mut r.load["vllm-fast-b"].points[0];
    p.server = Some(report::ServerSummary {
        catalogue: "vllm".into(),
        samples: 40,
        max_waiting: Some(3.0),
        waiting_share: Some(0.6),
        counts: report::ServerCounts {
            preemptions: Some(2.0),
            ..Default::default()
        },
        ..Default::default()
    });
    let v = verdict(&r).join(" ");
    assert!(
        v.contains("Why vllm-fast-b fails at x=1: up to 3 requests waited in the engine's queue (60% of samples): TTFT there is queueing; 2 preemptions"),
        "{v}"
    );
    // Without the server's metrics, nothing is claimed.
    let v = verdict(&report::io::parse_report(REFERENCE).unwrap()).join(" ");
    assert!(!v.contains("Why "), "{v}");
}

#[test]
fn engines_the_run_never_reached_are_not_called_failed() {
    let mut r = report::io::parse_report(REFERENCE).unwrap();
    let names: Vec<String> = r.load.keys().cloned().collect();
    for (name, kind) in names
        .iter()
        .zip([report::FailureKind::NotRun, report::FailureKind::Launch])
    {
        let e = r.load.get_mut(name).unwrap();
        e.points.clear();
        e.error = Some(report::EngineFailure {
            kind: kind.clone(),
            message: format!("{kind} for the test"),
            ..Default::default()
        });
    }
    let v = verdict(&r).join(" ");
    assert!(v.contains(&format!("{} did not run", names[0])), "{v}");
    assert!(v.contains(&format!("{} failed", names[1])), "{v}");
    assert!(!v.contains(&format!("{} failed", names[0])), "{v}");
}
