//! How settled a point's per-trial values are: the half-width of Student's t
//! interval of their mean (95%), as a share of the mean. Trials are the unit, so
//! the trial-to-trial variation (a warmer GPU, another batch mix) is what the
//! width measures; many requests in one trial cannot hide it. Adaptive trials
//! (`trials = "auto"`) stop a point once the per-trial medians of TTFT and TPOT are
//! this settled (docs/statistics.md, "Adaptive trials").

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::LEVEL;

/// The 95% t interval's half-width of the mean of `values` over the mean; `None`
/// with fewer than two finite values or a mean of zero.
pub fn relative_half_width(values: &[f64]) -> Option<f64> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let t = StudentsT::new(0.0, 1.0, n - 1.0).ok()?;
    let half = t.inverse_cdf(0.5 + LEVEL / 2.0) * (var / n).sqrt();
    Some(half / mean.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_close_trials_are_settled_and_two_far_apart_are_not() {
        // t(0.975, 1) = 12.71; sd of {99, 101} = 1.414, se = 1: 12.7%.
        let w = relative_half_width(&[99.0, 101.0]).unwrap();
        assert!((w - 0.1271).abs() < 1e-3, "{w}");
        let tight = relative_half_width(&[100.0, 100.1, 99.9, 100.0, 100.05]).unwrap();
        assert!(tight < 0.002, "{tight}");
        assert!(relative_half_width(&[50.0, 150.0]).unwrap() > 5.0);
    }

    #[test]
    fn one_trial_or_a_zero_mean_says_nothing() {
        assert_eq!(relative_half_width(&[100.0]), None);
        assert_eq!(relative_half_width(&[100.0, f64::NAN]), None);
        assert_eq!(relative_half_width(&[-1.0, 1.0]), None);
    }
}
