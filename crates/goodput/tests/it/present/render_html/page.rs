//! The page as a whole: self-contained, escaped, its sections, odd reports.

use super::*;

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
    odd.slo.bounds.set(report::SloMetric::Ttft, Some(0.0));
    for r in [&odd, &base] {
        for f in [Format::Table, Format::Markdown, Format::Csv, Format::Json] {
            assert!(!render::show(r, f, true).is_empty());
        }
        assert!(render::html(r).contains("</html>"));
    }
    let pair = vec![("a".to_string(), base), ("b".to_string(), odd)];
    assert!(goodput::judge::compare::reports_text(&pair, true).contains("against"));
}
