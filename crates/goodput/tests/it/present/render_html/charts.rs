//! Chart geometry read back from the SVG: lines, SLO lines and labels, axes, SLO strips.

use super::*;

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

pub(super) fn color_of(fig: ElementRef, engine: &str) -> String {
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
pub(super) fn strip_bars(fig: ElementRef, color: &str) -> Vec<(f64, f64, f64)> {
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
