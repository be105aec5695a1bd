//! Differences explained: the engine state both sides of a compared pair measured at
//! the same load levels, compared fact by fact; a clear difference is named in the
//! section's notes as a likely cause of what the rows show. Pure: points and
//! reports in, sentences out.
//!
//! Method: no test, a fixed threshold per fact (each difference is one that moves
//! latency by itself, far beyond what two runs of one engine show), applied to what
//! each report stored:
//! - **prefix-cache hit share** (`server.prefix_cache_hit_share`, the engine's own
//!   `prefix_cache_hits / prefix_cache_queries` over the trials): the two sides
//!   differ by at least [`HIT_SHARE_POINTS`] (10 points). A hit skips its prefill,
//!   so the side that hit its cache has the lower TTFT whatever its engine is worth.
//! - **preemptions** (`server.preemptions`, per request sent): one side preempted
//!   and the other did not, or both did and one at least [`PREEMPTION_RATIO`] (2x)
//!   as often.
//! - **KV cache full**: one side's highest KV usage reached [`KV_FULL`] (95%)
//!   while the other stayed at or below [`KV_ROOMY`] (85%).
//! - **GPU clock** (`gpu.median_sm_mhz`, the median of the trials' medians): the
//!   two differ by at least [`CLOCK_SHARE`] (5%) of the higher one, or one side was
//!   thermally throttled (slowdown in more than 5% of samples) and the other not.
//! - **failed requests** (`failed` per trial over requests sent): the shares differ
//!   by at least [`FAILED_POINTS`] (1 point); their kinds are named.
//! - across two reports, per engine ([`engines`]): the engine's version, served
//!   model, command line (flags) or KV pool (at least [`KV_POOL_SHARE`], 10%,
//!   apart) differ.
//!
//! A fact only one side measured is not compared.

use report::{EngineResult, Point, Report};

use crate::render::text::{num, x_label};

/// Hit shares this far apart (0 to 1) are a difference.
pub const HIT_SHARE_POINTS: f64 = 0.10;
/// Preemptions per request this many times the other side's are a difference.
pub const PREEMPTION_RATIO: f64 = 2.0;
/// Highest KV usage at or above this is a full cache...
pub const KV_FULL: f64 = 0.95;
/// ...against a side at or below this.
pub const KV_ROOMY: f64 = 0.85;
/// Median SM clocks this share of the higher apart are a difference.
pub const CLOCK_SHARE: f64 = 0.05;
/// Share of samples with a thermal slowdown above which a side was throttled.
pub const THERMAL_SHARE: f64 = 0.05;
/// Failed shares of requests this far apart (0 to 1) are a difference.
pub const FAILED_POINTS: f64 = 0.01;
/// KV pools this share of the larger apart are a difference.
pub const KV_POOL_SHARE: f64 = 0.10;

/// One measured fact of one point: its value on each side at a load level.
struct Seen {
    x: f64,
    base: f64,
    cand: f64,
}

/// `x=1, 2, 4` and the range of each side's values over them.
fn levels(seen: &[Seen], fmt: impl Fn(f64) -> String) -> (String, String, String) {
    let xs: Vec<String> = seen.iter().map(|s| x_label(s.x)).collect();
    let range = |v: Vec<f64>| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (a, b) = (fmt(lo), fmt(hi));
        if a == b {
            a
        } else {
            format!("{a}-{b}")
        }
    };
    (
        format!("x={}", xs.join(", ")),
        range(seen.iter().map(|s| s.base).collect()),
        range(seen.iter().map(|s| s.cand).collect()),
    )
}

