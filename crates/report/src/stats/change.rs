//! A change of a candidate against a baseline, and what a test of it needs: the
//! normal quantile, two-sided p-values, and the trials that would detect a change.

/// A change of a candidate against a baseline, relative (`0.1`: 10% higher), with
/// its 95% interval and a two-sided p-value for "no change".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// `candidate / baseline - 1` of the point estimates.
    pub change: f64,
    /// 95% interval of the relative change.
    pub ci: (f64, f64),
    /// Two-sided p-value of "no change" (before any multiple-testing correction).
    pub p: f64,
    /// Standard error of the relative change (for the trials-needed estimate).
    pub se: f64,
    /// Degrees of freedom of the test's reference t distribution (infinite: normal).
    pub df: f64,
    /// Trials behind the smaller side.
    pub trials: usize,
}

impl Change {
    /// The p-value of "the change is at least `delta` either way" by the two
    /// one-sided tests (TOST; Schuirmann 1987) on this change's standard error and
    /// degrees of freedom: small when the change is shown to lie within ±`delta`.
    pub fn p_same(&self, delta: f64) -> f64 {
        if !(self.se > 0.0 && self.se.is_finite() && delta > 0.0) {
            return 1.0;
        }
        let lower = (self.change + delta) / self.se;
        let upper = (delta - self.change) / self.se;
        upper_tail(lower, self.df).max(upper_tail(upper, self.df))
    }
}

/// `P(T > t)` for Student's t with `df` degrees of freedom (normal when infinite).
pub fn upper_tail(t: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    if t.is_nan() {
        return 1.0;
    }
    // Beyond a million degrees of freedom t is the normal (and statrs's inverse
    // is slow to converge there).
    if df.is_finite() && df < 1e6 {
        if let Ok(d) = StudentsT::new(0.0, 1.0, df.max(1e-3)) {
            return d.sf(t);
        }
    }
    Normal::standard().sf(t)
}

/// The quantile of Student's t at `p` with `df` degrees of freedom (normal when
/// infinite).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if df.is_finite() && df < 1e6 {
        if let Ok(d) = StudentsT::new(0.0, 1.0, df.max(1e-3)) {
            return d.inverse_cdf(p.clamp(1e-300, 1.0 - 1e-16));
        }
    }
    normal_quantile(p)
}

/// The standard normal quantile at `p` (0 < p < 1).
pub fn normal_quantile(p: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::standard().inverse_cdf(p.clamp(1e-300, 1.0 - 1e-16))
}

/// Two-sided p-value of a z-score.
pub fn two_sided_p(z: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    if !z.is_finite() {
        return if z.is_nan() { 1.0 } else { 0.0 };
    }
    (2.0 * Normal::standard().sf(z.abs())).min(1.0)
}

/// Trials per side that would detect a relative change of `effect` with 80% power
/// at the per-test level `alpha`, from a change whose standard error is `se` on
/// `df` degrees of freedom with `trials` per side. With `n` trials a side the
/// standard error is `se · sqrt(trials / n)` and the degrees of freedom grow in
/// proportion to `n − 1`; the answer is the least `n` with
/// `(t(1 − α/2; df_n) + t(0.8; df_n)) · se_n ≤ effect`. `None` when it cannot be
/// said (no spread measured, no trials) or beyond 10,000.
pub fn trials_needed(se: f64, df: f64, trials: usize, effect: f64, alpha: f64) -> Option<u64> {
    if !(se.is_finite() && se > 0.0 && effect > 0.0 && trials > 0) {
        return None;
    }
    let k = trials as f64;
    let per_trial = if trials > 1 && df.is_finite() {
        df / (k - 1.0)
    } else {
        f64::INFINITY
    };
    // Doubling, then bisection: the power grows with n.
    let enough = |n: f64| {
        let df_n = per_trial * (n - 1.0).max(1.0);
        let se_n = se * (k / n).sqrt();
        (t_quantile(1.0 - alpha / 2.0, df_n) + t_quantile(0.8, df_n)) * se_n <= effect
    };
    let (mut lo, mut hi) = (1.0_f64, 2.0_f64);
    while !enough(hi) {
        lo = hi;
        hi *= 2.0;
        if hi > 1e4 {
            return None;
        }
    }
    while hi - lo > 1.0 {
        let mid = ((lo + hi) / 2.0).floor();
        if enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi.max(2.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trials_needed_grows_with_the_noise() {
        let a = trials_needed(0.01, f64::INFINITY, 2, 0.02, 0.05).unwrap();
        let b = trials_needed(0.02, f64::INFINITY, 2, 0.02, 0.05).unwrap();
        assert!(b >= 4 * a - 4, "{a} {b}");
        assert_eq!(trials_needed(0.0, 2.0, 2, 0.02, 0.05), None);
        assert_eq!(trials_needed(f64::NAN, 2.0, 2, 0.02, 0.05), None);
        // The normal answer: 2 * ((1.96 + 0.84) * 0.01 / 0.02)^2 = 3.9 -> 4.
        assert_eq!(a, 4);
        // On t with few degrees of freedom it takes more.
        let t = trials_needed(0.01, 2.0, 2, 0.02, 0.05).unwrap();
        assert!(t > a, "{t} {a}");
    }

    #[test]
    fn huge_degrees_of_freedom_are_the_normal_and_return() {
        for df in [1e6, 1e12, 1e300, f64::MAX] {
            assert!((t_quantile(0.975, df) - 1.959_964).abs() < 1e-4, "{df}");
            assert!((upper_tail(1.959_964, df) - 0.025).abs() < 1e-4, "{df}");
        }
        assert!((t_quantile(0.975, 2.0) - 4.302_653).abs() < 1e-4);
    }

    #[test]
    fn equivalence_needs_the_interval_inside_the_margin() {
        let c = |change: f64, se: f64| Change {
            change,
            ci: (change - 2.0 * se, change + 2.0 * se),
            p: 1.0,
            se,
            df: f64::INFINITY,
            trials: 3,
        };
        assert!(c(0.0, 0.005).p_same(0.02) < 0.001);
        // +1.7% (+0.1% to +3.4%) is not shown to be within ±2%.
        assert!(c(0.017, 0.0085).p_same(0.02) > 0.3);
    }

    #[test]
    fn p_values_are_two_sided() {
        assert!((two_sided_p(1.959_964) - 0.05).abs() < 1e-4);
        assert_eq!(two_sided_p(f64::INFINITY), 0.0);
        assert_eq!(two_sided_p(f64::NAN), 1.0);
    }
}
