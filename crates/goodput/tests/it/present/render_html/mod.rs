//! The HTML page without a browser, checked against the report itself: the page is
//! parsed as HTML (`scraper`), the expected values are read from the report JSON
//! with `serde_json` (never through goodput's render code), and chart geometry is
//! checked against each chart's own axis, read back from its tick labels.
//! (`render_browser` checks the same page in headless Chromium.)

use goodput::render;
use goodput::report::{self, Report};
use scraper::{ElementRef, Html, Selector};
use serde_json::Value;

mod agree;
mod charts;
mod page;
mod table;

const REFERENCE: &str = include_str!("../../../../../../tests/data/l4-gpu1-vllm.json");

const ADDITIVE: &str = include_str!("../../../render_fixtures/additive.json");

/// Height of a chart's plot without the strip under it (the SVG's first 380 px).
const PLOT_HEIGHT: f64 = 380.0;

fn parse(text: &str) -> Report {
    report::io::parse_report(text).expect("report parses")
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).expect("report is JSON")
}

/// The page of a report given as JSON.
fn page_of(v: &Value) -> Html {
    Html::parse_document(&render::html(&parse(&v.to_string())))
}

fn sel(s: &str) -> Selector {
    Selector::parse(s).expect("selector")
}

fn text(e: ElementRef) -> String {
    e.text().collect::<String>().trim().to_string()
}

fn attr(e: ElementRef, name: &str) -> String {
    e.value()
        .attr(name)
        .unwrap_or_else(|| panic!("<{}> has no {name}", e.value().name()))
        .to_string()
}

fn num_attr(e: ElementRef, name: &str) -> f64 {
    attr(e, name).parse().expect("numeric attribute")
}

fn figure<'a>(page: &'a Html, id: &str) -> ElementRef<'a> {
    page.select(&sel(&format!("figure.chart#{id}")))
        .next()
        .unwrap_or_else(|| panic!("no chart {id}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

/// `(engine, point)` for every point of the report, in order.
fn points(v: &Value) -> Vec<(String, &Value)> {
    v["load"]
        .as_object()
        .expect("load")
        .iter()
        .flat_map(|(e, r)| {
            r["points"]
                .as_array()
                .expect("points")
                .iter()
                .map(move |p| (e.clone(), p))
        })
        .collect()
}

/// Whether `shown`, a number printed to four significant digits, is `want`.
fn shows(shown: &str, want: f64) -> bool {
    let Ok(got) = shown.trim().replace(',', "").parse::<f64>() else {
        return false;
    };
    (got - want).abs() <= want.abs() * 5e-4 + 1e-9
}

/// Whether the median of a point's statistic meets `bound` (absent: met): the
/// colour of a latency cell.
fn meets(p: &Value, stat: &str, bound: &Value) -> bool {
    match bound.as_f64() {
        None => true,
        Some(b) => p[stat]["median"].as_f64().is_some_and(|m| m <= b),
    }
}

/// The point's one SLO judgement (the metrics layer's, stored or derived for an
/// older report): what every renderer must show.
fn judgement(v: &Value, p: &Value) -> Option<report::Judgement> {
    let r = parse(&v.to_string());
    let point: report::Point = serde_json::from_value(p.clone()).expect("point parses");
    goodput::measure::metrics::judgement::point_judgement(&r, &point)
}

fn meets_slo(v: &Value, p: &Value) -> bool {
    judgement(v, p) == Some(report::Judgement::Meets)
}

/// A chart's x axis as read from its tick labels: `(value, pixel)` of each tick.
fn x_ticks(fig: ElementRef) -> Vec<(f64, f64)> {
    fig.select(&sel("svg text[text-anchor=\"middle\"]"))
        .filter(|t| num_attr(*t, "y") < PLOT_HEIGHT)
        .filter_map(|t| Some((text(t).replace(',', "").parse().ok()?, num_attr(t, "x"))))
        .collect()
}

/// The pixel of value `x` on an axis with these ticks, linear or logarithmic:
/// fitted on the first and last tick, and checked on every tick between.
fn axis_map(ticks: &[(f64, f64)], log: bool) -> impl Fn(f64) -> f64 {
    assert!(ticks.len() >= 2, "ticks {ticks:?}");
    let t = move |v: f64| if log { v.ln() } else { v };
    let (a, b) = (ticks[0], ticks[ticks.len() - 1]);
    let scale = (b.1 - a.1) / (t(b.0) - t(a.0));
    let map = move |x: f64| a.1 + (t(x) - t(a.0)) * scale;
    for (v, px) in ticks {
        assert!(
            (map(*v) - px).abs() <= 1.5,
            "tick {v} at {px}, not on a {} axis through {a:?} and {b:?}",
            if log { "log" } else { "linear" }
        );
    }
    map
}

/// The polylines of a chart's SVG drawn in `color` (`#RRGGBB`).
fn polylines<'a>(fig: ElementRef<'a>, color: &str) -> Vec<ElementRef<'a>> {
    fig.select(&sel("svg polyline"))
        .filter(|p| {
            p.value()
                .attr("stroke")
                .is_some_and(|c| c.eq_ignore_ascii_case(color))
        })
        .collect()
}

fn polyline_points(p: ElementRef) -> Vec<(f64, f64)> {
    attr(p, "points")
        .split_whitespace()
        .map(|xy| {
            let (x, y) = xy.split_once(',').expect("x,y");
            (x.parse().expect("x"), y.parse().expect("y"))
        })
        .collect()
}
