//! Welch's t interval for the relative change of a mean over trials (Welch 1947):
//! what is left when a report's requests file is gone and only per-trial values
//! remain. AIPerf's multi-run confidence intervals are t intervals of this kind.
//!
//! With means `a` (baseline) and `b`, variances `va`, `vb` over `na`, `nb` trials,
//! the test of "no change" is Welch's test of `b − a`: standard error
//! `sqrt(va/na + vb/nb)`, ν by Welch–Satterthwaite. The change is shown relative
//! to the baseline's mean, `b/a − 1`, with the interval of `b − a` divided by `a`
//! (the baseline's mean taken as the scale). It assumes trial values near normal;
//! with two trials a side ν is about 2 and the interval is wide, as it should be.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::Change;

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, var)
}

/// The relative change of the mean of `cand` against that of `base`; `None` with
/// fewer than two values a side, a zero baseline, or anything not finite.
pub fn change(base: &[f64], cand: &[f64]) -> Option<Change> {
    if base.len() < 2 || cand.len() < 2 || base.iter().chain(cand).any(|v| !v.is_finite()) {
        return None;
    }
    let (na, nb) = (base.len() as f64, cand.len() as f64);
    let ((a, va), (b, vb)) = (mean_var(base), mean_var(cand));
    if a == 0.0 {
        return None;
    }
    let point = b / a - 1.0;
    let (sa, sb) = (va / na, vb / nb);
    let se = (sa + sb).sqrt() / a.abs();
    let trials = base.len().min(cand.len());
    if se == 0.0 {
        let p = if point == 0.0 { 1.0 } else { 0.0 };
        return Some(Change {
            change: point,
            ci: (point, point),
            p,
            se,
            trials,
        });
    }
    let df = (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let t = StudentsT::new(0.0, 1.0, df.max(1.0)).ok()?;
    let half = t.inverse_cdf(0.975) * se;
    let p = (2.0 * t.sf((point / se).abs())).min(1.0);
    // Metrics are positive: no change is below -100%.
    Some(Change {
        change: point,
        ci: ((point - half).max(-1.0), point + half),
        p,
        se,
        trials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_trials_give_a_wide_interval() {
        let ch = change(&[100.0, 102.0], &[103.0, 105.0]).unwrap();
        assert!((ch.change - 0.0297).abs() < 1e-3, "{ch:?}");
        assert!(ch.ci.0 < 0.0 && ch.ci.1 > 0.06, "{ch:?}");
        assert!(ch.p > 0.05);
    }

    #[test]
    fn too_few_trials_say_nothing() {
        assert!(change(&[1.0], &[1.0, 2.0]).is_none());
        assert!(change(&[0.0, 0.0], &[1.0, 2.0]).is_none());
    }
}
