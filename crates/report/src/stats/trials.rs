//! The one test of a change between two sides measured in trials: `compare`'s
//! rows and the verdict's ranking both call [`change`], so they cannot disagree.
//!
//! **The trial is the unit.** Each side's value at a load level is the mean over
//! its trials of the trial's figure (a trial's median TTFT, its output tokens per
//! second, ...). Requests within a trial are not independent of each other (they
//! share the trial's warm-up, batch mix and the machine's state at that time), and
//! measured on real clocks 30-50% of the variance at two trials lay between trials
//! and runs; a test that pooled requests (or bootstrapped them, with a normal
//! reference on two or three trials) called identical engines different in half
//! of its tables.
//!
//! **Welch's t** (Welch 1947) on the difference of the two means, with the
//! Welch-Satterthwaite degrees of freedom (Satterthwaite 1946), shown relative to
//! the baseline's mean (`b/a − 1`, its interval the interval of `b − a` over `a`).
//! The variance of one trial's figure at a level is a **random-effects** estimate
//! (the method of moments of DerSimonian & Laird 1986, with the trial as the
//! random effect): the noise within a trial plus the variation between trials
//! beyond it,
//!
//! `v = w̄ + max(τ²_pooled · m², τ²_own)`,
//!
//! - `w̄`, the **within-trial** variance: the mean over the level's trials of the
//!   sampling variance of each trial's figure from its own requests (an
//!   order-statistic interval for a quantile, a binomial for good requests), when
//!   known (0 otherwise). Trials that agree exactly (24 of 24 good twice) still
//!   carry it, so no test returns p = 0 or a zero-width interval;
//! - `τ²_own = max(0, s² − w̄)`, the level's **between-trial excess**: how much more
//!   its `k` trials scatter (`s²`, `k − 1` degrees of freedom) than their requests
//!   explain;
//! - `τ²_pooled`, that excess relative to the level's mean squared, **pooled over
//!   the side's load levels** ([`pooled_spread`]) with `Σ (k_i − 1)` degrees of
//!   freedom, as in a one-way analysis of variance with a common relative trial
//!   effect: with two trials a level, one level alone has one degree of freedom
//!   (a t quantile of 12.7 for 95%), three levels have three. The larger of the two
//!   is taken, so a level that scatters more than the others is not diluted by
//!   them.
//!
//! The degrees of freedom are Satterthwaite's for the sum: the excess's (pooled or
//! the level's own) against the within-trial part's, which rests on every request
//! of the trials and counts as many (a normal reference when nothing scatters
//! beyond the requests' noise).
//!
//! With one trial a side nothing measures the trial-to-trial variation: the change
//! is **not testable** ([`Untestable`]), and says what would make it so.
//! Equivalence ("the same within ±δ") is the two one-sided tests (TOST; Schuirmann
//! 1987) on the same standard error and degrees of freedom ([`Change::p_same`]).

use super::Change;

/// One side's trials of a metric at one load level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trials {
    /// Each trial's figure.
    pub values: Vec<f64>,
    /// Each trial's sampling variance of its figure from its own requests, when
    /// known (same order as `values`; absent entries are unknown).
    pub within: Vec<Option<f64>>,
}

impl Trials {
    /// Trials with no within-trial variance known.
    pub fn of(values: Vec<f64>) -> Trials {
        Trials {
            within: vec![None; values.len()],
            values,
        }
    }

    /// The mean over trials; `None` when there is none or one is not finite.
    pub fn mean(&self) -> Option<f64> {
        if self.values.is_empty() || self.values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        Some(self.values.iter().sum::<f64>() / self.values.len() as f64)
    }

    /// The mean of the within-trial variances, when every trial has one.
    fn within_mean(&self) -> Option<f64> {
        if self.within.len() != self.values.len() || self.within.is_empty() {
            return None;
        }
        let mut sum = 0.0;
        for w in &self.within {
            sum += w.filter(|w| w.is_finite() && *w >= 0.0)?;
        }
        Some(sum / self.within.len() as f64)
    }
}

/// The trial-to-trial spread of one metric over a side's load levels, relative to
/// each level's mean, pooled ([`pooled_spread`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Pooled squared coefficient of variation of a trial's figure.
    pub cv2: f64,
    /// Its degrees of freedom, `Σ (k_i − 1)`.
    pub df: f64,
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (m, 0.0);
    }
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, var)
}

/// The between-trial excess of one level: `max(0, s² − w̄)` and its mean; `None`
/// under two trials or with a value that is not finite.
fn excess(t: &Trials) -> Option<(f64, f64)> {
    let k = t.values.len();
    if k < 2 || t.values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let (m, s2) = mean_var(&t.values);
    Some(((s2 - t.within_mean().unwrap_or(0.0)).max(0.0), m))
}