fn pct(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// Requests sent at a point, over its trials.
fn sent(p: &Point) -> Option<f64> {
    if let Some(c) = &p.slo_check {
        return (c.sent > 0).then_some(c.sent as f64);
    }
    let done: u64 = p.completed.iter().sum();
    let failed: u64 = p.failed.iter().flatten().sum();
    (done + failed > 0).then_some((done + failed) as f64)
}

fn failed(p: &Point) -> u64 {
    p.failed.iter().flatten().sum()
}

/// The values of `fact` on both sides of each pair where both have it.
fn both(pairs: &[(&Point, &Point)], fact: impl Fn(&Point) -> Option<f64>) -> Vec<Seen> {
    pairs
        .iter()
        .filter_map(|(b, c)| {
            let (base, cand) = (fact(b)?, fact(c)?);
            (base.is_finite() && cand.is_finite()).then_some(Seen { x: b.x, base, cand })
        })
        .collect()
}

/// The likely causes of the differences between `cand` and `base` over their
/// matched points (`pairs`: baseline point, candidate point, at one x), one sentence
/// per fact that differs clearly, naming the sides `base` and `cand`.
pub fn explain(pairs: &[(&Point, &Point)], base: &str, cand: &str) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(prefix_cache(pairs, base, cand));
    out.extend(preemptions(pairs, base, cand));
    out.extend(kv_full(pairs, base, cand));
    out.extend(clocks(pairs, base, cand));
    out.extend(failures(pairs, base, cand));
    out
}

/// The levels where `far`, in one direction (the side higher at the first of them):
/// the higher side's name, the lower side's, and the levels with `base` holding the
/// higher side's value and `cand` the lower's.
type Split<'a> = (&'a str, &'a str, Vec<Seen>);

fn split<'a>(
    seen: Vec<Seen>,
    far: impl Fn(&Seen) -> bool,
    base: &'a str,
    cand: &'a str,
) -> Option<Split<'a>> {
    let far: Vec<Seen> = seen.into_iter().filter(|s| far(s)).collect();
    let first = far.first()?;
    let cand_higher = first.cand > first.base;
    // One direction only: the side higher at the first such level, where it is.
    let far: Vec<Seen> = far
        .into_iter()
        .filter(|s| (s.cand > s.base) == cand_higher)
        .map(|s| {
            if cand_higher {
                Seen {
                    x: s.x,
                    base: s.cand,
                    cand: s.base,
                }
            } else {
                s
            }
        })
        .collect();
    Some(if cand_higher {
        (cand, base, far)
    } else {
        (base, cand, far)
    })
}

fn prefix_cache(pairs: &[(&Point, &Point)], base: &str, cand: &str) -> Option<String> {
    let seen = both(pairs, |p| p.server.as_ref()?.prefix_cache_hit_share);
    let far = |s: &Seen| (s.cand - s.base).abs() >= HIT_SHARE_POINTS;
    let (hi, lo, far) = split(seen, far, base, cand)?;
    let (at, h, l) = levels(&far, pct);
    Some(format!(
        "likely cause: {hi} found its prompts in the engine's prefix cache far more often \
         than {lo} (hit share {h} against {l} at {at}): a cached prompt skips its prefill, \
         so {hi}'s TTFT and goodput are better for that reason, not its engine's speed; \
         when the prompts are not meant to repeat (an earlier run with the same --seed left \
         them in the cache), rerun with a fresh --seed or with --prompt-salt"
    ))
}

fn preemptions(pairs: &[(&Point, &Point)], base: &str, cand: &str) -> Option<String> {
    let seen = both(pairs, |p| {
        Some(p.server.as_ref()?.counts.preemptions? / sent(p)?)
    });
    let far = |s: &Seen| {
        let (hi, lo) = (s.base.max(s.cand), s.base.min(s.cand));
        hi > 0.0 && (lo == 0.0 || hi >= PREEMPTION_RATIO * lo)
    };
    let (hi, lo, far) = split(seen, far, base, cand)?;
    let (at, h, l) = levels(&far, |v| num((v * 1000.0).round() / 1000.0));
    Some(format!(
        "likely cause: {hi} preempted requests ({h} preemptions per request against {l} \
         for {lo} at {at}): a preempted request loses its KV cache and computes it again, \
         which adds to its latency; {hi}'s KV pool was too small for that load"
    ))
}

