//! The hierarchical (two-stage) bootstrap of nested data: trials, then requests
//! within each trial (Davison & Hinkley 1997, §3.8; Saravanan et al. 2020).
//!
//! One resample draws as many trials as there are, with replacement, and for each
//! drawn trial as many of its requests as it has, with replacement; the statistic
//! is computed on that resample. Resampling the trials first carries the
//! trial-to-trial variation (a warmer GPU, another batch mix) into the interval,
//! which pooling thousands of requests would otherwise hide; resampling requests
//! second carries the variation within a trial.
//!
//! A change between two sides is the ratio of their statistics less one, drawn from
//! independent resamples of each side; its interval is the 2.5 and 97.5
//! percentiles of the drawn changes (the percentile interval), and its p-value the
//! normal tail of the estimate over the draws' standard deviation (continuous, so
//! that a correction over many rows is not limited by the number of draws).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{two_sided_p, Change};

/// Resamples drawn per comparison when none is given.
pub const DEFAULT_DRAWS: usize = 1000;

/// One trial's values of a metric: one per request (or per request unit), and the
/// trial's duration for rates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trial {
    /// Per-request values (a failed request: 0 for counts, absent for latencies).
    pub values: Vec<f64>,
    /// First send to last completion, s (rates only).
    pub duration_s: Option<f64>,
}

pub use report::compare::Statistic;

/// The statistic over `trials` as they are.
pub fn estimate(trials: &[Trial], s: Statistic) -> Option<f64> {
    let mut pool = Vec::new();
    match s {
        Statistic::Rate => mean_rate(trials.iter().map(|t| (t.values.iter().sum(), t.duration_s))),
        _ => {
            for t in trials {
                pool.extend_from_slice(&t.values);
            }
            of_pool(&mut pool, s)
        }
    }
}

fn mean_rate(per_trial: impl Iterator<Item = (f64, Option<f64>)>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for (total, d) in per_trial {
        if let Some(d) = d.filter(|d| *d > 0.0 && d.is_finite()) {
            sum += total / d;
            n += 1;
        }
    }
    (n > 0).then(|| sum / n as f64)
}

fn of_pool(pool: &mut [f64], s: Statistic) -> Option<f64> {
    if pool.is_empty() {
        return None;
    }
    match s {
        Statistic::Quantile(q) => {
            let i = (q.clamp(0.0, 1.0) * (pool.len() - 1) as f64).floor() as usize;
            let (_, v, _) = pool.select_nth_unstable_by(i, f64::total_cmp);
            Some(*v)
        }
        _ => Some(pool.iter().sum::<f64>() / pool.len() as f64),
    }
}

/// The statistic over one two-stage resample of `trials`.
fn draw(rng: &mut ChaCha8Rng, trials: &[Trial], s: Statistic, pool: &mut Vec<f64>) -> Option<f64> {
    let k = trials.len();
    if k == 0 {
        return None;
    }
    pool.clear();
    if s == Statistic::Rate {
        let per_trial = (0..k).map(|_| {
            let t = &trials[rng.gen_range(0..k)];
            let n = t.values.len();
            let total: f64 = (0..n).map(|_| t.values[rng.gen_range(0..n)]).sum();
            (total, t.duration_s)
        });
        // Collected first: the iterator borrows the rng.
        let v: Vec<(f64, Option<f64>)> = per_trial.collect();
        return mean_rate(v.into_iter());
    }
    for _ in 0..k {
        let t = &trials[rng.gen_range(0..k)];
        let n = t.values.len();
        pool.extend((0..n).map(|_| t.values[rng.gen_range(0..n)]));
    }
    of_pool(pool, s)
}