/// The between-trial excess relative to each level's mean squared, pooled over
/// `levels` (the load levels of one engine and metric): `Σ (k_i − 1) τ²_i / m_i² /
/// Σ (k_i − 1)` over the levels with two trials or more and a non-zero mean.
/// `None` when no level has two.
pub fn pooled_spread<'a>(levels: impl IntoIterator<Item = &'a Trials>) -> Option<Spread> {
    let (mut sum, mut df) = (0.0, 0.0);
    for t in levels {
        let Some((tau2, m)) = excess(t) else {
            continue;
        };
        if m == 0.0 {
            continue;
        }
        let k = t.values.len() as f64;
        sum += (k - 1.0) * tau2 / (m * m);
        df += k - 1.0;
    }
    (df > 0.0).then(|| Spread { cv2: sum / df, df })
}

/// Why a change could not be tested, and what would make it testable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Untestable {
    /// A side has no value.
    NoValue,
    /// A side has fewer than two trials (the counts of each side).
    TooFewTrials {
        /// Trials of the baseline.
        base: usize,
        /// Trials of the candidate.
        cand: usize,
    },
    /// The baseline's value is 0: a relative change is not defined.
    ZeroBaseline,
    /// Every trial of both sides gave the same figure and nothing measured the
    /// noise within a trial.
    NoVariation,
}

impl std::fmt::Display for Untestable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Untestable::NoValue => write!(f, "a side has no value"),
            Untestable::TooFewTrials { base, cand } => write!(
                f,
                "{base} and {cand} trials: the trial-to-trial variation needs at least 2 trials a side (--trials 2)"
            ),
            Untestable::ZeroBaseline => write!(f, "the baseline is 0: no relative change"),
            Untestable::NoVariation => write!(
                f,
                "every trial gave the same figure and nothing measured its noise (the requests file would)"
            ),
        }
    }
}

/// The variance of one trial's figure at a level and its degrees of freedom (the
/// module doc's rule), with the level's mean.
fn trial_variance(t: &Trials, spread: Option<Spread>) -> (f64, f64, f64) {
    let k = t.values.len();
    let (m, s2) = mean_var(&t.values);
    let w = t.within_mean().unwrap_or(0.0);
    let own = ((s2 - w).max(0.0), (k - 1) as f64);
    let (tau2, df_tau) = match spread {
        Some(p) if p.cv2 * m * m >= own.0 => (p.cv2 * m * m, p.df),
        _ => own,
    };
    let v = w + tau2;
    // Satterthwaite: the excess on its degrees of freedom, the within-trial part on
    // the requests' (as good as infinite next to it).
    let df = if tau2 > 0.0 {
        v * v / (tau2 * tau2 / df_tau.max(1.0))
    } else {
        f64::INFINITY
    };
    (m, v, df)
}

