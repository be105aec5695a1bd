//! The results table and the legends against the report's numbers.

use super::*;

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
