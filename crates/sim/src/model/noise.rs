//! Seeded noise, so that the simulator varies like a real engine (and goodput's
//! statistics can be checked on it): [`crate::config::JitterConfig`].
//!
//! - Per step: each step's duration is multiplied by a log-normal factor of median
//!   1 and log-standard-deviation `step` (kernel timing, clock and memory jitter).
//! - Per request: each request draws one log-normal factor of median 1 and
//!   log-standard-deviation `request` when it arrives; it scales the request's
//!   front-end time and its share of every step's work (its prompt and context
//!   tokens count that many times), as a prompt that is harder to process would.
//!
//! The draws come from one generator seeded by the engine's `seed`, so a run
//! repeats exactly; two seeds give two independent runs of the same engine.

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, LogNormal};

use crate::config::JitterConfig;

/// The noise of one engine.
#[derive(Debug)]
pub struct Noise {
    rng: StdRng,
    step: Option<LogNormal<f64>>,
    request: Option<LogNormal<f64>>,
}

fn factor(sigma: f64) -> Option<LogNormal<f64>> {
    (sigma > 0.0 && sigma.is_finite())
        .then(|| LogNormal::new(0.0, sigma).ok())
        .flatten()
}

impl Noise {
    /// The noise of `jitter` (none: every factor is 1), seeded by `seed`.
    pub fn new(jitter: Option<&JitterConfig>, seed: u64) -> Noise {
        Noise {
            rng: StdRng::seed_from_u64(seed ^ 0x6a09_e667_f3bc_c908),
            step: jitter.and_then(|j| factor(j.step)),
            request: jitter.and_then(|j| factor(j.request)),
        }
    }

    /// The next step's duration factor.
    pub fn step_factor(&mut self) -> f64 {
        self.step.map_or(1.0, |d| d.sample(&mut self.rng))
    }

    /// A new request's factor.
    pub fn request_factor(&mut self) -> f64 {
        self.request.map_or(1.0, |d| d.sample(&mut self.rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_jitter_is_exactly_one_and_jitter_repeats() {
        let mut n = Noise::new(None, 1);
        assert_eq!((n.step_factor(), n.request_factor()), (1.0, 1.0));
        let j = JitterConfig {
            step: 0.1,
            request: 0.2,
        };
        let (mut a, mut b) = (Noise::new(Some(&j), 3), Noise::new(Some(&j), 3));
        let xs: Vec<f64> = (0..100).map(|_| a.step_factor()).collect();
        let ys: Vec<f64> = (0..100).map(|_| b.step_factor()).collect();
        assert_eq!(xs, ys);
        let mean_log = xs.iter().map(|x| x.ln()).sum::<f64>() / 100.0;
        assert!(mean_log.abs() < 0.05, "{mean_log}");
        assert!(xs.iter().any(|x| (x - 1.0).abs() > 0.05));
    }
}
