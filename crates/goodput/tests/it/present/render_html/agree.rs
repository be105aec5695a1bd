//! The goodput cell's colour, the chart strips and the verdict say the same of
//! every point of every example report: the point's one SLO judgement.

use goodput::model::predict::simulated::{calibration_plan, noisy_engine, side};
use goodput::report::Judgement;

use super::charts::{color_of, strip_bars};
use super::*;

/// The example reports: the reference, the additive fixture, the additive fixture
/// with a point one request decided, and a noisy simulated run with few requests
/// (points that meet, fail and are undecided).
fn examples() -> Vec<Value> {
    let mut one = json(ADDITIVE);
    let p = &mut one["load"]["sim-fast"]["points"][0];
    p["slo_check"] = Value::Null;
    p["trials"] = serde_json::json!([]);
    p["completed"] = serde_json::json!([8]);
    p["good"] = serde_json::json!([7]);
    p["failed"] = serde_json::json!([0]);
    let plan = calibration_plan(2, 12).expect("plan");
    let sim = side(&plan, &noisy_engine(5, 1.0), "sim.json").report;
    vec![
        json(REFERENCE),
        json(ADDITIVE),
        one,
        serde_json::to_value(sim).expect("report"),
    ]
}

/// The x values listed after `lead` in a verdict sentence (`x=1, 2, 4`).
fn listed(sentence: &str, lead: &str) -> Vec<f64> {
    let Some(at) = sentence.find(lead) else {
        return Vec::new();
    };
    let rest = &sentence[at + lead.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',' || c == ' '))
        .unwrap_or(rest.len());
    rest[..end]
        .split(',')
        .filter_map(|s| s.trim().trim_end_matches('.').parse().ok())
        .collect()
}

#[test]
fn cells_strips_and_verdict_show_the_one_judgement() {
    let mut seen = std::collections::HashSet::new();
    for v in examples() {
        let r = parse(&v.to_string());
        let page = page_of(&v);
        let heads: Vec<String> = page
            .select(&sel("table.results thead th"))
            .map(text)
            .collect();
        let col = heads
            .iter()
            .position(|h| h == "goodput req/s")
            .expect("goodput column");
        let rows: Vec<ElementRef> = page
            .select(&sel("table.results tbody tr"))
            .filter(|r| r.select(&sel("td.failed")).next().is_none())
            .collect();
        let pts = points(&v);
        assert_eq!(rows.len(), pts.len());
        let verdict = render::verdict::verdict(&r);
        let fig = figure(&page, "goodput");
        let log = fig
            .select(&sel("svg text"))
            .any(|t| text(t).ends_with("log scale"));
        let map = axis_map(&x_ticks(fig), log);
        for (row, (engine, p)) in rows.iter().zip(&pts) {
            let j = judgement(&v, p);
            seen.insert(j);
            let cell = row.select(&sel("td")).nth(col).expect("goodput cell");
            let class = cell.value().attr("class").unwrap_or("");
            let want = match j {
                Some(Judgement::Meets) => "good",
                Some(Judgement::Fails) => "bad",
                Some(Judgement::Undecided) => "warn",
                _ => "",
            };
            assert_eq!(class, want, "{engine} x={}: cell", p["x"]);
            let px = map(f(&p["x"]));
            let marked = strip_bars(fig, &color_of(fig, engine))
                .iter()
                .any(|b| b.0 <= px && px <= b.1);
            assert_eq!(
                marked,
                j == Some(Judgement::Meets),
                "{engine} x={}: strip",
                p["x"]
            );
            let x = f(&p["x"]);
            let mine = verdict
                .iter()
                .find(|s| s.starts_with(&format!("{engine} ")));
            let says = |lead: &str| mine.is_some_and(|s| listed(s, lead).contains(&x));
            let every = mine.is_some_and(|s| s.contains("meets the SLO at every measured load"));
            assert_eq!(
                says("meets the SLO at x=") || every,
                j == Some(Judgement::Meets),
                "{engine} x={x}: {verdict:?}"
            );
            if mine.is_some() {
                assert_eq!(
                    says("not at x=") || says("at no measured load (x="),
                    j == Some(Judgement::Fails),
                    "{engine} x={x}: {verdict:?}"
                );
                assert_eq!(
                    says("undecided at x="),
                    j == Some(Judgement::Undecided),
                    "{engine} x={x}: {verdict:?}"
                );
            }
        }
    }
    for j in [Judgement::Meets, Judgement::Fails, Judgement::Undecided] {
        assert!(seen.contains(&Some(j)), "no example point is {j}: {seen:?}");
    }
}

#[test]
fn a_searched_capacity_is_marked_on_the_charts_as_a_dashed_line() {
    let mut v = json(ADDITIVE);
    v["capacity"] = serde_json::json!({
        "sim-fast": {"mode": "rate", "max_load": 4.0, "passing": 4.0, "failing": 8.0,
                     "attainment_at_max": 0.95, "probes": 3, "trials": 9,
                     "limited_by": "ttft", "note": "meets the SLO at 4 requests/s"}
    });
    let page = page_of(&v);
    for id in ["throughput", "goodput"] {
        let fig = figure(&page, id);
        let log = fig
            .select(&sel("svg text"))
            .any(|t| text(t).ends_with("log scale"));
        let at = axis_map(&x_ticks(fig), log)(4.0);
        let dashes = polylines(fig, &color_of(fig, "sim-fast"))
            .into_iter()
            .map(polyline_points)
            .filter(|pts| {
                pts.len() == 2
                    && pts.iter().all(|p| (p.0 - at).abs() <= 1.5)
                    && pts[0].1 != pts[1].1
            })
            .count();
        assert!(dashes >= 6, "{id}: {dashes} dashes at x=4");
        // The other engine searched nothing: no line of its own.
        let other = color_of(fig, "vllm <tp2> & spec");
        let vertical = polylines(fig, &other)
            .into_iter()
            .map(polyline_points)
            .filter(|p| p.len() == 2 && p[0].0 == p[1].0 && p[0].1 != p[1].1)
            .count();
        let whiskers = points(&v)
            .iter()
            .filter(|(e, _)| e == "vllm <tp2> & spec")
            .count();
        assert!(vertical <= whiskers, "{id}: {vertical} vertical lines");
    }
}