/// The relative change of `cand` against `base` in statistic `s`, with its 95%
/// percentile interval from `draws` hierarchical resamples of each side (seeded).
/// `None` when either side has no value or the baseline's is 0.
pub fn change(
    base: &[Trial],
    cand: &[Trial],
    s: Statistic,
    draws: usize,
    seed: u64,
) -> Option<Change> {
    let (b, c) = (estimate(base, s)?, estimate(cand, s)?);
    if b == 0.0 || !b.is_finite() || !c.is_finite() {
        return None;
    }
    let point = c / b - 1.0;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pool = Vec::new();
    let mut changes = Vec::with_capacity(draws);
    for _ in 0..draws.max(1) {
        let (Some(bs), Some(cs)) = (
            draw(&mut rng, base, s, &mut pool),
            draw(&mut rng, cand, s, &mut pool),
        ) else {
            continue;
        };
        let r = cs / bs - 1.0;
        if bs != 0.0 && r.is_finite() {
            changes.push(r);
        }
    }
    summarise(point, &mut changes, base.len().min(cand.len()))
}

/// The interval, standard deviation and p-value of drawn changes around `point`.
fn summarise(point: f64, changes: &mut [f64], trials: usize) -> Option<Change> {
    if changes.is_empty() {
        return None;
    }
    changes.sort_by(f64::total_cmp);
    let at = |q: f64| {
        changes[((q * (changes.len() - 1) as f64).round() as usize).min(changes.len() - 1)]
    };
    let n = changes.len() as f64;
    let mean = changes.iter().sum::<f64>() / n;
    let se = (changes.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    let p = if se > 0.0 {
        two_sided_p(point / se)
    } else if point == 0.0 {
        1.0
    } else {
        0.0
    };
    Some(Change {
        change: point,
        ci: (at(0.025), at(0.975)),
        p,
        se,
        trials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, LogNormal};

    fn side(seed: u64, trials: usize, n: usize, scale: f64) -> Vec<Trial> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let d = LogNormal::new(0.0, 0.3).unwrap();
        (0..trials)
            .map(|_| {
                let shift = 1.0 + 0.02 * (rng.gen::<f64>() - 0.5);
                Trial {
                    values: (0..n).map(|_| scale * shift * d.sample(&mut rng)).collect(),
                    duration_s: Some(10.0),
                }
            })
            .collect()
    }

    #[test]
    fn same_distribution_rarely_differs() {
        let mut significant = 0;
        for i in 0..100 {
            let (a, b) = (side(2 * i, 3, 64, 1.0), side(2 * i + 1, 3, 64, 1.0));
            let ch = change(&a, &b, Statistic::Quantile(0.5), 400, i).unwrap();
            significant += (ch.ci.0 > 0.0 || ch.ci.1 < 0.0) as u32;
        }
        assert!(
            significant <= 12,
            "{significant} of 100 intervals exclude 0"
        );
    }

    #[test]
    fn a_large_change_is_found_with_its_size() {
        let (a, b) = (side(1, 3, 64, 1.0), side(2, 3, 64, 1.3));
        let ch = change(&a, &b, Statistic::Quantile(0.5), 1000, 3).unwrap();
        assert!(ch.ci.0 > 0.15 && ch.ci.1 < 0.5, "{ch:?}");
        assert!(ch.p < 1e-3, "{ch:?}");
        let r = change(&a, &b, Statistic::Rate, 500, 3).unwrap();
        assert!(r.change > 0.15, "{r:?}");
    }

    #[test]
    fn a_zero_baseline_or_no_values_has_no_change() {
        let zero = vec![Trial {
            values: vec![0.0; 4],
            duration_s: Some(1.0),
        }];
        assert!(change(&zero, &zero, Statistic::Mean, 10, 1).is_none());
        assert!(change(&[], &zero, Statistic::Mean, 10, 1).is_none());
    }

    #[test]
    fn seeded_draws_repeat() {
        let (a, b) = (side(5, 2, 32, 1.0), side(6, 2, 32, 1.0));
        let x = change(&a, &b, Statistic::Quantile(0.99), 200, 9);
        assert_eq!(x, change(&a, &b, Statistic::Quantile(0.99), 200, 9));
    }
}
