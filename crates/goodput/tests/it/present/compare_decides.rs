//! `compare` decides: an A/A comparison (one simulated engine, two seeds of its
//! noise) finds no difference; an engine 30% slower per token is called worse on
//! median TPOT at every load level, and the conclusion names the better engine.
//! On the simulator's engine model in virtual time (no sockets, no clock).

use goodput::judge::compare::{Direction, Options};
use goodput::model::predict::simulated::{ab, calibration_plan, noisy_engine, side};

#[test]
fn an_a_a_comparison_finds_no_detectable_difference() {
    let plan = calibration_plan(3, 32).unwrap();
    let c = ab(
        &plan,
        &noisy_engine(11, 1.0),
        &noisy_engine(12, 1.0),
        &Options::default(),
    );
    // Seven metrics at four load levels, and the energy per token the engine
    // model's GPU gives at each (no price: no cost rows).
    let energy = c
        .rows
        .iter()
        .filter(|r| r.metric == "J/output token")
        .count();
    assert_eq!((c.rows.len() - energy, energy), (28, 4), "{:#?}", c.rows);
    let significant: Vec<_> = c.rows.iter().filter(|r| r.significant).collect();
    assert!(significant.len() <= 1, "{significant:#?}");
    assert!(
        c.conclusion.starts_with("No detectable difference"),
        "{}",
        c.conclusion
    );
    assert_eq!(c.correction, "holm");
}

#[test]
fn thirty_percent_slower_per_token_is_worse_at_every_load() {
    let plan = calibration_plan(3, 32).unwrap();
    let c = ab(
        &plan,
        &noisy_engine(21, 1.0),
        &noisy_engine(22, 1.3),
        &Options::default(),
    );
    let tpot: Vec<_> = c
        .rows
        .iter()
        .filter(|r| r.metric == "median TPOT ms")
        .collect();
    assert_eq!(tpot.len(), 4);
    for r in &tpot {
        assert_eq!(r.direction, Direction::Worse, "{r:#?}");
        let [lo, hi] = r.ci.unwrap();
        assert!(lo > 0.1 && hi < 0.5, "x={}: {lo}..{hi}", r.x);
    }
    assert!(
        c.conclusion
            .starts_with("sim (a.json) is better than sim (b.json)"),
        "{}",
        c.conclusion
    );
    // It leads with the most telling metric: here goodput, which the slower engine
    // loses where its TPOT crosses the 55 ms bound.
    assert!(
        c.conclusion.contains("goodput req/s") || c.conclusion.contains("TPOT"),
        "{}",
        c.conclusion
    );
}

#[test]
fn json_has_the_gateable_shape() {
    let plan = calibration_plan(2, 16).unwrap();
    let inputs = [
        side(&plan, &noisy_engine(1, 1.0), "a.json"),
        side(&plan, &noisy_engine(2, 1.3), "b.json"),
    ];
    let text = goodput::judge::compare::json(&inputs, &Options::default());
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v["conclusion"].is_string(), "{v}");
    let row = &v["rows"][0];
    for key in [
        "engine",
        "baseline",
        "x",
        "metric",
        "baseline_value",
        "candidate_value",
        "change",
        "ci",
        "significant",
        "direction",
    ] {
        assert!(row.get(key).is_some(), "{key} missing: {row}");
    }
    assert_eq!(row["ci"].as_array().map(Vec::len), Some(2), "{row}");
    let directions: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["direction"].as_str())
        .collect();
    assert!(directions.contains(&"worse"), "{directions:?}");
    assert!(directions.iter().all(|d| [
        "better",
        "worse",
        "same",
        "no_detectable_difference",
        "unknown"
    ]
    .contains(d)));
}

#[test]
fn the_text_leads_with_the_conclusion_and_says_how_it_decided() {
    let plan = calibration_plan(2, 16).unwrap();
    let inputs = [
        side(&plan, &noisy_engine(1, 1.0), "a.json"),
        side(&plan, &noisy_engine(2, 1.0), "b.json"),
    ];
    let text = goodput::judge::compare::text(&inputs, &Options::default(), false);
    assert!(text.starts_with("Conclusion: "), "{text}");
    assert!(text.contains("Holm-corrected"), "{text}");
    assert!(text.contains("Welch t over trials"), "{text}");
    assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
}