fn kv_full(pairs: &[(&Point, &Point)], base: &str, cand: &str) -> Option<String> {
    let seen = both(pairs, |p| p.server.as_ref()?.max_kv_usage);
    let far = |s: &Seen| {
        (s.base >= KV_FULL && s.cand <= KV_ROOMY) || (s.cand >= KV_FULL && s.base <= KV_ROOMY)
    };
    let (hi, lo, far) = split(seen, far, base, cand)?;
    let (at, h, l) = levels(&far, pct);
    Some(format!(
        "likely cause: {hi}'s KV cache filled up (up to {h} against {l} for {lo} at {at}): \
         with a full cache new requests wait for memory, which raises TTFT"
    ))
}

fn clocks(pairs: &[(&Point, &Point)], base: &str, cand: &str) -> Option<String> {
    let throttled = both(pairs, |p| p.gpu.as_ref()?.thermal_share);
    let far = |s: &Seen| (s.base > THERMAL_SHARE) != (s.cand > THERMAL_SHARE);
    if let Some((hot, cool, far)) = split(throttled, far, base, cand) {
        let (at, h, l) = levels(&far, pct);
        return Some(format!(
            "likely cause: {hot}'s GPU was thermally throttled ({h} of samples against {l} \
             for {cool} at {at}): a throttled GPU runs below its clock, so {hot} measured its \
             cooling as much as its engine"
        ));
    }
    let seen = both(pairs, |p| p.gpu.as_ref()?.median_sm_mhz.median);
    let far = |s: &Seen| (s.cand - s.base).abs() >= CLOCK_SHARE * s.base.max(s.cand);
    let (hi, lo, far) = split(seen, far, base, cand)?;
    let (at, h, l) = levels(&far, |v| format!("{} MHz", num(v.round())));
    Some(format!(
        "likely cause: {lo}'s GPU ran at a lower clock ({l} against {h} for {hi} at {at}): \
         a slower clock makes every step slower (another GPU, a power cap, or heat)"
    ))
}

fn failures(pairs: &[(&Point, &Point)], base: &str, cand: &str) -> Option<String> {
    let seen = both(pairs, |p| Some(failed(p) as f64 / sent(p)?));
    let far = |s: &Seen| (s.cand - s.base).abs() >= FAILED_POINTS;
    let cand_failed_more = seen
        .iter()
        .find(|s| far(s))
        .is_some_and(|s| s.cand > s.base);
    let (hi, lo, far) = split(seen, far, base, cand)?;
    let (at, h, l) = levels(&far, pct);
    // The kinds of the failing side's errors at those levels.
    let mut kinds: Vec<(String, u64)> = Vec::new();
    for (b, c) in pairs.iter().filter(|(b, _)| far.iter().any(|s| s.x == b.x)) {
        let p = if cand_failed_more { c } else { b };
        for (k, n) in &p.errors {
            match kinds.iter_mut().find(|(kk, _)| kk == k) {
                Some((_, m)) => *m += n,
                None => kinds.push((k.clone(), *n)),
            }
        }
    }
    let kinds = if kinds.is_empty() {
        String::new()
    } else {
        let k: Vec<String> = kinds.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        format!("; {}", k.join(", "))
    };
    Some(format!(
        "likely cause: {hi} had more failed requests ({h} of requests against {l} for {lo} \
         at {at}{kinds}): a failed request is never good and is left out of the latency \
         figures"
    ))
}

/// Across two reports, the engine `name`'s setup as each report recorded it: a
/// different version, served model, command line or KV pool, one sentence each.
pub fn engines(name: &str, base: (&str, &Report), cand: (&str, &Report)) -> Vec<String> {
    engines_named((name, name), base, cand)
}

