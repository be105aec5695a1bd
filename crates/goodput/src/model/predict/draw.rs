//! The fitted costs of one interval draw, moved together by their joint
//! covariance: a multivariate normal draw `μ + L z`, `z ~ N(0, I)`, with `L` the
//! Cholesky factor of the covariance `Σ = L Lᵀ` (nalgebra's). A covariance that
//! rounding left not quite positive definite is factored by its eigenvalues
//! instead (`L = Q √max(Λ, 0)`, the nearest positive semi-definite matrix in
//! Frobenius norm, Higham 1988). The step costs come from the fit's HAC
//! covariance ([`crate::model::fit::covariance`]); the front-end costs (found by
//! search, not least squares) and every cost of an older file without a
//! covariance move alone, by their standard errors.

use nalgebra::{Cholesky, DMatrix, DVector, SymmetricEigen};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::model::fit::evidence::Evidence;
use goodput_sim::SimConfig;

/// A zero-mean multivariate normal, by a factor `L` of its covariance.
#[derive(Debug, Clone)]
pub struct Mvn {
    factor: DMatrix<f64>,
}

impl Mvn {
    /// The normal of covariance `cov` (square, symmetric); `None` when it is not
    /// finite or not square.
    pub fn new(cov: &DMatrix<f64>) -> Option<Mvn> {
        if !cov.is_square() || cov.nrows() == 0 || cov.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let sym = (cov + cov.transpose()) * 0.5;
        if let Some(ch) = Cholesky::new(sym.clone()) {
            return Some(Mvn { factor: ch.l() });
        }
        let eig = SymmetricEigen::new(sym);
        let root = eig.eigenvalues.map(|l| l.max(0.0).sqrt());
        let factor = eig.eigenvectors * DMatrix::from_diagonal(&root);
        factor
            .iter()
            .all(|v| v.is_finite())
            .then_some(Mvn { factor })
    }

    /// Its dimension.
    pub fn dim(&self) -> usize {
        self.factor.nrows()
    }

    /// One draw.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> DVector<f64> {
        let z = DVector::from_fn(self.dim(), |_, _| StandardNormal.sample(rng));
        &self.factor * z
    }
}

/// The config field a fitted cost names.
fn field<'a>(c: &'a mut SimConfig, name: &str) -> Option<&'a mut f64> {
    Some(match name {
        "step_fixed_ms" => &mut c.step_fixed_ms,
        "per_prefill_token_ms" => &mut c.per_prefill_token_ms,
        "per_decode_seq_ms" => &mut c.per_decode_seq_ms,
        "per_kv_token_ms" => &mut c.per_kv_token_ms,
        "prefill_step_ms" => &mut c.prefill_step_ms,
        "per_prefill_seq_ms" => &mut c.per_prefill_seq_ms,
        "frontend_ms" => &mut c.frontend_ms,
        "frontend_chunk_ms" => &mut c.frontend_chunk_ms,
        _ => return None,
    })
}

/// How one draw moves the fitted costs: some together, the rest alone.
#[derive(Debug, Clone, Default)]
pub struct CostDraw {
    /// The costs drawn together, and their normal.
    joint: Option<(Vec<String>, Mvn)>,
    /// The costs drawn alone, with their standard errors.
    alone: Vec<(String, f64)>,
}

impl CostDraw {
    /// The draw the evidence supports: the covariance's costs together, every
    /// other cost with a standard error alone.
    pub fn new(ev: &Evidence) -> CostDraw {
        let joint = ev
            .covariance
            .as_ref()
            .filter(|c| c.is_valid())
            .and_then(|c| {
                let n = c.names.len();
                let m = DMatrix::from_fn(n, n, |a, b| c.matrix[a][b]);
                Mvn::new(&m).map(|mvn| (c.names.clone(), mvn))
            });
        let together = |name: &str| {
            joint
                .as_ref()
                .is_some_and(|(n, _)| n.iter().any(|x| x == name))
        };
        let alone = ev
            .stderr
            .iter()
            .filter(|(name, se)| !together(name) && se.is_finite() && **se > 0.0)
            .map(|(name, se)| (name.clone(), *se))
            .collect();
        CostDraw { joint, alone }
    }

    /// Every cost alone, by its standard error (the covariance ignored).
    pub fn independent(ev: &Evidence) -> CostDraw {
        CostDraw {
            joint: None,
            alone: ev
                .stderr
                .iter()
                .filter(|(_, se)| se.is_finite() && **se > 0.0)
                .map(|(name, se)| (name.clone(), *se))
                .collect(),
        }
    }

    /// Whether some costs are drawn together.
    pub fn is_joint(&self) -> bool {
        self.joint.is_some()
    }

