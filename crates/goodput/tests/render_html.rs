//! The HTML page without a browser: self-contained, escaped, every chart with its
//! lines. (`render_browser` checks the same page in headless Chromium.)

use goodput::render;
use goodput::report::{self, Report};

const REFERENCE: &str = include_str!("../../../tests/data/l4-gpu1-vllm.json");
const ADDITIVE: &str = include_str!("render_fixtures/additive.json");

fn parse(text: &str) -> Report {
    report::io::parse_report(text).expect("report parses")
}

/// `(id, data-series, wide polylines)` of every figure of the page.
fn figures(page: &str) -> Vec<(String, usize, usize)> {
    page.split("<figure class=\"chart\"")
        .skip(1)
        .map(|f| {
            let body = &f[..f.find("</figure>").expect("figure closes")];
            let attr = |name: &str| {
                let key = format!("{name}=\"");
                let start = body.find(&key).expect("attribute") + key.len();
                body[start..start + body[start..].find('"').expect("quote")].to_string()
            };
            let wide = body
                .split("<polyline")
                .skip(1)
                .filter(|t| t[..t.find("/>").unwrap_or(t.len())].contains("stroke-width=\"2\""))
                .count();
            (
                attr("id"),
                attr("data-series").parse().expect("number"),
                wide,
            )
        })
        .collect()
}

#[test]
fn reference_page_has_four_charts_with_their_lines() {
    let page = render::html(&parse(REFERENCE));
    let figs = figures(&page);
    let ids: Vec<&str> = figs.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        ids,
        [
            "throughput",
            "goodput",
            "ttft-distribution",
            "tpot-distribution"
        ]
    );
    for (id, want, got) in &figs {
        assert!(*want > 0, "{id}: no series");
        assert_eq!(want, got, "{id}: series drawn");
    }
    // Three engines vs load; three engines x two load levels as distributions.
    assert_eq!(figs[0].1, 3);
    assert_eq!(figs[2].1, 6);
    assert!(page.contains("SLO 1000 ms"), "TTFT threshold drawn");
    assert!(page.contains("SLO 100 ms"), "TPOT threshold drawn");
}

#[test]
fn fixture_page_adds_gpu_telemetry_charts() {
    let page = render::html(&parse(ADDITIVE));
    let figs = figures(&page);
    let ids: Vec<&str> = figs.iter().map(|f| f.0.as_str()).collect();
    assert!(
        ids.contains(&"gpu-clock") && ids.contains(&"gpu-temp"),
        "{ids:?}"
    );
    for (id, want, got) in &figs {
        assert_eq!(want, got, "{id}");
    }
    // The SLO-meeting load levels are shaded (filled rectangles with opacity).
    let throughput = page
        .split("<figure class=\"chart\" id=\"throughput\"")
        .nth(1)
        .expect("throughput chart");
    let chart = &throughput[..throughput.find("</figure>").expect("figure closes")];
    assert!(chart.contains("opacity=\"0.13\""), "shaded bands");
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
        assert!(page.contains("<style>"));
        assert!(page.contains("<svg"));
    }
}

#[test]
fn strings_from_the_report_are_escaped() {
    let page = render::html(&parse(ADDITIVE));
    assert!(page.contains("vllm &lt;tp2&gt; &amp; spec"));
    assert!(!page.contains("<tp2>"), "raw engine name in the page");
    assert!(page.contains("&lt;redacted&gt;"), "environment escaped");

    let mut hostile = parse(REFERENCE);
    hostile.profile = "<script>alert(1)</script>".into();
    let e = hostile.load.shift_remove("vllm-ngram").expect("engine");
    hostile
        .load
        .insert("\"><img src=x onerror=alert(1)>".into(), e);
    let page = render::html(&hostile);
    assert!(!page.contains("<script>alert(1)"));
    assert!(!page.contains("<img src=x"));
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn page_has_table_profile_environment_and_warnings() {
    let page = render::html(&parse(REFERENCE));
    for part in [
        "id=\"warnings\"",
        "GPU thermally throttled",
        "id=\"results\"",
        "<table class=\"results\">",
        "1437.2",
        "1432.1–1442.3",
        "id=\"profile\"",
        "l4-gpu1",
        "id=\"environment\"",
        "Not recorded",
        "id=\"chart-check\"",
    ] {
        assert!(page.contains(part), "missing {part}");
    }
    let page = render::html(&parse(ADDITIVE));
    for part in [
        "NVIDIA H100 80GB HBM3",
        "engine failed: ready_timeout",
        "Engine failed",
        "0.0582 (4 good",
        "load_mode",
    ] {
        assert!(page.contains(part), "missing {part}");
    }
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
