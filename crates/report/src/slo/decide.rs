//! What would decide an undecided point, computed rather than guessed: the
//! smallest amount of further measurement at the attainment measured (and, when
//! the trials vary more than requests would, at the spread measured) that would
//! put the interval the judgement reads clear of the target.
//!
//! At the pooled attainment `p̂` with design effect `d` ([`crate::stats::dispersed`])
//! and the judgement's normal quantile `z`, the answer is the smallest total `N` of
//! requests whose Wilson interval of `p̂` on `N / d` effective requests lies wholly
//! above the target (`p̂` above it) or wholly below (`p̂` below it): `N − sent` more
//! requests. With a design effect above 1 (the trials' spread dominates, and more
//! requests per trial would only grow it) the answer is in trials of the size
//! measured. The Wilson bound moves towards `p̂` as `N` grows, so `N` is found by
//! doubling then bisection. An attainment exactly on the target (or so close that
//! more than a billion requests would be needed) is decided by no amount of data
//! at that share.
//!
//! The percentile form is the same computation on each bound's share of requests
//! within it against `p`% ([`percentile_undecided`]).

use crate::stats::dispersed::{wilson_effective, Dispersed};
use crate::stats::sequential::z_of;
use crate::{Judgement, Point, Report, SloForm, SloMetric};

use super::{judge_interval, judge_trials, point_judgement, point_trial_counts};

/// More than this many requests is "no amount of data at this share".
const MOST_REQUESTS: u64 = 1_000_000_000;

/// What would decide an undecided attainment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToDecide {
    /// `total` requests in all (`more` than measured) at the attainment measured
    /// would put the interval clear of the target.
    Requests {
        /// Requests in all.
        total: u64,
        /// Requests beyond those measured.
        more: u64,
    },
    /// The trials vary more than requests would (design effect above 1): `more`
    /// trials of about `per_trial` requests, at the attainment and spread measured.
    Trials {
        /// Trials beyond those measured.
        more: u64,
        /// Requests a trial (the mean of those measured).
        per_trial: u64,
    },
    /// The attainment measured sits on the target: no amount of data at this share
    /// would decide it.
    OnTarget,
}

