//! The attainment of a point over its trials, with an interval that allows for
//! over-dispersion between trials.
//!
//! Requests of one trial share its conditions (a warmer GPU, another batch mix), so
//! the per-trial attainment varies more than a binomial would (measured: 1.1-1.6x
//! the binomial variance over 166 trials), and a Wilson interval on the pooled
//! requests is too narrow. The method:
//!
//! 1. **Design effect** (Kish 1965, *Survey Sampling*, §8.2): the variance of the
//!    pooled attainment over the binomial variance, estimated by the method of
//!    moments as the Pearson dispersion of the trials' `good / not good` table,
//!    `deff = X² / (k − 1)` with `X² = Σ (g_i − p̂ s_i)² / (s_i p̂ (1 − p̂))`
//!    over the `k` trials (`g_i` good of `s_i` sent, `p̂` pooled). This is
//!    Williams' (1982) moment estimator of the beta-binomial dispersion
//!    `1 + (m − 1) ρ` for trials of `m` requests (Crowder 1978), the
//!    quasi-binomial scale of McCullagh & Nelder (1989, §4.5). It is floored at 1:
//!    trials that agree more than a binomial would never narrow the interval.
//!    With one trial nothing is known of the spread between trials and the design
//!    effect is 1 (the pooled Wilson interval). With two trials it rests on one
//!    degree of freedom: often 1 (floored), sometimes large; on average it
//!    widens the interval by about what the spread needs (the coverage check in
//!    the tests, and docs/statistics.md). A pooled attainment of 0 or 1 (every
//!    trial alike) has a design effect of 1.
//! 2. **Interval**: the Wilson score interval (Wilson 1927) of `p̂` on the
//!    effective sample size `n / deff` (Kish's effective `n`; the same use of the
//!    Wilson interval for clustered survey proportions as Korn & Graubard 1998).
//!
//! References: Kish, L. (1965), *Survey Sampling*, Wiley. Crowder, M. J. (1978),
//! *Applied Statistics* 27:34–37. Williams, D. A. (1982), *Applied Statistics*
//! 31:144–148. McCullagh, P. & Nelder, J. A. (1989), *Generalized Linear Models*,
//! 2nd ed., Chapman & Hall. Korn, E. L. & Graubard, B. I. (1998), *Survey
//! Methodology* 24:193–201. Wilson, E. B. (1927), *JASA* 22:209–212.

/// A point's attainment over its trials with its over-dispersed interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dispersed {
    /// Good requests over all trials.
    pub good: u64,
    /// Requests sent over all trials.
    pub sent: u64,
    /// Trials with at least one request sent.
    pub trials: u32,
    /// The design effect (≥ 1): the variance of the pooled attainment over the
    /// binomial one.
    pub design_effect: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

impl Dispersed {
    /// The pooled attainment, `good / sent`.
    pub fn attainment(&self) -> f64 {
        self.good as f64 / self.sent as f64
    }

    /// The effective sample size, `sent / design_effect`.
    pub fn effective_n(&self) -> f64 {
        self.sent as f64 / self.design_effect
    }
}

/// The design effect of trials of `(good, sent)` requests (see the module doc):
/// `max(1, X² / (k − 1))`; 1 with fewer than two trials that sent requests or a
/// pooled attainment of 0 or 1.
pub fn design_effect(trials: &[(u64, u64)]) -> f64 {
    let used: Vec<(f64, f64)> = trials
        .iter()
        .filter(|(_, s)| *s > 0)
        .map(|&(g, s)| (g.min(s) as f64, s as f64))
        .collect();
    if used.len() < 2 {
        return 1.0;
    }
    let good: f64 = used.iter().map(|t| t.0).sum();
    let sent: f64 = used.iter().map(|t| t.1).sum();
    let p = good / sent;
    let pq = p * (1.0 - p);
    if pq <= 0.0 {
        return 1.0;
    }
    let x2: f64 = used
        .iter()
        .map(|&(g, s)| (g - p * s).powi(2) / (s * pq))
        .sum();
    let deff = x2 / (used.len() - 1) as f64;
    if deff.is_finite() {
        deff.max(1.0)
    } else {
        1.0
    }
}

/// The Wilson score interval of a proportion `p` on `n` (not necessarily whole)
/// observations at the normal quantile `z`; `None` when `n` is not positive.
pub fn wilson_effective(p: f64, n: f64, z: f64) -> Option<(f64, f64)> {
    if n.is_nan() || n <= 0.0 || !p.is_finite() {
        return None;
    }
    let p = p.clamp(0.0, 1.0);
    let z2 = z * z;
    let centre = p + z2 / (2.0 * n);
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let denom = 1.0 + z2 / n;
    let lo = ((centre - half) / denom).clamp(0.0, 1.0);
    let hi = ((centre + half) / denom).clamp(0.0, 1.0);
    // At the ends the interval reaches exactly 0 or 1 (rounding aside).
    Some((
        if p <= 0.0 { 0.0 } else { lo },
        if p >= 1.0 { 1.0 } else { hi },
    ))
}

