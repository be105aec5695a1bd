//! What a point of a report says, read once for every writer: whether it meets the
//! SLO (its stored judgement), its attainment, its TTFAT; and the SLO's bounds in
//! words.

use report::slo::point_judgement;
use report::{Judgement, Point, Report, Stat};

use super::text::num;

/// Whether a point meets the SLO: its one judgement
/// ([`report::slo::point_judgement`]) as `Some(true)` (meets),
/// `Some(false)` (fails), `None` (undecided, or not known).
pub fn point_meets(report: &Report, p: &Point) -> Option<bool> {
    match point_judgement(report, p)? {
        Judgement::Meets => Some(true),
        Judgement::Fails => Some(false),
        Judgement::Undecided | Judgement::Unknown => None,
    }
}

/// Pooled attainment of a point, when known (from `slo_check`, else the counts;
/// 0 when goodput was zero in every trial).
pub fn point_attainment(p: &Point) -> Option<f64> {
    if let Some(a) = p.slo_check.as_ref().and_then(|c| c.attainment) {
        return Some(a);
    }
    if let Some(a) = counted_attainment(p) {
        return Some(a);
    }
    zero_goodput(p).then_some(0.0)
}

/// Good requests over those sent (completed and failed), from a point's counts;
/// `None` without good counts or with nothing sent.
fn counted_attainment(p: &Point) -> Option<f64> {
    let good: u64 = p.good.as_ref()?.iter().sum();
    let sent: u64 =
        p.completed.iter().sum::<u64>() + p.failed.as_ref().map_or(0, |f| f.iter().sum());
    (sent > 0).then(|| good as f64 / sent as f64)
}

/// Goodput was measured and zero in every trial.
fn zero_goodput(p: &Point) -> bool {
    p.goodput_rps.n > 0 && p.goodput_rps.max == Some(0.0)
}

/// The point's median TTFAT per trial; a point without reasoning answered from its
/// first token, so its TTFAT is its TTFT.
pub fn ttfat_stat(p: &Point) -> &Stat {
    p.reasoning
        .as_ref()
        .map_or(&p.median_ttft_ms, |r| &r.median_ttfat_ms)
}

/// The median over trials of [`ttfat_stat`].
pub fn median_ttfat(p: &Point) -> Option<f64> {
    ttfat_stat(p).median
}

/// The SLO's bounds in words: `TTFT ≤ 1000 ms and TPOT ≤ 100 ms`; only the bounds
/// that were given.
pub fn slo_bounds_text(slo: &report::Slo) -> String {
    let bounds: Vec<String> = [
        ("TTFT", slo.ttft_ms),
        ("TPOT", slo.tpot_ms),
        ("E2E latency", slo.e2el_ms),
        ("TTFAT", slo.ttfat_ms),
    ]
    .into_iter()
    .filter_map(|(name, b)| b.map(|b| format!("{name} ≤ {} ms", num(b))))
    .collect();
    if bounds.is_empty() {
        "no bound".into()
    } else {
        bounds.join(" and ")
    }
}
