//! The interval of a search's capacity: a bootstrap over the trials of the two
//! probes that bracket it, in the spirit of AIPerf's search-boundary bootstrap.
//!
//! The capacity estimate is the load where the attainment, linear between the
//! passing probe `(x_p, a_p)` and the failing one `(x_f, a_f)`, crosses the
//! target. One resample redraws each probe's trials with replacement and, within
//! each drawn trial, its good requests as Binomial(sent, good / sent) (the
//! requests resampled), and recomputes the crossing, held within `[x_p, x_f]`
//! (a resample where the passing probe fails crosses at `x_p`). The interval is
//! the 2.5 and 97.5 percentiles of the crossings.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};
use report::CapacityInterval;

/// A probe: its load and each trial's `(good, sent)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The load.
    pub x: f64,
    /// Per trial: good requests and requests sent.
    pub trials: Vec<(u64, u64)>,
}

fn pooled(trials: &[(u64, u64)]) -> Option<f64> {
    let (g, s) = trials.iter().fold((0, 0), |a, t| (a.0 + t.0, a.1 + t.1));
    (s > 0).then(|| g as f64 / s as f64)
}

fn crossing(pass: f64, fail: f64, xp: f64, xf: f64, target: f64) -> f64 {
    if pass < target {
        return xp;
    }
    if fail >= target || pass <= fail {
        return xf;
    }
    (xp + (pass - target) / (pass - fail) * (xf - xp)).clamp(xp.min(xf), xp.max(xf))
}

fn resample(rng: &mut ChaCha8Rng, trials: &[(u64, u64)]) -> Option<f64> {
    let k = trials.len();
    let (mut good, mut sent) = (0u64, 0u64);
    for _ in 0..k {
        let (g, s) = trials[rng.gen_range(0..k)];
        if s == 0 {
            continue;
        }
        let share = (g.min(s) as f64 / s as f64).clamp(0.0, 1.0);
        good += Binomial::new(s, share).map_or(g, |b| b.sample(rng));
        sent += s;
    }
    (sent > 0).then(|| good as f64 / sent as f64)
}

/// The capacity between `pass` and `fail` with its 95% interval; `None` when
/// either probe has no requests.
pub fn interval(
    pass: &Probe,
    fail: &Probe,
    target: f64,
    draws: usize,
    seed: u64,
) -> Option<CapacityInterval> {
    let (ap, af) = (pooled(&pass.trials)?, pooled(&fail.trials)?);
    let estimate = crossing(ap, af, pass.x, fail.x, target);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut xs: Vec<f64> = (0..draws.max(1))
        .filter_map(|_| {
            let p = resample(&mut rng, &pass.trials)?;
            let f = resample(&mut rng, &fail.trials)?;
            Some(crossing(p, f, pass.x, fail.x, target))
        })
        .collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((q * (xs.len() - 1) as f64).round() as usize).min(xs.len() - 1)];
    Some(CapacityInterval {
        estimate,
        low: at(0.025),
        high: at(0.975),
        resamples: xs.len() as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crossing_sits_between_the_probes() {
        let pass = Probe {
            x: 4.0,
            trials: vec![(60, 64), (62, 64)],
        };
        let fail = Probe {
            x: 8.0,
            trials: vec![(20, 64), (30, 64)],
        };
        let ci = interval(&pass, &fail, 0.9, 500, 1).unwrap();
        assert!(
            4.0 <= ci.low && ci.low <= ci.estimate && ci.estimate <= ci.high && ci.high <= 8.0,
            "{ci:?}"
        );
        assert!(ci.estimate > 4.0 && ci.estimate < 5.0, "{ci:?}");
        assert!(interval(
            &pass,
            &Probe {
                x: 8.0,
                trials: vec![]
            },
            0.9,
            10,
            1
        )
        .is_none());
    }
}