/// The relative change of the candidate's mean over trials against the
/// baseline's, by Welch's t with each side's variance from `trial_variance`
/// (`spread`: the side's [`pooled_spread`] over its load levels, when known).
pub fn change(
    base: &Trials,
    base_spread: Option<Spread>,
    cand: &Trials,
    cand_spread: Option<Spread>,
) -> Result<Change, Untestable> {
    let (Some(_), Some(_)) = (base.mean(), cand.mean()) else {
        return Err(Untestable::NoValue);
    };
    let (kb, kc) = (base.values.len(), cand.values.len());
    if kb < 2 || kc < 2 {
        return Err(Untestable::TooFewTrials { base: kb, cand: kc });
    }
    let (a, va, dfa) = trial_variance(base, base_spread);
    let (b, vb, dfb) = trial_variance(cand, cand_spread);
    if a == 0.0 {
        return Err(Untestable::ZeroBaseline);
    }
    let (sa, sb) = (va / kb as f64, vb / kc as f64);
    let se_abs = (sa + sb).sqrt();
    if se_abs <= 0.0 || !se_abs.is_finite() {
        return Err(Untestable::NoVariation);
    }
    let df = (sa + sb).powi(2) / (sa * sa / dfa + sb * sb / dfb);
    let df = if df.is_nan() { 1.0 } else { df.max(1.0) };
    let point = b / a - 1.0;
    let se = se_abs / a.abs();
    let half = super::t_quantile(0.975, df) * se;
    let p = (2.0 * super::upper_tail(((b - a) / se_abs).abs(), df)).min(1.0);
    Ok(Change {
        change: point,
        // Metrics are positive: no change is below −100%.
        ci: ((point - half).max(-1.0), point + half),
        p,
        se,
        df,
        trials: kb.min(kc),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f64]) -> Trials {
        Trials::of(v.to_vec())
    }

    #[test]
    fn two_trials_alone_give_welchs_interval() {
        // Welch on 100, 102 vs 103, 105: difference 3, se sqrt(2/2 + 2/2) = 1.414,
        // df 2: t(0.975, 2) = 4.303, half-width 6.09 (R: t.test(c(103,105), c(100,102))).
        let ch = change(&t(&[100.0, 102.0]), None, &t(&[103.0, 105.0]), None).unwrap();
        assert!((ch.change - 3.0 / 101.0).abs() < 1e-12, "{ch:?}");
        assert!((ch.df - 2.0).abs() < 1e-9, "{ch:?}");
        let half = (ch.ci.1 - ch.ci.0) / 2.0 * 101.0;
        assert!((half - 6.085).abs() < 1e-2, "{ch:?}");
        // df 2: P(T > t) = (1 − t / sqrt(t² + 2)) / 2 at t = 3 / sqrt(2): p = 0.168.
        assert!((ch.p - 0.16795).abs() < 1e-4, "{ch:?}");
    }

    #[test]
    fn pooling_over_levels_gains_degrees_of_freedom() {
        let levels = [t(&[100.0, 102.0]), t(&[50.0, 51.0]), t(&[20.0, 20.4])];
        let s = pooled_spread(&levels).unwrap();
        assert_eq!(s.df, 3.0);
        let alone = change(&levels[0], None, &t(&[110.0, 112.0]), None).unwrap();
        let pooled = change(&levels[0], Some(s), &t(&[110.0, 112.0]), Some(s)).unwrap();
        assert!(pooled.df > alone.df, "{pooled:?} {alone:?}");
        assert!(pooled.p < alone.p, "{pooled:?} {alone:?}");
    }

    #[test]
    fn a_level_that_scatters_more_keeps_its_own_variance() {
        let quiet = [t(&[100.0, 100.1]), t(&[50.0, 50.05]), t(&[20.0, 20.02])];
        let loud = t(&[100.0, 140.0]);
        let mut all = quiet.to_vec();
        all.push(loud.clone());
        let s = pooled_spread(&all).unwrap();
        let (_, v, df) = trial_variance(&loud, Some(s));
        assert_eq!(df, 1.0);
        assert!((v - 800.0).abs() < 1e-9, "{v}");
        // A quiet level takes the pooled excess, with the pooled degrees of freedom.
        let (m, v, df) = trial_variance(&quiet[1], Some(s));
        assert_eq!(df, 4.0);
        assert!((v - s.cv2 * m * m).abs() < 1e-9, "{v}");
    }

    #[test]
    fn trials_within_their_requests_noise_rest_on_the_requests() {
        // Two trials that agree within what their requests explain: no excess, the
        // within-trial variance with a normal reference.
        let w = Trials {
            values: vec![10.0, 10.1],
            within: vec![Some(0.04), Some(0.04)],
        };
        let (_, v, df) = trial_variance(&w, None);
        assert_eq!((v, df), (0.04, f64::INFINITY));
        // Trials that scatter beyond it: the excess on its one degree of freedom.
        let w = Trials {
            values: vec![10.0, 11.0],
            within: vec![Some(0.04), Some(0.04)],
        };
        let (_, v, df) = trial_variance(&w, None);
        assert!((v - 0.5).abs() < 1e-12, "{v}");
        assert!(df > 1.0 && df < 1.5, "{df}");
    }

    #[test]
    fn identical_trials_never_give_p_zero() {
        // 24/24 good twice against 22/24 twice, as goodput rates with no within-trial
        // variance known: not testable rather than "p = 0".
        let a = t(&[1.0, 1.0]);
        let b = t(&[0.9, 0.9]);
        assert_eq!(change(&a, None, &b, None), Err(Untestable::NoVariation));
        // With the within-trial noise known, a finite interval around the change.
        let w = |v: &[f64], s: f64| Trials {
            values: v.to_vec(),
            within: vec![Some(s); v.len()],
        };
        let ch = change(&w(&[1.0, 1.0], 0.001), None, &w(&[0.9, 0.9], 0.004), None).unwrap();
        assert!(ch.p > 0.0 && ch.ci.0 < ch.ci.1, "{ch:?}");
    }

    #[test]
    fn one_trial_a_side_is_not_testable() {
        let e = change(&t(&[1.0]), None, &t(&[1.1, 1.2]), None).unwrap_err();
        assert_eq!(e, Untestable::TooFewTrials { base: 1, cand: 2 });
        assert!(e.to_string().contains("at least 2 trials"));
        assert_eq!(
            change(&t(&[0.0, 0.0]), None, &t(&[1.0, 2.0]), None),
            Err(Untestable::ZeroBaseline)
        );
    }

    #[test]
    fn a_aa_series_is_called_different_at_most_five_percent_of_the_time() {
        // Trials with a trial effect (sd 3%), three levels, two trials a side, no
        // within-trial variance known: the per-row false-positive rate at 5% stays
        // at or below 5% (the larger of the pooled and the level's own excess makes
        // it conservative, about 2%) and is not degenerate (seeded LCG, normal by
        // Box-Muller).
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut unif = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let mut normal = || {
            let (u, v) = (unif(), unif());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        };
        let (mut hits, mut n) = (0, 0);
        for _ in 0..2000 {
            let mut side = || -> Vec<Trials> {
                [100.0, 60.0, 30.0]
                    .iter()
                    .map(|m| t(&[m * (1.0 + 0.03 * normal()), m * (1.0 + 0.03 * normal())]))
                    .collect()
            };
            let (a, b) = (side(), side());
            let (sa, sb) = (pooled_spread(&a), pooled_spread(&b));
            for (x, y) in a.iter().zip(&b) {
                let ch = change(x, sa, y, sb).unwrap();
                hits += (ch.p <= 0.05) as u32;
                n += 1;
            }
        }
        let rate = f64::from(hits) / f64::from(n);
        assert!(rate > 0.005 && rate < 0.06, "{rate}");
    }
}
