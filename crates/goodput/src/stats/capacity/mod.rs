//! A search's capacity from every probe, with its 95% interval.
//!
//! **The estimate.** Each probe of the engine (a load with its trials' good and
//! sent requests) gives a pooled attainment `good / sent`. A non-increasing curve
//! in load is fitted to all of them by weighted isotonic regression (weights: the
//! requests sent; [`isotonic`], Barlow et al. 1972; Robertson, Wright & Dykstra
//! 1988), linear between probes, and the capacity is where it falls through the
//! target attainment. A probe that measured above a lower one is pooled with it
//! rather than ignored, so one lucky or unlucky probe moves the estimate by its
//! weight, not to itself. In concurrency mode the capacity is a whole number of
//! requests: the largest integer load at which the fitted curve is at or above the
//! target (the crossing rounded down).
//!
//! **The interval** is a parametric bootstrap over all probes from a
//! beta-binomial model of the trials (Williams 1982, "Extra-binomial variation in
//! logistic linear models", *Appl. Statist.* 31:144–148; Davison & Hinkley 1997,
//! *Bootstrap Methods and their Application*, §2.2 and §3.8 for the two levels).
//! A trial's requests are not independent draws: under load they queue together,
//! so one trial's attainment differs from the next far more than a binomial
//! allows. That extra variation is measured once over every probe with two or
//! more trials, as Pearson's dispersion `φ = Σ sent_t (a_t − ā)² / (ā (1 − ā))`
//! over `Σ (trials − 1)` degrees of freedom (McCullagh & Nelder 1989, *Generalized
//! Linear Models*, §4.5; probes whose trials were all good or all bad carry none).
//! One resample draws `φ*` as `φ · df / χ²(df)` (its own uncertainty, the way
//! Student's t allows for an estimated variance; never below 1, the binomial),
//! each probe's attainment from a Beta distribution with its measured attainment
//! (`(good + ½) / (sent + 1)`, so a probe with every request good can still draw
//! lower) as the mean and `φ* · a (1 − a) / sent` as the variance, refits the
//! curve and recomputes the crossing (in whole requests in concurrency mode).
//! The interval is the 2.5 and 97.5 percentiles of the crossings (the percentile
//! interval, Davison & Hinkley §5.2), widened where needed to hold the estimate
//! itself, so that a stated capacity always lies within its stated interval.
//! Seeded: the same probes and seed give the same interval.
//!
//! Why not resample the trials themselves (trials with replacement, then each
//! trial's good requests as Binomial): with the 2 to 4 trials a probe gets, a
//! probe's resamples take only a handful of values, and the intervals covered
//! another run's capacity in 12 of 30 pairs in the repeated rate-mode searches of
//! [`crate::model::predict::coverage`]; pooling the dispersion over all probes
//! uses every trial the search ran.
//!
//! The probes' loads are the search's (chosen adaptively from what was measured),
//! held fixed in the resamples; a capacity beyond the probed range is held at its
//! edge (the interval is then censored there).

pub mod isotonic;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Beta, ChiSquared, Distribution};
use report::CapacityInterval;

/// A probe: its load and each trial's `(good, sent)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The load.
    pub x: f64,
    /// Per trial: good requests and requests sent.
    pub trials: Vec<(u64, u64)>,
}

/// How a load is counted: any real number (a rate, a trace speed) or whole
/// requests (concurrency).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Rate or trace mode: the crossing as it falls.
    Continuous,
    /// Concurrency mode: the largest whole load at or above the target.
    Integer,
}

impl Scale {
    fn apply(self, x: f64) -> f64 {
        match self {
            Scale::Continuous => x,
            Scale::Integer => (x + 1e-9).floor(),
        }
    }
}