/// The pooled attainment of trials of `(good, sent)` requests with its interval at
/// the normal quantile `z`, allowing for over-dispersion between trials (see the
/// module doc); `None` when nothing was sent.
pub fn attainment_interval(trials: &[(u64, u64)], z: f64) -> Option<Dispersed> {
    let good: u64 = trials.iter().map(|&(g, s)| g.min(s)).sum();
    let sent: u64 = trials.iter().map(|t| t.1).sum();
    if sent == 0 {
        return None;
    }
    let design_effect = design_effect(trials);
    let (low, high) = wilson_effective(good as f64 / sent as f64, sent as f64 / design_effect, z)?;
    Some(Dispersed {
        good,
        sent,
        trials: trials.iter().filter(|t| t.1 > 0).count() as u32,
        design_effect,
        low,
        high,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{wilson_interval, Z95};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn one_trial_or_trials_that_agree_give_the_pooled_wilson_interval() {
        let one = attainment_interval(&[(44, 48)], Z95).unwrap();
        let (lo, hi) = wilson_interval(44, 48, Z95).unwrap();
        assert_eq!(one.design_effect, 1.0);
        assert!(close(one.low, lo) && close(one.high, hi), "{one:?}");
        // Two trials of 22 of 24: no spread between them, floored at 1.
        let same = attainment_interval(&[(22, 24), (22, 24)], Z95).unwrap();
        assert_eq!(same.design_effect, 1.0);
        assert!(close(same.low, lo) && close(same.high, hi));
        // Every request good, or none: every trial alike.
        assert_eq!(design_effect(&[(24, 24), (10, 10)]), 1.0);
        assert_eq!(design_effect(&[(0, 24), (0, 10)]), 1.0);
        assert_eq!(attainment_interval(&[(0, 0)], Z95), None);
        // A trial that sent nothing is no trial.
        assert_eq!(design_effect(&[(20, 24), (0, 0)]), 1.0);
    }

    #[test]
    fn the_design_effect_is_the_pearson_dispersion_hand_checked() {
        // 20 and 24 of 24: p = 44/48, X² = (4 + 4) / (24 · 0.9167 · 0.0833) = 4.3636
        // on one degree of freedom; n_eff = 48 / 4.3636 = 11.
        let two = attainment_interval(&[(20, 24), (24, 24)], Z95).unwrap();
        assert!(close(two.design_effect, 48.0 / 11.0), "{two:?}");
        assert!(close(two.effective_n(), 11.0));
        // Wilson of 0.91667 on n = 11 (computed by hand from the formula).
        assert!(
            close(two.low, 0.631_610_8) && close(two.high, 0.986_028_4),
            "{two:?}"
        );
        // Pooled Wilson says [0.8045, 0.9671]: over-confident.
        let (lo, _) = wilson_interval(44, 48, Z95).unwrap();
        assert!(two.low < lo - 0.15);
        // Four trials of 100: 90, 80, 95, 85 -> p = 0.875, X² = 11.4286 on 3 df.
        let four = attainment_interval(&[(90, 100), (80, 100), (95, 100), (85, 100)], Z95).unwrap();
        assert!(close(four.design_effect, 11.428_571_4 / 3.0), "{four:?}");
        assert!(
            close(four.low, 0.798_239_4) && close(four.high, 0.925_290_0),
            "{four:?}"
        );
        // Three trials 21, 23, 18 of 24: X² = 4.4129 on 2 df.
        let three = attainment_interval(&[(21, 24), (23, 24), (18, 24)], Z95).unwrap();
        assert!(close(three.design_effect, 2.206_451_6), "{three:?}");
        assert!(close(three.low, 0.704_574_3) && close(three.high, 0.941_581_2));
    }

    #[test]
    fn wilson_on_a_whole_n_is_the_ordinary_interval() {
        for (g, n) in [(8u64, 10u64), (16, 16), (0, 5), (37, 40)] {
            let (a, b) = wilson_interval(g, n, Z95).unwrap();
            let (c, d) = wilson_effective(g as f64 / n as f64, n as f64, Z95).unwrap();
            assert!(close(a, c) && close(b, d), "{g}/{n}");
        }
        assert_eq!(wilson_effective(0.5, 0.0, Z95), None);
    }
}
