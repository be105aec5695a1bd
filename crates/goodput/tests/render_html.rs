//! The HTML page without a browser, checked against the report itself: the page is
//! parsed as HTML (`scraper`), the expected values are read from the report JSON
//! with `serde_json` (never through goodput's render code), and chart geometry is
//! checked against each chart's own axis, read back from its tick labels.
//! (`render_browser` checks the same page in headless Chromium.)

use goodput::render;
use goodput::report::{self, Report};
use scraper::{ElementRef, Html, Selector};
use serde_json::Value;

const REFERENCE: &str = include_str!("../../../tests/data/l4-gpu1-vllm.json");
const ADDITIVE: &str = include_str!("render_fixtures/additive.json");

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

/// Whether the median of a point's statistic meets `bound` (absent: met).
fn meets(p: &Value, stat: &str, bound: &Value) -> bool {
    match bound.as_f64() {
        None => true,
        Some(b) => p[stat]["median"].as_f64().is_some_and(|m| m <= b),
    }
}

fn meets_slo(v: &Value, p: &Value) -> bool {
    let slo = &v["slo"];
    meets(p, "median_ttft_ms", &slo["ttft_ms"])
        && meets(p, "median_tpot_ms", &slo["tpot_ms"])
        && (p.get("median_e2el_ms").is_none() || meets(p, "median_e2el_ms", &slo["e2el_ms"]))
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

#[test]
fn table_cells_are_the_reports_numbers() {
    for src in [REFERENCE, ADDITIVE] {
        let v = json(src);
        let page = page_of(&v);
        let heads: Vec<String> = page
            .select(&sel("table.results thead th"))
            .map(text)
            .collect();
        let col = |name: &str| heads.iter().position(|h| h == name).expect(name);
        let rows: Vec<ElementRef> = page
            .select(&sel("table.results tbody tr"))
            .filter(|r| r.select(&sel("td.failed")).next().is_none())
            .collect();
        let pts = points(&v);
        assert_eq!(rows.len(), pts.len(), "a row per point");
        let mut last = String::new();
        for (row, (engine, p)) in rows.iter().zip(&pts) {
            let cells: Vec<ElementRef> = row.select(&sel("td")).collect();
            assert_eq!(cells.len(), heads.len());
            let main = |i: usize| {
                cells[i]
                    .text()
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            };
            let first = *engine != last;
            assert_eq!(main(0), if first { engine.as_str() } else { "" });
            last = engine.clone();
            assert!(shows(&main(col("x")), f(&p["x"])), "{engine}: x");
            for (name, stat) in [
                ("TTFT med", "median_ttft_ms"),
                ("TTFT p99", "p99_ttft_ms"),
                ("TPOT med", "median_tpot_ms"),
                ("TPOT p99", "p99_tpot_ms"),
                ("ITL med", "median_itl_ms"),
                ("ITL p99", "p99_itl_ms"),
                ("out tok/s", "output_throughput"),
                ("req/s", "request_throughput"),
                ("goodput req/s", "goodput_rps"),
            ] {
                let cell = cells[col(name)];
                let s = &p[stat];
                let shown = main(col(name));
                let shown = shown.split(" (").next().unwrap_or_default();
                assert!(
                    shows(shown, f(&s["median"])),
                    "{engine} {name}: {shown} vs {s}"
                );
                let range = cell.select(&sel(".range")).next().map(text);
                if s["n"].as_u64().unwrap_or(0) >= 2 && s["min"] != s["max"] {
                    let range = range.unwrap_or_else(|| panic!("{engine} {name}: no range"));
                    let (lo, hi) = range.split_once('–').expect("min–max");
                    assert!(
                        shows(lo, f(&s["min"])) && shows(hi, f(&s["max"])),
                        "{engine} {name}: {range}"
                    );
                } else {
                    assert_eq!(range, None, "{engine} {name}");
                }
            }
            let completed: u64 = p["completed"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_u64().unwrap())
                .sum();
            assert!(
                main(col("requests")).starts_with(&completed.to_string()),
                "{engine}: requests"
            );
            if let Some(good) = p["good"].as_array() {
                let good: u64 = good.iter().map(|g| g.as_u64().unwrap()).sum();
                let cell = main(col("goodput req/s"));
                assert!(cell.contains(&format!("({good} good")), "{engine}: {cell}");
                // Attainment beside the count when the report has it (good / sent).
                if let Some(a) = p["slo_check"]["attainment"].as_f64() {
                    let pct = cell.rsplit(", ").next().unwrap_or("").trim_end_matches(")");
                    let shown: f64 = pct.trim_end_matches('%').parse().unwrap_or(f64::NAN);
                    assert!((shown - a * 100.0).abs() < 0.51, "{engine}: {cell} vs {a}");
                }
            }
            // Green where the median meets the SLO's bound, red where it misses.
            for (name, stat, bound) in [
                ("TTFT med", "median_ttft_ms", "ttft_ms"),
                ("TPOT med", "median_tpot_ms", "tpot_ms"),
            ] {
                let class = cells[col(name)].value().attr("class").unwrap_or("");
                let want = if meets(p, stat, &v["slo"][bound]) {
                    "good"
                } else {
                    "bad"
                };
                assert_eq!(class, want, "{engine} {name}");
            }
        }
        // An engine without points is one row that says why.
        for (engine, r) in v["load"].as_object().unwrap() {
            if r["points"].as_array().unwrap().is_empty() {
                let failed: Vec<String> = page
                    .select(&sel("table.results td.failed"))
                    .map(text)
                    .collect();
                let kind = r["error"]["kind"].as_str().unwrap_or("no results");
                assert!(
                    failed.iter().any(|t| t.contains(kind)),
                    "{engine}: {failed:?}"
                );
            }
        }
    }
}

#[test]
fn every_engine_is_in_the_legends() {
    for src in [REFERENCE, ADDITIVE] {
        let v = json(src);
        let page = page_of(&v);
        let legend = |id: &str| -> Vec<String> {
            figure(&page, id)
                .select(&sel("ul.legend li"))
                .map(text)
                .collect()
        };
        let with_points: Vec<String> = v["load"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, r)| !r["points"].as_array().unwrap().is_empty())
            .map(|(e, _)| e.clone())
            .collect();
        assert_eq!(legend("throughput"), with_points);
        assert_eq!(legend("goodput"), with_points);
        let each_point: Vec<String> = points(&v)
            .iter()
            .map(|(e, p)| format!("{e} x={}", f(&p["x"])))
            .collect();
        assert_eq!(legend("ttft-distribution"), each_point);
        assert_eq!(legend("tpot-distribution"), each_point);
    }
}

