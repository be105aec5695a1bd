//! The joint covariance of the fitted step costs: a heteroskedasticity- and
//! autocorrelation-consistent (HAC) sandwich, Newey & West (1987), "A simple,
//! positive semi-definite, heteroskedasticity and autocorrelation consistent
//! covariance matrix", *Econometrica* 55(3).
//!
//! Consecutive steps of one trial are not independent (a slow step delays the
//! next one's batch, a warm cache helps several in a row), and their residuals'
//! variance grows with the batch: the classical `(XᵀWX)⁻¹ σ²` understates the
//! costs' errors and says nothing of how they move together. For the weighted
//! (Huber) least squares of [`super::solve`], with scores `uᵢ = wᵢ eᵢ xᵢ`:
//!
//! `V = n / (n − p) · A⁻¹ S A⁻¹`, `A = XᵀWX`,
//! `S = Σᵢ uᵢuᵢᵀ + Σ_{l=1..L} (1 − l/(L+1)) Σᵢ (uᵢuᵢ₋ₗᵀ + uᵢ₋ₗuᵢᵀ)`,
//!
//! the lags taken only between steps of the same trial (steps are in time order
//! within a trial; trials are independent of one another), with Bartlett weights
//! (which keep `S` positive semi-definite) and the bandwidth
//! `L = ⌊4 (n/100)^{2/9}⌋` (Newey & West 1994, "Automatic lag selection in
//! covariance matrix estimation", *Review of Economic Studies* 61(4)). `n/(n−p)`
//! is the usual small-sample factor. The Huber weights enter as in the IRLS
//! fixed point (the bread is `XᵀWX`), the form the classical errors used before.

use nalgebra::{DMatrix, DVector};

/// The HAC lag bandwidth for `n` observations (Newey & West 1994's rule).
pub fn bandwidth(n: usize) -> usize {
    (4.0 * (n as f64 / 100.0).powf(2.0 / 9.0)).floor().max(0.0) as usize
}

/// The HAC covariance of weighted least-squares coefficients: design `x` (n × p),
/// weights `w`, residuals `res`, and `trials`: the lengths of the consecutive
/// runs of rows that belong to one trial (rows past their sum form one more).
/// `None` when `XᵀWX` cannot be inverted or a value is not finite.
pub fn hac(
    x: &DMatrix<f64>,
    w: &DVector<f64>,
    res: &DVector<f64>,
    trials: &[usize],
) -> Option<DMatrix<f64>> {
    let (n, p) = x.shape();
    if n == 0 || p == 0 || w.len() != n || res.len() != n {
        return None;
    }
    let bread: DMatrix<f64> = DMatrix::from_fn(p, p, |a, b| {
        (0..n).map(|i| w[i] * x[(i, a)] * x[(i, b)]).sum::<f64>()
    });
    let inv = bread.try_inverse()?;
    // Scores, one row per step.
    let u = DMatrix::from_fn(n, p, |i, c| w[i] * res[i] * x[(i, c)]);
    // The trial each row belongs to, for lags that stay inside one trial.
    let mut trial = vec![0usize; n];
    let mut start = 0usize;
    for (k, &len) in trials.iter().enumerate() {
        let end = (start + len).min(n);
        trial[start..end].fill(k);
        start = end;
    }
    trial[start..].fill(trials.len());
    let lags = bandwidth(n);
    let mut meat = DMatrix::<f64>::zeros(p, p);
    for i in 0..n {
        let ui = u.row(i);
        meat += ui.transpose() * ui;
        for l in 1..=lags.min(i) {
            let j = i - l;
            if trial[j] != trial[i] {
                break;
            }
            let k = 1.0 - l as f64 / (lags as f64 + 1.0);
            let cross = ui.transpose() * u.row(j);
            meat += (&cross + cross.transpose()) * k;
        }
    }
    let dof = n.saturating_sub(p).max(1) as f64;
    let v: DMatrix<f64> = &inv * meat * &inv * (n as f64 / dof);
    let v = (&v + v.transpose()) * 0.5;
    v.iter().all(|e| e.is_finite()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    /// y = 2 + 3 t + e over `n` rows of `t` in [0, 1], e an AR(1) with
    /// coefficient `phi` (unit innovations).
    fn ar1(n: usize, phi: f64, seed: u64) -> (DMatrix<f64>, DVector<f64>) {
        let mut rng = StdRng::seed_from_u64(seed);
        let x = DMatrix::from_fn(
            n,
            2,
            |i, c| if c == 0 { 1.0 } else { (i % 17) as f64 / 16.0 },
        );
        let mut e = 0.0;
        let y = DVector::from_fn(n, |i, _| {
            let z: f64 = StandardNormal.sample(&mut rng);
            e = phi * e + z;
            2.0 + 3.0 * x[(i, 1)] + e
        });
        (x, y)
    }

    fn ols_cov(x: &DMatrix<f64>, y: &DVector<f64>) -> (DVector<f64>, DMatrix<f64>, f64) {
        let xtx = x.transpose() * x;
        let inv = xtx.clone().try_inverse().unwrap_or(xtx);
        let beta = &inv * x.transpose() * y;
        let res = y - x * &beta;
        let s2 = res.norm_squared() / (x.nrows() - x.ncols()) as f64;
        (res, inv, s2)
    }

    #[test]
    fn the_bandwidth_follows_newey_and_west() {
        assert_eq!(bandwidth(100), 4);
        assert_eq!(bandwidth(2000), 7);
        assert_eq!(bandwidth(1), 1);
    }

    #[test]
    fn independent_errors_give_the_classical_covariance() {
        let (x, y) = ar1(4000, 0.0, 7);
        let (res, inv, s2) = ols_cov(&x, &y);
        let w = DVector::from_element(x.nrows(), 1.0);
        let v = hac(&x, &w, &res, &[x.nrows()]).unwrap_or_else(|| DMatrix::zeros(2, 2));
        for j in 0..2 {
            let ratio = v[(j, j)] / (s2 * inv[(j, j)]);
            assert!((0.85..1.15).contains(&ratio), "term {j}: ratio {ratio}");
        }
    }

    #[test]
    fn positively_autocorrelated_errors_widen_it_within_a_trial_only() {
        // AR(1) with phi = 0.6: the long-run variance of the mean is
        // (1 + phi) / (1 - phi) = 4 times the classical one.
        let (x, y) = ar1(4000, 0.6, 11);
        let (res, inv, s2) = ols_cov(&x, &y);
        let w = DVector::from_element(x.nrows(), 1.0);
        let one = hac(&x, &w, &res, &[x.nrows()]).unwrap_or_else(|| DMatrix::zeros(2, 2));
        let ratio = one[(0, 0)] / (s2 * inv[(0, 0)]);
        assert!(ratio > 2.0, "intercept variance ratio {ratio}");
        // Every step its own trial: no lag is used, back to White's form.
        let alone = vec![1; x.nrows()];
        let white = hac(&x, &w, &res, &alone).unwrap_or_else(|| DMatrix::zeros(2, 2));
        let ratio = white[(0, 0)] / (s2 * inv[(0, 0)]);
        assert!((0.85..1.15).contains(&ratio), "no lags: ratio {ratio}");
    }

    #[test]
    fn a_singular_design_has_no_covariance() {
        let x = DMatrix::from_fn(10, 2, |_, _| 1.0);
        let w = DVector::from_element(10, 1.0);
        let res = DVector::from_element(10, 0.5);
        assert!(hac(&x, &w, &res, &[10]).is_none());
    }
}