    /// `config` with its costs moved by one draw, each clamped at 0 (a cost is
    /// never negative); a cost the config does not have is left alone.
    pub fn apply<R: Rng + ?Sized>(&self, config: &mut SimConfig, rng: &mut R) {
        let mut moves: Vec<(&str, f64)> = Vec::new();
        if let Some((names, mvn)) = &self.joint {
            let d = mvn.sample(rng);
            moves.extend(names.iter().map(String::as_str).zip(d.iter().copied()));
        }
        for (name, se) in &self.alone {
            let z: f64 = StandardNormal.sample(rng);
            moves.push((name, z * se));
        }
        for (name, by) in moves {
            if let Some(v) = field(config, name) {
                let moved = *v + by;
                if moved.is_finite() {
                    *v = moved.max(0.0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fit::evidence::Covariance;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// The sample covariance of `n` draws.
    fn sample_cov(mvn: &Mvn, n: usize, seed: u64) -> DMatrix<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        let d = mvn.dim();
        let mut sum = DVector::zeros(d);
        let mut outer = DMatrix::zeros(d, d);
        for _ in 0..n {
            let x = mvn.sample(&mut rng);
            sum += &x;
            outer += &x * x.transpose();
        }
        let mean = sum / n as f64;
        (outer - &mean * mean.transpose() * n as f64) / (n as f64 - 1.0)
    }

    #[test]
    fn draws_reproduce_their_covariance() {
        // Three costs: a fixed cost, a per-request cost strongly against it, and
        // a third loosely with both (positive definite).
        let target =
            DMatrix::from_row_slice(3, 3, &[4.0, -1.8, 0.3, -1.8, 1.0, 0.1, 0.3, 0.1, 0.25]);
        let mvn = Mvn::new(&target).unwrap_or_else(|| panic!("positive definite"));
        let n = 40_000;
        let got = sample_cov(&mvn, n, 42);
        for a in 0..3 {
            for b in 0..3 {
                // The standard error of a sample covariance: sqrt((σ_aa σ_bb + σ_ab²) / n);
                // five of them is a bound a correct draw breaks once in ~10⁶.
                let se =
                    ((target[(a, a)] * target[(b, b)] + target[(a, b)].powi(2)) / n as f64).sqrt();
                let err = (got[(a, b)] - target[(a, b)]).abs();
                assert!(
                    err < 5.0 * se,
                    "({a}, {b}): {} vs {}",
                    got[(a, b)],
                    target[(a, b)]
                );
            }
        }
        // The correlation the draws show is the target's (-0.9).
        let r = got[(0, 1)] / (got[(0, 0)] * got[(1, 1)]).sqrt();
        assert!((r + 0.9).abs() < 0.01, "correlation {r}");
    }

    #[test]
    fn a_semi_definite_covariance_is_drawn_by_its_eigenvalues() {
        // Perfectly correlated: Cholesky fails, the eigen factor still draws.
        let target = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 2.0, 4.0]);
        let mvn = Mvn::new(&target).unwrap_or_else(|| panic!("semi-definite"));
        let got = sample_cov(&mvn, 20_000, 5);
        assert!((got[(1, 1)] / got[(0, 0)] - 4.0).abs() < 0.05, "{got}");
        let r = got[(0, 1)] / (got[(0, 0)] * got[(1, 1)]).sqrt();
        assert!(r > 0.999, "correlation {r}");
        assert!(Mvn::new(&DMatrix::from_element(2, 3, 1.0)).is_none());
        assert!(Mvn::new(&DMatrix::from_element(2, 2, f64::NAN)).is_none());
    }

    #[test]
    fn costs_in_the_covariance_move_together_and_the_rest_alone() {
        let mut ev = Evidence::default();
        ev.stderr.insert("step_fixed_ms".into(), 1.0);
        ev.stderr.insert("per_decode_seq_ms".into(), 0.1);
        ev.stderr.insert("frontend_ms".into(), 0.5);
        ev.covariance = Some(Covariance {
            names: vec!["step_fixed_ms".into(), "per_decode_seq_ms".into()],
            matrix: vec![vec![1.0, -0.099], vec![-0.099, 0.01]],
        });
        let draw = CostDraw::new(&ev);
        assert!(draw.is_joint());
        assert!(!CostDraw::independent(&ev).is_joint());
        let base = SimConfig {
            step_fixed_ms: 50.0,
            per_decode_seq_ms: 5.0,
            frontend_ms: 10.0,
            ..SimConfig::default()
        };
        let mut rng = StdRng::seed_from_u64(3);
        let (mut f, mut d, mut fe) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5000 {
            let mut c = base.clone();
            draw.apply(&mut c, &mut rng);
            f.push(c.step_fixed_ms - 50.0);
            d.push(c.per_decode_seq_ms - 5.0);
            fe.push(c.frontend_ms - 10.0);
        }
        let corr = |a: &[f64], b: &[f64]| {
            let n = a.len() as f64;
            let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
            let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
            let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
            let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
            cov / (va * vb).sqrt()
        };
        assert!(corr(&f, &d) < -0.97, "{}", corr(&f, &d));
        assert!(corr(&f, &fe).abs() < 0.05, "{}", corr(&f, &fe));
        let sd_fe = (fe.iter().map(|x| x * x).sum::<f64>() / fe.len() as f64).sqrt();
        assert!((sd_fe - 0.5).abs() < 0.03, "{sd_fe}");
    }
}