#[test]
fn distributions_have_a_line_per_engine_and_load_level() {
    for src in [REFERENCE, ADDITIVE] {
        let v = json(src);
        let page = page_of(&v);
        let quantiles = v["quantiles"].as_array().unwrap().len();
        for (id, key) in [
            ("ttft-distribution", "ttft_quantiles_ms"),
            ("tpot-distribution", "tpot_quantiles_ms"),
        ] {
            let fig = figure(&page, id);
            let lines: Vec<ElementRef> = fig
                .select(&sel("svg polyline[stroke-width=\"2\"]"))
                .collect();
            let want = points(&v)
                .iter()
                .filter(|(_, p)| !p[key].as_array().unwrap().is_empty())
                .count();
            assert_eq!(lines.len(), want, "{id}");
            assert_eq!(attr(fig, "data-series"), want.to_string());
            for l in lines {
                assert_eq!(
                    polyline_points(l).len(),
                    quantiles,
                    "{id}: a vertex per quantile"
                );
            }
        }
    }
}

/// The vertical red SLO line of a distribution chart: its x pixel, or `None`.
fn slo_line_x(fig: ElementRef) -> Option<f64> {
    let lines = polylines(fig, "#D62728");
    assert!(lines.len() <= 1, "one SLO line at most");
    lines.first().map(|l| {
        let pts = polyline_points(*l);
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[0].0, pts[1].0, "vertical");
        pts[0].0
    })
}

#[test]
fn slo_lines_sit_at_the_slo_value_and_their_labels_fit() {
    let mut met = json(ADDITIVE);
    // A TPOT bound above every request: the line at the right end of the axis.
    met["slo"]["tpot_ms"] = 200.0.into();
    for v in [json(REFERENCE), json(ADDITIVE), met] {
        let page = page_of(&v);
        for (id, bound) in [
            ("ttft-distribution", "ttft_ms"),
            ("tpot-distribution", "tpot_ms"),
        ] {
            let fig = figure(&page, id);
            let slo = f(&v["slo"][bound]);
            let map = axis_map(&x_ticks(fig), false);
            let at = slo_line_x(fig).expect("an SLO line");
            assert!(
                (at - map(slo)).abs() <= 1.5,
                "{id}: line at {at}, {slo} ms is at {}",
                map(slo)
            );
            let label = fig
                .select(&sel("svg text"))
                .find(|t| text(*t) == format!("SLO {slo} ms"))
                .unwrap_or_else(|| panic!("{id}: no label"));
            // Beside the line, and inside the SVG at 0.6 em a character.
            let (x, anchor) = (num_attr(label, "x"), attr(label, "text-anchor"));
            let width = label.text().collect::<String>().chars().count() as f64
                * 0.6
                * num_attr(label, "font-size");
            let (left, right) = match anchor.as_str() {
                "start" => (x, x + width),
                "end" => (x - width, x),
                other => panic!("{id}: label anchored {other}"),
            };
            assert!((x - at).abs() <= 1.5, "{id}: label at {x}, line at {at}");
            let svg_width = num_attr(fig.select(&sel("svg")).next().unwrap(), "width");
            assert!(
                left >= 0.0 && right <= svg_width,
                "{id}: label spans {left}..{right} of {svg_width}"
            );
        }
    }
}