/// Where the non-increasing curve fitted to `(x, attainment, weight)` (any
/// order; weights positive) crosses `target`.
fn fitted(mut points: Vec<(f64, f64, f64)>, target: f64) -> Option<isotonic::Crossing> {
    points.retain(|p| p.2 > 0.0 && p.1.is_finite());
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let xs: Vec<f64> = points.iter().map(|p| p.0).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    let ws: Vec<f64> = points.iter().map(|p| p.2).collect();
    isotonic::crossing(&xs, &isotonic::non_increasing(&ys, &ws), target)
}

/// A probe's pooled good and sent requests.
fn pooled(trials: &[(u64, u64)]) -> (u64, u64) {
    trials
        .iter()
        .fold((0, 0), |a, t| (a.0 + t.0.min(t.1), a.1 + t.1))
}

/// The fitted curve's crossing of `target` over `probes` (see the module doc);
/// `None` when no probe sent a request.
pub fn crossing(probes: &[Probe], target: f64) -> Option<isotonic::Crossing> {
    let points = probes
        .iter()
        .map(|p| {
            let (g, s) = pooled(&p.trials);
            (p.x, g as f64 / s.max(1) as f64, s as f64)
        })
        .collect();
    fitted(points, target)
}

/// Pearson's dispersion of the trials' attainments about their probe's, relative
/// to a binomial, over all probes, with its degrees of freedom; `(1, 0)` when no
/// probe has two trials with requests and a mixed outcome.
pub fn dispersion(probes: &[Probe]) -> (f64, f64) {
    let (mut chi2, mut df) = (0.0, 0.0);
    for p in probes {
        let trials: Vec<(u64, u64)> = p.trials.iter().copied().filter(|t| t.1 > 0).collect();
        let (g, s) = pooled(&trials);
        if trials.len() < 2 || g == 0 || g == s {
            continue;
        }
        let a = g as f64 / s as f64;
        chi2 += trials
            .iter()
            .map(|&(g, s)| s as f64 * (g.min(s) as f64 / s as f64 - a).powi(2))
            .sum::<f64>()
            / (a * (1.0 - a));
        df += (trials.len() - 1) as f64;
    }
    if df > 0.0 {
        (chi2 / df, df)
    } else {
        (1.0, 0.0)
    }
}

/// One resample of a probe's attainment: Beta with mean `(good + ½) / (sent + 1)`
/// and variance `phi · a (1 − a) / sent`.
fn draw(rng: &mut ChaCha8Rng, good: u64, sent: u64, phi: f64) -> f64 {
    let a = (good as f64 + 0.5) / (sent as f64 + 1.0);
    let c = (sent as f64 / phi - 1.0).max(1.0);
    Beta::new(a * c, (1.0 - a) * c).map_or(a, |b| b.sample(rng))
}

/// The capacity over `probes` with its 95% interval from `draws` resamples
/// (see the module doc); `None` when no probe sent a request.
pub fn interval(
    probes: &[Probe],
    target: f64,
    scale: Scale,
    draws: usize,
    seed: u64,
) -> Option<CapacityInterval> {
    let estimate = scale.apply(crossing(probes, target)?.load());
    let (phi, df) = dispersion(probes);
    let chi = ChiSquared::new(df.max(1.0)).ok();
    let counts: Vec<(f64, u64, u64)> = probes
        .iter()
        .map(|p| {
            let (g, s) = pooled(&p.trials);
            (p.x, g, s)
        })
        .filter(|p| p.2 > 0)
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut xs: Vec<f64> = (0..draws.max(1))
        .filter_map(|_| {
            let phi = match &chi {
                Some(chi) if df > 0.0 => (phi * df / chi.sample(&mut rng).max(1e-9)).max(1.0),
                _ => phi.max(1.0),
            };
            let drawn = counts
                .iter()
                .map(|&(x, g, s)| (x, draw(&mut rng, g, s, phi), s as f64))
                .collect();
            fitted(drawn, target).map(|c| scale.apply(c.load()))
        })
        .collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((q * (xs.len() - 1) as f64).round() as usize).min(xs.len() - 1)];
    Some(CapacityInterval {
        estimate,
        low: at(0.025).min(estimate),
        high: at(0.975).max(estimate),
        resamples: xs.len() as u32,
    })
}