/// [`engines`] for two engines of different names (two reports' only engines,
/// paired although their names differ): `names` is (baseline's, candidate's).
pub fn engines_named(
    names: (&str, &str),
    base: (&str, &Report),
    cand: (&str, &Report),
) -> Vec<String> {
    let env = |r: &Report, n: &str| {
        r.environment
            .as_ref()
            .and_then(|e| e.engines.get(n))
            .cloned()
    };
    let name = if names.0 == names.1 {
        names.0.to_string()
    } else {
        format!("{}/{}", names.0, names.1)
    };
    let name = name.as_str();
    let (be, ce) = (env(base.1, names.0), env(cand.1, names.1));
    let mut out = Vec::new();
    let (bl, cl) = (base.0, cand.0);
    let mut differs = |what: &str, b: Option<String>, c: Option<String>| {
        if let (Some(b), Some(c)) = (b, c) {
            if b != c {
                out.push(format!(
                    "likely cause: {name}'s {what} differs ({bl}: {b}; {cl}: {c})"
                ));
            }
        }
    };
    differs(
        "version",
        be.as_ref().and_then(|e| e.version.clone()),
        ce.as_ref().and_then(|e| e.version.clone()),
    );
    differs(
        "served model",
        be.as_ref().and_then(|e| e.model.clone()),
        ce.as_ref().and_then(|e| e.model.clone()),
    );
    differs(
        "command line",
        be.as_ref()
            .and_then(|e| e.command.as_ref().map(|c| c.join(" "))),
        ce.as_ref()
            .and_then(|e| e.command.as_ref().map(|c| c.join(" "))),
    );
    let pool = |r: &Report, n: &str| r.load.get(n).and_then(|e: &EngineResult| e.kv_pool_tokens);
    if let (Some(b), Some(c)) = (pool(base.1, names.0), pool(cand.1, names.1)) {
        let (hi, lo) = (b.max(c) as f64, b.min(c) as f64);
        if hi > 0.0 && hi - lo >= KV_POOL_SHARE * hi {
            out.push(format!(
                "likely cause: {name}'s KV pool differs ({bl}: {b} tokens; {cl}: {c} tokens): \
                 a smaller pool holds fewer requests at once, so they queue or are preempted \
                 sooner"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::server::{ServerCounts, ServerSummary};
    use report::{GpuSummary, SloCheck, Stat};

    fn point(x: f64, hit: Option<f64>) -> Point {
        Point {
            x,
            completed: vec![50, 50],
            failed: Some(vec![0, 0]),
            slo_check: Some(SloCheck {
                sent: 100,
                ..SloCheck::default()
            }),
            server: Some(ServerSummary {
                catalogue: "vllm".into(),
                prefix_cache_hit_share: hit,
                max_kv_usage: Some(0.4),
                counts: ServerCounts {
                    preemptions: Some(0.0),
                    ..ServerCounts::default()
                },
                ..ServerSummary::default()
            }),
            ..Point::default()
        }
    }

    fn gpu(mhz: f64, thermal: f64) -> Option<GpuSummary> {
        Some(GpuSummary {
            median_sm_mhz: Stat {
                median: Some(mhz),
                min: Some(mhz),
                max: Some(mhz),
                n: 2,
            },
            thermal_share: Some(thermal),
            ..GpuSummary::default()
        })
    }

    #[test]
    fn a_cache_warm_candidate_is_named_with_its_hit_shares_and_levels() {
        let b = [point(1.0, Some(0.0)), point(4.0, Some(0.01))];
        let c = [point(1.0, Some(0.88)), point(4.0, Some(0.98))];
        let pairs: Vec<_> = b.iter().zip(&c).collect();
        let notes = explain(&pairs, "sim (a.json)", "sim (b.json)");
        assert_eq!(notes.len(), 1, "{notes:?}");
        let n = &notes[0];
        assert!(
            n.starts_with("likely cause: sim (b.json) found its prompts"),
            "{n}"
        );
        assert!(
            n.contains("hit share 88%-98% against 0%-1% at x=1, 4"),
            "{n}"
        );
        assert!(n.contains("--prompt-salt"), "{n}");
        // The other way round names the baseline.
        let pairs: Vec<_> = c.iter().zip(&b).collect();
        let notes = explain(&pairs, "A", "B");
        assert!(notes[0].starts_with("likely cause: A found"), "{notes:?}");
    }

    #[test]
    fn a_pair_within_every_threshold_is_not_named() {
        let mut b = point(2.0, Some(0.02));
        let mut c = point(2.0, Some(0.11));
        b.gpu = gpu(1980.0, 0.0);
        c.gpu = gpu(1900.0, 0.04);
        b.failed = Some(vec![0, 0]);
        c.failed = Some(vec![0, 0]);
        if let Some(s) = c.server.as_mut() {
            s.max_kv_usage = Some(0.9);
        }
        assert!(explain(&[(&b, &c)], "A", "B").is_empty());
        // A fact one side did not measure is not compared.
        let none = point(2.0, None);
        let warm = point(2.0, Some(0.95));
        assert!(explain(&[(&none, &warm)], "A", "B").is_empty());
    }

    #[test]
    fn preemptions_clocks_kv_and_failures_are_named_past_their_thresholds() {
        let mut b = point(8.0, Some(0.0));
        let mut c = point(8.0, Some(0.0));
        if let Some(s) = c.server.as_mut() {
            s.counts.preemptions = Some(12.0);
            s.max_kv_usage = Some(0.99);
        }
        b.gpu = gpu(2000.0, 0.0);
        c.gpu = gpu(1800.0, 0.0);
        c.failed = Some(vec![3, 0]);
        c.errors.insert("http_500".into(), 3);
        let notes = explain(&[(&b, &c)], "A", "B");
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(
            notes[0].contains(
                "B preempted requests (0.12 preemptions per request against 0 for A at x=8)"
            ),
            "{notes:?}"
        );
        assert!(
            notes[1].contains("B's KV cache filled up (up to 99% against 40%"),
            "{notes:?}"
        );
        assert!(
            notes[2].contains("B's GPU ran at a lower clock (1800 MHz against 2000 MHz"),
            "{notes:?}"
        );
        assert!(
            notes[3].contains(
                "B had more failed requests (3% of requests against 0% for A at x=8; http_500: 3)"
            ),
            "{notes:?}"
        );
        // Throttling is named before the clock.
        c.gpu = gpu(1800.0, 0.5);
        let notes = explain(&[(&b, &c)], "A", "B");
        assert!(
            notes[2].contains("B's GPU was thermally throttled (50% of samples"),
            "{notes:?}"
        );
    }

    #[test]
    fn engines_name_a_different_version_and_kv_pool_across_reports() {
        let report = |version: &str, pool: u64| {
            let r: Report = serde_json::from_value(serde_json::json!({
                "profile": "p", "slo": {}, "environment": {"engines": {"e": {"kind": "vllm", "version": version, "model": "m"}}},
                "quantiles": [], "load": {"e": {"kv_pool_tokens": pool, "points": []}}
            }))
            .unwrap();
            r
        };
        let (a, b) = (report("0.10.1", 10_000), report("0.11.0", 10_500));
        let notes = engines("e", ("a.json", &a), ("b.json", &b));
        assert_eq!(
            notes,
            vec!["likely cause: e's version differs (a.json: 0.10.1; b.json: 0.11.0)".to_string()]
        );
        let c = report("0.10.1", 5_000);
        let notes = engines("e", ("a.json", &a), ("c.json", &c));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("KV pool differs (a.json: 10000 tokens; c.json: 5000 tokens)"));
        assert!(engines("e", ("a.json", &a), ("a2.json", &a)).is_empty());
    }
}