#[test]
fn an_absent_bound_draws_no_line() {
    let mut v = json(ADDITIVE);
    v["slo"].as_object_mut().unwrap().remove("tpot_ms");
    let page = page_of(&v);
    let fig = figure(&page, "tpot-distribution");
    assert_eq!(slo_line_x(fig), None);
    assert!(!fig
        .select(&sel("svg text"))
        .any(|t| text(t).starts_with("SLO")));
    assert!(slo_line_x(figure(&page, "ttft-distribution")).is_some());
}

/// The x of every load point as drawn: the centres of the markers of `color`.
fn marker_xs(fig: ElementRef, color: &str) -> Vec<f64> {
    fig.select(&sel("svg circle"))
        .filter(|c| {
            c.value()
                .attr("fill")
                .is_some_and(|c| c.eq_ignore_ascii_case(color))
        })
        .map(|c| num_attr(c, "cx"))
        .collect()
}

fn color_of(fig: ElementRef, engine: &str) -> String {
    let li = fig
        .select(&sel("ul.legend li"))
        .find(|li| text(*li) == engine)
        .unwrap_or_else(|| panic!("{engine} not in legend"));
    let style = attr(li.select(&sel(".swatch")).next().unwrap(), "style");
    style.trim_start_matches("background:").to_string()
}

#[test]
fn concurrency_axes_tick_whole_numbers() {
    let v = json(REFERENCE);
    let page = page_of(&v);
    for id in ["throughput", "goodput"] {
        let ticks = x_ticks(figure(&page, id));
        assert!(ticks.len() >= 2, "{id}: {ticks:?}");
        assert!(ticks.iter().all(|t| t.0.fract() == 0.0), "{id}: {ticks:?}");
        let _ = axis_map(&ticks, false);
    }
}

/// `ADDITIVE` (a rate run) with its load levels replaced by `xs`, for every engine.
fn with_rates(xs: &[f64]) -> Value {
    let mut v = json(ADDITIVE);
    for r in v["load"].as_object_mut().unwrap().values_mut() {
        let pts = r["points"].as_array_mut().unwrap();
        if pts.is_empty() {
            continue;
        }
        let template = pts[0].clone();
        *pts = xs
            .iter()
            .map(|x| {
                let mut p = template.clone();
                p["x"] = (*x).into();
                p
            })
            .collect();
    }
    v
}

#[test]
fn rate_axes_are_logarithmic_when_the_rates_span_twenty_times() {
    for (xs, log) in [
        (&[2.0, 4.0, 8.0][..], false),
        (&[0.5, 1.0, 2.0, 4.0, 8.0, 16.0][..], true),
    ] {
        let v = with_rates(xs);
        let page = page_of(&v);
        let fig = figure(&page, "throughput");
        let map = axis_map(&x_ticks(fig), log);
        for engine in ["sim-fast", "vllm <tp2> & spec"] {
            let drawn = marker_xs(fig, &color_of(fig, engine));
            assert_eq!(drawn.len(), xs.len(), "{engine}");
            for (x, px) in xs.iter().zip(drawn) {
                assert!(
                    (map(*x) - px).abs() <= 1.5,
                    "{engine} x={x}: at {px}, not {}",
                    map(*x)
                );
            }
        }
        let desc: Vec<String> = fig.select(&sel("svg text")).map(text).collect();
        assert_eq!(
            desc.iter().any(|d| d.ends_with("log scale")),
            log,
            "{desc:?}"
        );
    }
}

/// The bars of the strip under a chart drawn in `color`: `(left, right, top)`.
fn strip_bars(fig: ElementRef, color: &str) -> Vec<(f64, f64, f64)> {
    fig.select(&sel("svg rect"))
        .filter(|r| {
            r.value()
                .attr("fill")
                .is_some_and(|c| c.eq_ignore_ascii_case(color))
        })
        .map(|r| {
            let (x, y, w) = (num_attr(r, "x"), num_attr(r, "y"), num_attr(r, "width"));
            (x, x + w, y)
        })
        .filter(|b| b.2 >= PLOT_HEIGHT)
        .collect()
}