/// The interval widened to what the probes' own SLO judgements allow (test
/// inversion, Lehmann & Romano 2005, *Testing Statistical Hypotheses*, §3.5): on a
/// non-increasing attainment curve the capacity is at least the highest load
/// judged `meets` below every load judged `fails`, and below the lowest load
/// judged `fails` (in whole loads: at most one less). `judged` holds each probe's
/// load and judgement.
///
/// Why: the bootstrap holds the search's probes where the search put them and
/// reads the crossing between the two around it. Where the attainment curve is
/// flat near the target, a run's crossing falls wherever its noise put it, the
/// search then probes densely there, and the resampled crossings stay between
/// those close probes: intervals a few hundredths wide whose runs' estimates
/// differ by a tenth (the repeated searches of
/// [`crate::model::predict::coverage`] covered each other in 84 of 132 pairs).
/// The judgements, each with its own interval, say how far the data can place it.
pub fn widened(
    mut ci: CapacityInterval,
    judged: &[(f64, Option<report::Judgement>)],
    scale: Scale,
) -> CapacityInterval {
    use report::Judgement;
    let mut sorted: Vec<_> = judged.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let fails = sorted
        .iter()
        .find(|p| p.1 == Some(Judgement::Fails))
        .map(|p| p.0);
    let meets = sorted
        .iter()
        .filter(|p| fails.is_none_or(|f| p.0 < f) && p.1 == Some(Judgement::Meets))
        .map(|p| p.0)
        .next_back();
    if let Some(m) = meets {
        ci.low = ci.low.min(m).min(ci.estimate);
    }
    if let Some(f) = fails {
        let high = match scale {
            Scale::Continuous => f,
            Scale::Integer => (f - 1.0).max(ci.low),
        };
        ci.high = ci.high.max(high).max(ci.estimate);
    }
    ci
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(x: f64, trials: &[(u64, u64)]) -> Probe {
        Probe {
            x,
            trials: trials.to_vec(),
        }
    }

    #[test]
    fn the_crossing_sits_between_the_probes_around_it() {
        let probes = [
            probe(1.0, &[(64, 64), (64, 64)]),
            probe(2.0, &[(64, 64), (63, 64)]),
            probe(4.0, &[(60, 64), (62, 64)]),
            probe(8.0, &[(20, 64), (30, 64)]),
        ];
        let ci = interval(&probes, 0.9, Scale::Continuous, 1000, 1).unwrap();
        assert!(
            2.0 <= ci.low && ci.low <= ci.estimate && ci.estimate <= ci.high && ci.high <= 8.0,
            "{ci:?}"
        );
        assert!(ci.estimate > 4.0 && ci.estimate < 5.0, "{ci:?}");
        assert_eq!(ci.resamples, 1000);
        // Seeded: the same probes and seed give the same interval.
        assert_eq!(interval(&probes, 0.9, Scale::Continuous, 1000, 1), Some(ci));
        assert!(interval(&[probe(8.0, &[])], 0.9, Scale::Continuous, 10, 1).is_none());
    }

    #[test]
    fn a_probe_above_a_failing_one_is_pooled_not_ignored() {
        // 3 fails (80%), 4 passes (95%), 6 fails: the fit pools 3 and 4 to 87.5%,
        // below the target, so the capacity lies between 2 and 3, not at 4.
        let probes = [
            probe(2.0, &[(100, 100)]),
            probe(3.0, &[(80, 100)]),
            probe(4.0, &[(95, 100)]),
            probe(6.0, &[(10, 100)]),
        ];
        let c = crossing(&probes, 0.9).unwrap();
        assert!(
            matches!(c, isotonic::Crossing::Within(x) if x > 2.0 && x < 3.0),
            "{c:?}"
        );
    }

    #[test]
    fn in_concurrency_mode_the_capacity_and_its_interval_are_whole_loads() {
        // The curve crosses 0.9 between 3 (96%) and 4 (40%): capacity 3.
        let probes = [
            probe(1.0, &[(50, 50), (50, 50)]),
            probe(2.0, &[(50, 50), (49, 50)]),
            probe(3.0, &[(48, 50), (47, 50)]),
            probe(4.0, &[(20, 50), (20, 50)]),
        ];
        let ci = interval(&probes, 0.9, Scale::Integer, 1000, 7).unwrap();
        assert_eq!(ci.estimate, 3.0, "{ci:?}");
        assert!(ci.low <= 3.0 && 3.0 <= ci.high, "{ci:?}");
        assert_eq!((ci.low.fract(), ci.high.fract()), (0.0, 0.0), "{ci:?}");
    }

    #[test]
    fn the_interval_always_holds_the_estimate() {
        // A probe right on the target: resamples fall either side, and the
        // estimate, whichever it is, lies within the interval.
        for seed in 0..20 {
            let probes = [
                probe(1.0, &[(20, 20)]),
                probe(2.0, &[(18, 20), (18, 20)]),
                probe(3.0, &[(2, 20)]),
            ];
            for scale in [Scale::Continuous, Scale::Integer] {
                let ci = interval(&probes, 0.9, scale, 200, seed).unwrap();
                assert!(ci.low <= ci.estimate && ci.estimate <= ci.high, "{ci:?}");
            }
        }
    }

    #[test]
    fn more_requests_narrow_the_interval() {
        let at = |n: u64| {
            let probes = [
                probe(1.0, &[(n, n), (n, n)]),
                probe(2.0, &[(n * 19 / 20, n), (n * 19 / 20, n)]),
                probe(3.0, &[(n * 17 / 20, n), (n * 17 / 20, n)]),
                probe(4.0, &[(n / 2, n), (n / 2, n)]),
            ];
            let ci = interval(&probes, 0.9, Scale::Continuous, 1000, 3).unwrap();
            ci.high - ci.low
        };
        let (wide, narrow) = (at(20), at(2000));
        assert!(narrow < wide / 3.0, "{narrow} vs {wide}");
    }

    #[test]
    fn the_judgements_widen_the_interval_to_what_they_allow() {
        use report::Judgement::{Fails, Meets, Undecided};
        let ci = CapacityInterval {
            estimate: 0.70,
            low: 0.69,
            high: 0.72,
            resamples: 10,
        };
        // Meets at 0.4 and 0.6, undecided at 0.69 and 0.72, fails first at 0.8
        // (and a lucky "meets" at 0.85 above it, which cannot raise the low end).
        let judged = [
            (0.85, Some(Meets)),
            (0.4, Some(Meets)),
            (0.6, Some(Meets)),
            (0.69, Some(Undecided)),
            (0.72, Some(Undecided)),
            (0.8, Some(Fails)),
            (1.6, Some(Fails)),
        ];
        let w = widened(ci, &judged, Scale::Continuous);
        assert_eq!((w.low, w.estimate, w.high), (0.6, 0.70, 0.8));
        // Whole loads: below the lowest failing load means at most one less.
        let ci = CapacityInterval {
            estimate: 5.0,
            low: 5.0,
            high: 5.0,
            resamples: 10,
        };
        let judged = [
            (3.0, Some(Meets)),
            (5.0, Some(Undecided)),
            (8.0, Some(Fails)),
        ];
        let w = widened(ci, &judged, Scale::Integer);
        assert_eq!((w.low, w.high), (3.0, 7.0));
        // No judgement at all: the bootstrap's interval as it was.
        assert_eq!(widened(ci, &[(5.0, None)], Scale::Integer), ci);
        // A judgement never narrows it.
        let wide = CapacityInterval {
            low: 1.0,
            high: 9.0,
            ..ci
        };
        assert_eq!(widened(wide, &judged, Scale::Integer), wide);
    }
}
