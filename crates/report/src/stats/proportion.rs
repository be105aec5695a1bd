//! The change of a share of requests (SLO attainment: good / sent) between two
//! sides: **Newcombe's hybrid score interval** for a difference of proportions
//! (Newcombe 1998, "Interval estimation for the difference between independent
//! proportions", *Statistics in Medicine* 17:873-890, method 10), built from each
//! side's Wilson score interval, so that 24 of 24 against 24 of 24 is "0% (−x% to
//! +y%)", never "0% (0% to 0%)", and no p-value is 0.
//!
//! The trial is the unit here too: requests of one trial are not independent, so
//! each side's Wilson interval is taken on its **effective** number of requests,
//! `n / deff`, with the design effect (Kish 1965) of the SLO judgement
//! ([`super::dispersed`]: the Pearson dispersion of the trials' counts, the
//! method-of-moments estimate of a beta-binomial's over-dispersion). With one
//! trial a side it cannot be estimated, and the change is not testable.
//!
//! The p-value is the interval's own: the largest level at which the interval
//! still excludes 0 (found by bisection on the normal quantile), so a row's p and
//! its interval never disagree.

use super::change::{normal_quantile, two_sided_p};
use super::trials::Untestable;
use super::Change;

/// One side's trials as `(good, sent)`.
pub type Counts = [(u64, u64)];

/// The pooled share and the effective number of requests of a side (the design
/// effect of [`super::dispersed::design_effect`], the one the SLO judgement uses).
fn effective(c: &Counts) -> Option<(f64, f64)> {
    let (g, n) = c
        .iter()
        .fold((0u64, 0u64), |a, t| (a.0 + t.0.min(t.1), a.1 + t.1));
    if n == 0 {
        return None;
    }
    let p = g as f64 / n as f64;
    Some((p, n as f64 / super::dispersed::design_effect(c)))
}

/// The Wilson interval of a share `p` of `n` effective requests (the one
/// definition, [`super::dispersed::wilson_effective`]).
fn wilson(p: f64, n: f64, z: f64) -> (f64, f64) {
    super::dispersed::wilson_effective(p, n, z).unwrap_or((0.0, 1.0))
}

/// Newcombe's interval of `p2 − p1` at the normal quantile `z`.
fn newcombe(s1: (f64, f64), s2: (f64, f64), z: f64) -> (f64, f64) {
    let ((p1, n1), (p2, n2)) = (s1, s2);
    let (l1, u1) = wilson(p1, n1, z);
    let (l2, u2) = wilson(p2, n2, z);
    let d = p2 - p1;
    (
        d - ((p2 - l2).powi(2) + (u1 - p1).powi(2)).sqrt(),
        d + ((u2 - p2).powi(2) + (p1 - l1).powi(2)).sqrt(),
    )
}

/// The relative change of the candidate's share against the baseline's, with
/// Newcombe's 95% interval over the effective requests and its p-value.
pub fn change(base: &Counts, cand: &Counts) -> Result<Change, Untestable> {
    let (Some(s1), Some(s2)) = (effective(base), effective(cand)) else {
        return Err(Untestable::NoValue);
    };
    let trials = |c: &Counts| c.iter().filter(|t| t.1 > 0).count();
    let (kb, kc) = (trials(base), trials(cand));
    if kb < 2 || kc < 2 {
        return Err(Untestable::TooFewTrials { base: kb, cand: kc });
    }
    let p1 = s1.0;
    if p1 == 0.0 {
        return Err(Untestable::ZeroBaseline);
    }
    let z95 = normal_quantile(0.975);
    let (lo, hi) = newcombe(s1, s2, z95);
    let d = s2.0 - s1.0;
    // The level at which the interval's nearer end touches 0.
    let p = if d == 0.0 {
        1.0
    } else {
        let excludes = |z: f64| {
            let (l, h) = newcombe(s1, s2, z);
            l > 0.0 || h < 0.0
        };
        let (mut a, mut b) = (0.0_f64, 40.0_f64);
        if excludes(b) {
            two_sided_p(b)
        } else {
            for _ in 0..60 {
                let m = (a + b) / 2.0;
                if excludes(m) {
                    a = m;
                } else {
                    b = m;
                }
            }
            two_sided_p(a)
        }
    };
    Ok(Change {
        change: d / p1,
        ci: (lo / p1, hi / p1),
        p,
        se: (hi - lo) / (2.0 * z95) / p1,
        df: f64::INFINITY,
        trials: kb.min(kc),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_newcombes_worked_example() {
        // Newcombe 1998, Table II, example (a): 56/70 vs 48/80, difference 0.2,
        // method 10 interval (0.0524, 0.3339). As single samples (no clustering):
        // the design effect of two equal halves is 1.
        let (lo, hi) = newcombe(
            (56.0 / 70.0, 70.0),
            (48.0 / 80.0, 80.0),
            normal_quantile(0.975),
        );
        // The interval of p2 − p1 = −0.2 is (−0.3339, −0.0524).
        assert!(
            (lo + 0.3339).abs() < 1e-3 && (hi + 0.0524).abs() < 1e-3,
            "{lo} {hi}"
        );
    }

    #[test]
    fn all_good_on_both_sides_is_no_change_with_a_real_interval() {
        let c = change(&[(18, 18), (18, 18)], &[(18, 18), (18, 18)]).unwrap();
        assert_eq!(c.change, 0.0);
        assert_eq!(c.p, 1.0);
        assert!(c.ci.0 < -0.05 && c.ci.1 > 0.05, "{c:?}");
    }

    #[test]
    fn a_small_drop_with_no_spread_is_not_significant() {
        // 24/24, 24/24 against 22/24, 22/24: a Welch test on the shares (zero
        // variance) said p = 0; Newcombe does not.
        let c = change(&[(24, 24), (24, 24)], &[(22, 24), (22, 24)]).unwrap();
        assert!(c.p > 0.05 && c.ci.0 < 0.0 && c.ci.1 > 0.0, "{c:?}");
        let big = change(&[(24, 24), (24, 24)], &[(5, 24), (6, 24)]).unwrap();
        assert!(big.p < 1e-6 && big.ci.1 < -0.5, "{big:?}");
    }

    #[test]
    fn over_dispersed_trials_widen_the_interval() {
        let tight = change(&[(45, 50), (45, 50)], &[(40, 50), (40, 50)]).unwrap();
        let loose = change(&[(50, 50), (40, 50)], &[(45, 50), (35, 50)]).unwrap();
        assert!(loose.ci.1 - loose.ci.0 > tight.ci.1 - tight.ci.0);
        assert!(super::super::dispersed::design_effect(&[(50, 50), (40, 50)]) > 1.0);
    }

    #[test]
    fn one_trial_a_side_is_not_testable() {
        assert!(matches!(
            change(&[(10, 10)], &[(9, 10), (9, 10)]),
            Err(Untestable::TooFewTrials { base: 1, cand: 2 })
        ));
    }
}