#[test]
fn slo_strips_mark_each_engines_own_load_levels() {
    // Both engines meet the SLO at 2 and 4 req/s: one engine's marks must not
    // stand for the other's.
    for v in [
        json(ADDITIVE),
        json(REFERENCE),
        with_rates(&[0.5, 2.0, 16.0]),
    ] {
        let page = page_of(&v);
        for id in ["throughput", "goodput"] {
            let fig = figure(&page, id);
            let log = fig
                .select(&sel("svg text"))
                .any(|t| text(t).ends_with("log scale"));
            let map = axis_map(&x_ticks(fig), log);
            let mut rows = Vec::new();
            for (engine, r) in v["load"].as_object().unwrap() {
                let pts = r["points"].as_array().unwrap();
                if pts.is_empty() {
                    continue;
                }
                let color = color_of(fig, engine);
                let bars = strip_bars(fig, &color);
                for p in pts {
                    let px = map(f(&p["x"]));
                    let marked = bars.iter().any(|b| b.0 <= px && px <= b.1);
                    assert_eq!(
                        marked,
                        meets_slo(&v, p),
                        "{id} {engine} x={}: {bars:?}",
                        p["x"]
                    );
                }
                // The row is labelled with the engine (shortened when long).
                let labels: Vec<String> = fig
                    .select(&sel("svg text"))
                    .filter(|t| num_attr(*t, "y") > PLOT_HEIGHT)
                    .map(text)
                    .collect();
                let short: String = engine.chars().take(9).collect();
                assert!(
                    labels.iter().any(|l| l.starts_with(&short)),
                    "{id} {engine}: {labels:?}"
                );
                rows.extend(bars.first().map(|b| (engine.clone(), b.2)));
            }
            // Each engine's bars in a row of its own.
            for (i, a) in rows.iter().enumerate() {
                for b in &rows[i + 1..] {
                    assert_ne!(a.1, b.1, "{id}: {} and {} share a row", a.0, b.0);
                }
            }
        }
        // Nothing shaded across the plot.
        assert!(page
            .select(&sel("svg rect[opacity]"))
            .all(|r| attr(r, "opacity") == "1"));
    }
}

#[test]
fn notices_are_list_items_and_times_are_dates() {
    let mut v = json(ADDITIVE);
    v["run"]["notices"] = serde_json::json!(["GPU telemetry from NVML", "ITL from chunk times"]);
    let page = page_of(&v);
    let profile = page
        .select(&sel("section#profile"))
        .next()
        .expect("profile");
    let notices: Vec<String> = profile.select(&sel("ul.notices > li")).map(text).collect();
    assert_eq!(notices, ["GPU telemetry from NVML", "ITL from chunk times"]);
    let times: Vec<String> = profile.select(&sel("time")).map(text).collect();
    // 1733000000 and 1733003600 in UTC, as `date -u -d @1733000000` says.
    assert_eq!(times, ["2024-11-30 20:53 UTC", "2024-11-30 21:53 UTC"]);
    let all = text(profile);
    assert!(
        !all.contains("1733000000") && !all.contains("1.733e"),
        "raw Unix time: {all}"
    );
    // The reference has no run info.
    let page = page_of(&json(REFERENCE));
    let profile = text(page.select(&sel("section#profile")).next().unwrap());
    assert!(profile.contains("not recorded (reference format)"));
}

#[test]
fn reference_page_has_four_charts_with_their_lines() {
    let page = page_of(&json(REFERENCE));
    let ids: Vec<String> = page
        .select(&sel("figure.chart"))
        .map(|f| attr(f, "id"))
        .collect();
    assert_eq!(
        ids,
        [
            "throughput",
            "goodput",
            "ttft-distribution",
            "tpot-distribution"
        ]
    );
    for fig in page.select(&sel("figure.chart")) {
        let wide = fig.select(&sel("svg polyline[stroke-width=\"2\"]")).count();
        assert_eq!(
            attr(fig, "data-series"),
            wide.to_string(),
            "{}",
            attr(fig, "id")
        );
    }
}

