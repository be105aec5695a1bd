//! Snapshot tests of `show` (every format) and `compare`, on the reference report
//! and on a fixture that uses goodput's additive fields.
//!
//! Update with `INSTA_UPDATE=always cargo test -p goodput --test it present::render_snapshots`
//! (or `cargo insta review`), then read the `.snap` files before committing them.

use crate::common;

use common::reports::{additive, reference};
use goodput::render::{self, Format};

#[test]
fn show_reference_table() {
    insta::assert_snapshot!(render::show(&reference(), Format::Table, false));
}

#[test]
fn show_reference_markdown() {
    insta::assert_snapshot!(render::show(&reference(), Format::Markdown, false));
}

#[test]
fn show_reference_csv() {
    insta::assert_snapshot!(render::show(&reference(), Format::Csv, false));
}

#[test]
fn show_reference_json() {
    let out = render::show(&reference(), Format::Json, false);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json export parses");
    insta::assert_json_snapshot!(v);
}

#[test]
fn show_additive_table() {
    insta::assert_snapshot!(render::show(&additive(), Format::Table, false));
}

#[test]
fn show_additive_table_in_colour() {
    let out = render::show(&additive(), Format::Table, true);
    assert!(out.contains("\x1b[32m"), "green for met SLOs");
    assert!(out.contains("\x1b[31m"), "red for missed SLOs");
    let plain = render::show(&additive(), Format::Table, false);
    assert!(!plain.contains('\x1b'));
    insta::assert_snapshot!(out);
}

#[test]
fn show_additive_markdown() {
    insta::assert_snapshot!(render::show(&additive(), Format::Markdown, false));
}

#[test]
fn show_additive_csv() {
    insta::assert_snapshot!(render::show(&additive(), Format::Csv, false));
}

#[test]
fn show_additive_json() {
    let out = render::show(&additive(), Format::Json, false);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json export parses");
    insta::assert_json_snapshot!(v);
}

#[test]
fn compare_reference_engines() {
    let reports = vec![("l4-gpu1-vllm.json".to_string(), reference())];
    insta::assert_snapshot!(goodput::judge::compare::reports_text(&reports, false));
}

#[test]
fn compare_additive_engines() {
    let reports = vec![("additive.json".to_string(), additive())];
    insta::assert_snapshot!(goodput::judge::compare::reports_text(&reports, false));
}

#[test]
fn compare_two_reports() {
    // The candidate: the reference with vllm-ngram faster at x=4 beyond the
    // baseline's trial range, vllm-no-async gone, and a new load level.
    let base = reference();
    let mut cand = reference();
    if let Some(e) = cand.load.get_mut("vllm-ngram") {
        let p = &mut e.points[1];
        for s in [&mut p.median_ttft_ms, &mut p.output_throughput] {
            s.median = s.median.map(|v| v * 0.5);
            s.min = s.min.map(|v| v * 0.5);
            s.max = s.max.map(|v| v * 0.5);
        }
        let mut extra = e.points[1].clone();
        extra.x = 8.0;
        e.points.push(extra);
    }
    cand.load.shift_remove("vllm-no-async");
    let reports = vec![
        ("before.json".to_string(), base),
        ("after.json".to_string(), cand),
    ];
    let out = goodput::judge::compare::reports_text(&reports, false);
    assert!(
        out.contains("engine vllm-no-async: only in before.json"),
        "{out}"
    );
    assert!(out.contains("vllm-ngram x=8: only in after.json"), "{out}");
    insta::assert_snapshot!(out);
    let coloured = goodput::judge::compare::reports_text(&reports, true);
    assert!(coloured.contains("\x1b["));
}

#[test]
fn compare_three_reports_against_the_first() {
    let reports = vec![
        ("a.json".to_string(), reference()),
        ("b.json".to_string(), reference()),
        ("c.json".to_string(), additive()),
    ];
    let out = goodput::judge::compare::reports_text(&reports, false);
    assert!(out.contains("b.json (candidate) against a.json (baseline)"));
    assert!(out.contains("c.json (candidate) against a.json (baseline)"));
    assert!(out.contains("profiles differ"));
}

#[test]
fn compare_nothing() {
    assert!(goodput::judge::compare::reports_text(&[], false).contains("Nothing to compare"));
}

#[test]
fn every_format_names_every_engine() {
    for r in [reference(), additive()] {
        for f in [Format::Table, Format::Markdown, Format::Csv, Format::Json] {
            let out = render::show(&r, f, false);
            for engine in r.load.keys() {
                let shown = match f {
                    Format::Markdown => {
                        out.contains(&engine.replace('<', "\\<").replace('>', "\\>"))
                    }
                    _ => out.contains(engine.as_str()),
                };
                assert!(shown, "{f}: {engine} missing");
            }
        }
    }
}

#[test]
fn nonzero_goodput_never_prints_as_zero() {
    let mut r = reference();
    let p = &mut r.load[0].points[0];
    p.goodput_rps.median = Some(0.0036);
    p.goodput_rps.min = Some(0.0036);
    p.goodput_rps.max = Some(0.0036);
    p.good = Some(vec![1, 0]);
    let out = render::show(&r, Format::Table, false);
    assert!(out.contains("0.0036 (1 good"), "{out}");
}

#[test]
fn csv_keeps_full_precision() {
    let out = render::show(&reference(), Format::Csv, false);
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.len(), first.len());
    let col = header.iter().position(|h| *h == "median_ttft_ms").unwrap();
    assert_eq!(first[col], "1437.17");
    assert_eq!(out.lines().count(), 1 + 6);
}
