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
    /// Trials behind the smaller side.
    pub trials: usize,
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
/// at the per-test level `alpha`, from a change whose standard error is `se` with
/// `trials` per side (the standard error shrinks as one over the root of the
/// trials): `n · ((z(1-α/2) + z(0.8)) · se / effect)²`, rounded up. `None` when
/// it cannot be said (no spread measured, or no trials).
pub fn trials_needed(se: f64, trials: usize, effect: f64, alpha: f64) -> Option<u64> {
    if !(se.is_finite() && se > 0.0 && effect > 0.0 && trials > 0) {
        return None;
    }
    let z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(0.8);
    let n = trials as f64 * (z * se / effect).powi(2);
    (n.is_finite() && n < 1e9).then(|| n.ceil().max(2.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trials_needed_grows_with_the_noise() {
        let a = trials_needed(0.01, 2, 0.02, 0.05).unwrap();
        let b = trials_needed(0.02, 2, 0.02, 0.05).unwrap();
        assert!(b >= 4 * a - 4, "{a} {b}");
        assert_eq!(trials_needed(0.0, 2, 0.02, 0.05), None);
        assert_eq!(trials_needed(f64::NAN, 2, 0.02, 0.05), None);
    }

    #[test]
    fn p_values_are_two_sided() {
        assert!((two_sided_p(1.959_964) - 0.05).abs() < 1e-4);
        assert_eq!(two_sided_p(f64::INFINITY), 0.0);
        assert_eq!(two_sided_p(f64::NAN), 1.0);
    }
}