#[test]
fn fixture_page_adds_gpu_telemetry_charts() {
    let v = json(ADDITIVE);
    let page = page_of(&v);
    let ids: Vec<String> = page
        .select(&sel("figure.chart"))
        .map(|f| attr(f, "id"))
        .collect();
    assert!(
        ids.contains(&"gpu-clock".into()) && ids.contains(&"gpu-temp".into()),
        "{ids:?}"
    );
    // A line per trial with samples, in its engine's colour.
    let trials: usize = points(&v)
        .iter()
        .flat_map(|(_, p)| p["trials"].as_array().cloned().unwrap_or_default())
        .filter(|t| t["gpu_samples"].as_array().is_some_and(|s| !s.is_empty()))
        .count();
    assert!(trials > 0);
    let fig = figure(&page, "gpu-clock");
    assert_eq!(
        fig.select(&sel("svg polyline[stroke-width=\"2\"]")).count(),
        trials
    );
}

#[test]
fn page_is_self_contained() {
    for text in [REFERENCE, ADDITIVE] {
        let page = render::html(&parse(text));
        assert!(page.starts_with("<!DOCTYPE html>"));
        for banned in [
            "<script src",
            "<link",
            "@import",
            "url(",
            "src=\"http",
            "href=\"http",
            "<img",
            "<iframe",
        ] {
            assert!(!page.contains(banned), "page contains {banned}");
        }
        let doc = Html::parse_document(&page);
        assert_eq!(doc.select(&sel("style")).count(), 1);
        assert!(doc
            .select(&sel("[src], link, img, iframe"))
            .next()
            .is_none());
    }
}

#[test]
fn strings_from_the_report_are_escaped() {
    let page = render::html(&parse(ADDITIVE));
    assert!(page.contains("vllm &lt;tp2&gt; &amp; spec"));
    assert!(!page.contains("<tp2>"), "raw engine name in the page");
    assert!(page.contains("&lt;redacted&gt;"), "environment escaped");

    let mut hostile = json(REFERENCE);
    hostile["profile"] = "<script>alert(1)</script>".into();
    let load = hostile["load"].as_object_mut().unwrap();
    let e = load.remove("vllm-ngram").unwrap();
    load.insert("\"><img src=x onerror=alert(1)>".into(), e);
    let page = page_of(&hostile);
    // The page's own two scripts only, and no element from the report.
    assert_eq!(page.select(&sel("script")).count(), 2);
    assert!(page.select(&sel("img")).next().is_none());
    let title = text(page.select(&sel("h1")).next().unwrap());
    assert_eq!(title, "goodput report: <script>alert(1)</script>");
}

#[test]
fn page_has_warnings_profile_and_environment() {
    let page = page_of(&json(REFERENCE));
    let warnings = text(page.select(&sel("section#warnings")).next().unwrap());
    assert!(warnings.contains("GPU thermally throttled"), "{warnings}");
    let env = text(page.select(&sel("section#environment")).next().unwrap());
    assert!(env.contains("Not recorded"));
    assert!(page.select(&sel("#chart-check")).next().is_some());
    let page = page_of(&json(ADDITIVE));
    let env = text(page.select(&sel("section#environment")).next().unwrap());
    assert!(env.contains("NVIDIA H100 80GB HBM3"));
}

#[test]
fn report_without_points_still_renders() {
    let mut r = parse(REFERENCE);
    for e in r.load.values_mut() {
        e.points.clear();
    }
    let page = render::html(&r);
    assert!(page.contains("</html>"));
    let empty = Report {
        load: Default::default(),
        ..r
    };
    let page = render::html(&empty);
    assert!(page.contains("</html>"));
    assert!(render::show(&empty, render::Format::Table, false).contains("No warnings."));
}

#[test]
fn odd_reports_render_without_panicking() {
    use goodput::render::Format;
    use goodput::report::Stat;
    let base = parse(ADDITIVE);
    let mut odd = base.clone();
    for (i, e) in odd.load.values_mut().enumerate() {
        e.points.truncate(1);
        for p in &mut e.points {
            p.x = if i == 0 { 0.0 } else { 1e9 };
            for s in [
                &mut p.median_ttft_ms,
                &mut p.p99_ttft_ms,
                &mut p.median_tpot_ms,
                &mut p.output_throughput,
                &mut p.goodput_rps,
            ] {
                *s = Stat::default();
            }
            p.completed.clear();
            p.good = None;
            p.gpu = None;
            p.ttft_quantiles_ms.truncate(3);
            p.tpot_quantiles_ms.clear();
            p.trials.clear();
        }
    }
    odd.quantiles.clear();
    odd.slo.ttft_ms = Some(0.0);
    for r in [&odd, &base] {
        for f in [Format::Table, Format::Markdown, Format::Csv, Format::Json] {
            assert!(!render::show(r, f, true).is_empty());
        }
        assert!(render::html(r).contains("</html>"));
    }
    let pair = vec![("a".to_string(), base), ("b".to_string(), odd)];
    assert!(render::compare(&pair, true).contains("against"));
}
