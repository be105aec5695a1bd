//! Unit tests of slicing: every engine and load level in exactly one shard.

use super::*;
use crate::define::profile::{Overrides, Profile};

fn plan(engines: usize, points: &[f64]) -> Plan {
    let points: Vec<u32> = points.iter().map(|p| *p as u32).collect();
    let mut t = format!(
        "name = \"t\"\n[slo]\nttft_ms = 100\n[load]\npoints = {points:?}\nrequests_per_trial = 3\n[workload]\ninput_tokens = 10\noutput_tokens = 5\n"
    );
    for e in 0..engines {
        t.push_str(&format!(
            "[engines.e{e}]\nurl = \"http://127.0.0.1:{}\"\n",
            1000 + e
        ));
    }
    Profile::parse(&t, "p.toml")
        .and_then(|p| p.into_plan("p.toml", &Overrides::default()))
        .unwrap_or_else(|e| panic!("{e}\n{t}"))
}

#[test]
fn parts_read_i_of_n_and_name_what_is_wrong() {
    let part = |s: &str| s.parse::<Part>();
    assert_eq!(part("0/4").unwrap(), Part { index: 0, count: 4 });
    assert_eq!(part("3/4").unwrap(), Part { index: 3, count: 4 });
    assert_eq!(part("3/4").unwrap().to_string(), "3/4");
    for (bad, why) in [
        ("4/4", "below N"),
        ("1/0", "at least 1"),
        ("x/4", "I is not"),
        ("1", "no `/`"),
        ("-1/4", "I is not"),
    ] {
        let e = part(bad).unwrap_err().to_string();
        assert!(e.contains(bad) && e.contains(why), "{bad}: {e}");
    }
}

#[test]
fn every_engine_and_level_is_in_exactly_one_shard() {
    for engines in 1..=4 {
        for levels in 1..=4 {
            let points: Vec<f64> = (1..=levels).map(|p| p as f64).collect();
            let p = plan(engines, &points);
            for n in 1..=(engines * levels) as u32 {
                let mut seen = std::collections::BTreeMap::new();
                for i in 0..n {
                    let (s, info) = slice(&p, i, n).unwrap();
                    assert!(
                        !s.engines.is_empty() && !s.points.is_empty(),
                        "{engines}x{levels} {i}/{n} empty"
                    );
                    assert_eq!(info.engines, s.engines.keys().cloned().collect::<Vec<_>>());
                    assert_eq!(info.points, s.points);
                    assert_eq!(info.plan_points, points);
                    assert_eq!(info.plan_fingerprints, p.fingerprints());
                    for e in s.engines.keys() {
                        for x in &s.points {
                            let old = seen.insert((e.clone(), x.to_bits()), i);
                            assert!(old.is_none(), "{e} x={x} in shards {old:?} and {i} of {n}");
                        }
                    }
                }
                assert_eq!(seen.len(), engines * levels, "{engines}x{levels} N={n}");
            }
        }
    }
}

#[test]
fn engines_first_then_levels_dealt_in_turn() {
    let p = plan(3, &[1.0, 2.0, 4.0, 8.0]);
    // N <= engines: whole engines, round robin.
    let (s, _) = slice(&p, 0, 2).unwrap();
    assert_eq!(s.engines.keys().collect::<Vec<_>>(), ["e0", "e2"]);
    assert_eq!(s.points, p.points);
    // N > engines: 7 = 3 + 2 + 2 shards; e0's levels dealt among its 3.
    let slices: Vec<(Vec<String>, Vec<f64>)> = (0..7)
        .map(|i| {
            let (s, _) = slice(&p, i, 7).unwrap();
            (s.engines.keys().cloned().collect(), s.points)
        })
        .collect();
    assert_eq!(slices[0], (vec!["e0".to_string()], vec![1.0, 8.0]));
    assert_eq!(slices[1], (vec!["e0".to_string()], vec![2.0]));
    assert_eq!(slices[2], (vec!["e0".to_string()], vec![4.0]));
    assert_eq!(slices[3], (vec!["e1".to_string()], vec![1.0, 4.0]));
    assert_eq!(slices[6], (vec!["e2".to_string()], vec![2.0, 8.0]));
}

#[test]
fn a_slice_keeps_its_engines_fingerprints() {
    let p = plan(3, &[1.0, 4.0]);
    let (s, info) = slice(&p, 1, 3).unwrap();
    let fp = s.fingerprints();
    assert!(fp.contains_key("engine.e1") && !fp.contains_key("engine.e0"));
    for (k, v) in &fp {
        assert_eq!(info.plan_fingerprints.get(k), Some(v), "{k}");
    }
}

#[test]
fn too_many_shards_is_a_usage_error_that_says_how_many_fit() {
    let p = plan(2, &[1.0, 4.0]);
    let e = slice(&p, 0, 5).unwrap_err().to_string();
    assert!(
        e.contains("at most 4 shards") && e.contains("2 engine(s) x 2 load level(s)"),
        "{e}"
    );
    assert_eq!(max_shards(&p), 4);
    assert_eq!(default_shards(&p), 2);
}

#[test]
fn merged_reports_sum_every_shards_span_counts() {
    let run = |endpoint: &str, spans: u64, dropped: u64| report::RunInfo {
        otel: Some(report::OtelExport {
            endpoint: endpoint.into(),
            protocol: report::OtlpProtocol::HttpJson,
            spans,
            exported: spans - dropped,
            dropped,
            failed: 0,
        }),
        ..report::RunInfo::default()
    };
    let (a, b, c) = (
        run("http://a/v1/traces", 10, 1),
        run("http://a/v1/traces", 20, 0),
        run("http://b/v1/traces", 5, 5),
    );
    let none = report::RunInfo::default();
    let o = merge::merged_otel(&[&a, &none, &b, &c]).expect("an export");
    assert_eq!((o.spans, o.exported, o.dropped), (35, 29, 6));
    assert_eq!(o.endpoint, "http://a/v1/traces, http://b/v1/traces");
    assert_eq!(merge::merged_otel(&[&none, &none]), None);
}