/// What would decide `d` (an attainment with its design effect) against `target`
/// at the normal quantile `z`; `None` when it is already decided (or the target
/// is 1, a rule on the requests measured).
pub fn to_decide(d: &Dispersed, target: f64, z: f64) -> Option<ToDecide> {
    if target >= 1.0 || d.sent == 0 {
        return None;
    }
    let p = d.attainment();
    let deff = d.design_effect.max(1.0);
    let decided = |n: u64| {
        wilson_effective(p, n as f64 / deff, z)
            .is_some_and(|(lo, hi)| judge_interval(lo, hi, target) != Judgement::Undecided)
    };
    if decided(d.sent) {
        return None;
    }
    // Doubling, then bisection on the smallest total that decides.
    let (mut lo, mut hi) = (d.sent, d.sent.saturating_mul(2).max(d.sent + 1));
    while !decided(hi) {
        if hi > MOST_REQUESTS {
            return Some(ToDecide::OnTarget);
        }
        lo = hi;
        hi = hi.saturating_mul(2);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if decided(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let more = hi - d.sent;
    Some(if deff > 1.0 && d.trials >= 2 {
        let per_trial = (d.sent as f64 / f64::from(d.trials)).round().max(1.0) as u64;
        ToDecide::Trials {
            more: more.div_ceil(per_trial),
            per_trial,
        }
    } else {
        ToDecide::Requests { total: hi, more }
    })
}

/// An undecided point, with what would decide it.
#[derive(Debug, Clone, PartialEq)]
pub struct Undecided {
    /// The point's attainment over its trials, with the interval it was judged on;
    /// in the percentile form, the share of requests within `metric`'s bound.
    pub attainment: Dispersed,
    /// The attainment (or share within the bound) it needs.
    pub target: f64,
    /// Percentile form: the bounded metric whose share decides and its bound, ms;
    /// `None` in the attainment form.
    pub metric: Option<(SloMetric, f64)>,
    /// A requirement on valid tool calls decides (`valid` or `schema_valid`, as
    /// [`crate::ToolCallCheck::share`]): `attainment` counts calls, not requests.
    pub tool_calls: Option<String>,
    /// The two-sided confidence level the judgement read (0.95 unless a
    /// sequential look's).
    pub level: f64,
    /// What would decide it.
    pub needs: ToDecide,
}

/// What would decide a point of `report` judged `undecided`: in the attainment form
/// from its stored design effect and level (or for an older report its per-trial
/// counts at 95%); in the percentile form from [`percentile_undecided`]; when
/// those are decided, from an undecided requirement on valid tool calls
/// ([`tool_calls_undecided`]). `None` for any other point.
pub fn point_undecided(report: &Report, p: &Point) -> Option<Undecided> {
    if point_judgement(report, p)? != Judgement::Undecided {
        return None;
    }
    requests_undecided(report, p).or_else(|| tool_calls_undecided(p))
}

/// An undecided requirement on valid tool calls (`slo.min_valid_tool_calls`): the
/// same computation on the calls judged, valid or not, against the share
/// required. The first undecided requirement when several are.
pub fn tool_calls_undecided(p: &Point) -> Option<Undecided> {
    let c = p.slo_check.as_ref()?;
    let level = c.level.unwrap_or(0.95);
    let z = z_of(level);
    c.tool_calls
        .iter()
        .filter(|t| t.judgement == Judgement::Undecided)
        .find_map(|t| {
            let i = t.interval?;
            let d = Dispersed {
                good: t.valid,
                sent: t.judged,
                trials: i.trials.max(1),
                design_effect: i.design_effect.max(1.0),
                low: i.low,
                high: i.high,
            };
            Some(Undecided {
                attainment: d,
                target: t.required,
                metric: None,
                tool_calls: Some(t.share.clone()),
                level,
                needs: to_decide(&d, t.required, z)?,
            })
        })
}

/// [`point_undecided`] on the requests: the attainment or the percentile form.
fn requests_undecided(report: &Report, p: &Point) -> Option<Undecided> {
    let c = p.slo_check.as_ref();
    if c.is_some_and(|c| c.form == SloForm::Percentile) {
        return percentile_undecided(report, p);
    }
    if c.is_some_and(|c| c.form != SloForm::Attainment)
        || (c.is_none() && report.slo.percentile.is_some())
    {
        return None;
    }
    let target = c.map_or(
        report.slo.attainment.unwrap_or(super::DEFAULT_ATTAINMENT),
        |c| c.target,
    );
    let level = c.and_then(|c| c.level).unwrap_or(0.95);
    let z = z_of(level);
    let (good, sent) = super::point_counts(p)?;
    let trials = point_trial_counts(p)
        .filter(|t| t.iter().map(|c| c.1).sum::<u64>() == sent)
        .unwrap_or_else(|| vec![(good, sent)]);
    let (_, mut attainment) = judge_trials(&trials, target, z)?;
    if let Some(deff) = c.and_then(|c| c.design_effect) {
        attainment.design_effect = deff.max(1.0);
    }
    let needs = to_decide(&attainment, target, z)?;
    Some(Undecided {
        attainment,
        target,
        metric: None,
        tool_calls: None,
        level,
        needs,
    })
}

/// The percentile form (`p`-th percentile of each bounded metric within its
/// bound): the p-th percentile is within a bound exactly when at least `p`% of the
/// requests are, so each bound is an attainment of its own (the requests within
/// it, a failed request never within; Wilson at the point's level on the pooled
/// requests, as the order-statistic interval the judgement reads is binomial too). When some
/// share is below `p`%, the one that needs the fewest requests to show it would
/// decide the point (`fails`); otherwise the one that needs the most (every bound
/// must be shown met). `None` when the report holds no miss counts.
pub fn percentile_undecided(report: &Report, p: &Point) -> Option<Undecided> {
    let c = p.slo_check.as_ref()?;
    let target = report.slo.percentile? / 100.0;
    let level = c.level.unwrap_or(0.95);
    let z = z_of(level);
    let errors = c.misses.get("errors").copied().unwrap_or(0);
    let mut below: Option<(u64, Undecided)> = None;
    let mut above: Option<(u64, Undecided)> = None;
    for (metric, bound) in report.slo.bounds.iter() {
        // A request without a value of the metric (a reasoning request that gave
        // no answer, for TTFAT) is already among its misses: `no_answer` is a
        // subset of them, not more.
        let slow = c.misses.get(metric.key()).copied().unwrap_or(0) + errors;
        let within = c.sent.saturating_sub(slow);
        let Some((_, d)) = judge_trials(&[(within, c.sent)], target, z) else {
            continue;
        };
        let Some(needs) = to_decide(&d, target, z) else {
            continue;
        };
        let cost = match needs {
            ToDecide::Requests { more, .. } => more,
            ToDecide::Trials { more, per_trial } => more.saturating_mul(per_trial),
            ToDecide::OnTarget => u64::MAX,
        };
        let u = Undecided {
            attainment: d,
            target,
            metric: Some((metric, bound)),
            tool_calls: None,
            level,
            needs,
        };
        if d.attainment() < target {
            if below.as_ref().is_none_or(|b| cost < b.0) {
                below = Some((cost, u));
            }
        } else if above.as_ref().is_none_or(|a| cost > a.0) {
            above = Some((cost, u));
        }
    }
    below.or(above).map(|(_, u)| u)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::dispersed::attainment_interval;
    use crate::stats::Z95;

    fn of(trials: &[(u64, u64)]) -> Dispersed {
        attainment_interval(trials, Z95).expect("requests sent")
    }

    #[test]
    fn all_good_needs_n_over_n_plus_z_squared_to_reach_the_target() {
        // 20 of 20 good against 90%: the Wilson lower end of n of n is n / (n + z²),
        // at least 0.9 from n = 9 z² = 34.57: 35 requests, 15 more.
        assert_eq!(
            to_decide(&of(&[(20, 20)]), 0.9, Z95),
            Some(ToDecide::Requests {
                total: 35,
                more: 15
            })
        );
        // 7 of 8 (87.5%) against 90%: below the target, so more requests at 87.5%
        // would show the point fails: the upper end under 0.9 from 554 requests (about
        // z² p̂ (1 − p̂) / 0.025² = 672 by the normal approximation).
        let Some(ToDecide::Requests { total, .. }) = to_decide(&of(&[(7, 8)]), 0.9, Z95) else {
            panic!("a number of requests")
        };
        let upper = |n: u64| wilson_effective(0.875, n as f64, Z95).unwrap().1;
        assert!(upper(total) < 0.9 && upper(total - 1) >= 0.9, "{total}");
        assert_eq!(total, 554);
    }

    #[test]
    fn spread_between_trials_asks_for_trials_and_the_target_itself_for_nothing() {
        // 20 and 24 of 24: design effect 4.36; at 91.7% against 90% the interval
        // clears the target only with many more trials of 24.
        let d = of(&[(20, 24), (24, 24)]);
        let Some(ToDecide::Trials { more, per_trial }) = to_decide(&d, 0.9, Z95) else {
            panic!("trials")
        };
        assert_eq!((more, per_trial), (225, 24), "docs/statistics.md quotes it");
        // Check: 2 + more trials at the same share and spread clear 90%, one fewer not.
        let lower = |trials: u64| {
            wilson_effective(44.0 / 48.0, (trials * 24) as f64 / d.design_effect, Z95)
                .unwrap()
                .0
        };
        assert!(lower(2 + more) >= 0.9 && lower(1 + more) < 0.9, "{more}");
        // 18 of 20 is 90% exactly.
        assert_eq!(
            to_decide(&of(&[(18, 20)]), 0.9, Z95),
            Some(ToDecide::OnTarget)
        );
        // Decided points need nothing.
        assert_eq!(to_decide(&of(&[(200, 200)]), 0.9, Z95), None);
        assert_eq!(to_decide(&of(&[(7, 8)]), 1.0, Z95), None);
    }

    #[test]
    fn a_percentile_point_is_decided_by_its_share_within_the_bound() {
        let text = include_str!("../../../../tests/data/l4-gpu1-vllm.json");
        let mut r = crate::io::parse_report(text).expect("the reference parses");
        r.slo.percentile = Some(90.0);
        r.slo.bounds = [(SloMetric::Ttft, 1000.0)].into_iter().collect();
        let mut p = Point::default();
        let mut check = crate::SloCheck {
            good: 138,
            sent: 150,
            target: 0.9,
            form: SloForm::Percentile,
            judgement: Some(Judgement::Undecided),
            ..Default::default()
        };
        // 10 over the bound and 2 failed: 138 of 150 (92%) within 1000 ms.
        check.misses.insert("ttft".into(), 10);
        check.misses.insert("errors".into(), 2);
        p.slo_check = Some(check);
        let u = point_undecided(&r, &p).expect("undecided");
        assert_eq!(u.metric, Some((SloMetric::Ttft, 1000.0)));
        assert_eq!((u.attainment.good, u.attainment.sent), (138, 150));
        let Some(ToDecide::Requests { total, more }) = to_decide(&u.attainment, 0.9, Z95) else {
            panic!("requests")
        };
        assert_eq!(u.needs, ToDecide::Requests { total, more });
        let lower = |n: u64| wilson_effective(0.92, n as f64, Z95).unwrap().0;
        assert!(lower(total) >= 0.9 && lower(total - 1) < 0.9, "{total}");
    }

    #[test]
    fn an_undecided_share_of_valid_tool_calls_is_decided_by_more_calls() {
        let text = include_str!("../../../../tests/data/l4-gpu1-vllm.json");
        let r = crate::io::parse_report(text).expect("the reference parses");
        // 200 of 200 requests good (meets 90%), 19 of 20 calls valid against 90%:
        // [0.764, 0.991] straddles it, so the point is undecided by its calls.
        let share = attainment_interval(&[(19, 20)], Z95).unwrap();
        let check = crate::SloCheck {
            good: 200,
            sent: 200,
            target: 0.9,
            form: SloForm::Attainment,
            judgement: Some(Judgement::Undecided),
            tool_calls: vec![crate::ToolCallCheck {
                share: "valid".into(),
                required: 0.9,
                valid: 19,
                judged: 20,
                interval: Some(crate::ShareInterval {
                    low: share.low,
                    high: share.high,
                    design_effect: 1.0,
                    trials: 1,
                }),
                judgement: Judgement::Undecided,
            }],
            ..Default::default()
        };
        let p = Point {
            slo_check: Some(check),
            ..Point::default()
        };
        let u = point_undecided(&r, &p).expect("undecided");
        assert_eq!(u.tool_calls.as_deref(), Some("valid"));
        assert_eq!((u.attainment.good, u.attainment.sent), (19, 20));
        let Some(ToDecide::Requests { total, .. }) = to_decide(&share, 0.9, Z95) else {
            panic!("calls")
        };
        assert_eq!(
            u.needs,
            ToDecide::Requests {
                total,
                more: total - 20
            }
        );
        let lower = |n: u64| wilson_effective(0.95, n as f64, Z95).unwrap().0;
        assert!(lower(total) >= 0.9 && lower(total - 1) < 0.9, "{total}");
    }

    #[test]
    fn a_request_without_an_answer_counts_once_against_ttfat() {
        let text = include_str!("../../../../tests/data/l4-gpu1-vllm.json");
        let mut r = crate::io::parse_report(text).expect("the reference parses");
        r.slo.percentile = Some(90.0);
        r.slo.bounds = [(SloMetric::Ttfat, 2000.0)].into_iter().collect();
        let mut p = Point::default();
        let mut check = crate::SloCheck {
            good: 136,
            sent: 150,
            target: 0.9,
            form: SloForm::Percentile,
            judgement: Some(Judgement::Undecided),
            ..Default::default()
        };
        // 14 missed TTFAT, 4 of them because they gave no answer at all.
        check.misses.insert("ttfat".into(), 14);
        check.misses.insert("no_answer".into(), 4);
        p.slo_check = Some(check);
        let u = point_undecided(&r, &p).expect("undecided");
        assert_eq!((u.attainment.good, u.attainment.sent), (136, 150));
    }
}
