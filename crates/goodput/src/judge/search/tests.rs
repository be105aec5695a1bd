//! The search over synthetic attainment functions: each trial of `requests`
//! requests has `round(f(x) * requests)` good ones (plus noise where asked), and the
//! loop runs exactly as the runner does, to the end.

use super::*;
use report::stats::{wilson_interval, Z95};
use report::Judgement;

/// The tests' search: 5% resolution, 90% attainment, 16 probes, one trial a probe
/// (up to 3), doubling; also what `predict`'s tests search with.
pub(crate) fn cfg(mode: LoadMode, min: f64, max: f64) -> SearchConfig {
    SearchConfig {
        mode,
        min,
        max,
        resolution: 0.05,
        target: 0.9,
        max_probes: 16,
        base_trials: 1,
        max_trials_per_probe: 3,
        width: None,
        growth: 2.0,
        objective: Default::default(),
    }
}

struct Outcome {
    found: Found,
    probes: usize,
    trials: u32,
}

/// Runs the search to the end over `good(x, trial)` good requests of `requests`.
fn drive(cfg: &SearchConfig, requests: u64, good: impl Fn(f64, u32) -> u64) -> Outcome {
    let mut pts: Vec<(f64, Vec<u64>)> = Vec::new();
    for _ in 0..10_000 {
        let obs: Vec<Obs> = pts
            .iter()
            .map(|(x, g)| {
                let (gs, sent) = (g.iter().sum::<u64>(), requests * g.len() as u64);
                let a = gs as f64 / sent as f64;
                Obs {
                    x: *x,
                    trials: g.len() as u32,
                    attainment: Some(a),
                    ci: wilson_interval(gs, sent, Z95),
                    meets: a >= cfg.target,
                    judgement: None,
                    good_tokens_per_s: None,
                    width: None,
                }
            })
            .collect();
        match next_step(cfg, &obs) {
            Step::Done(found) => {
                return Outcome {
                    found,
                    probes: pts.len(),
                    trials: pts.iter().map(|p| p.1.len() as u32).sum(),
                }
            }
            Step::Run { x, trials } => {
                assert!(x >= cfg.min && x <= cfg.max, "probe {x} out of bounds");
                let i = match pts.iter().position(|p| p.0 == x) {
                    Some(i) => i,
                    None => {
                        pts.push((x, Vec::new()));
                        pts.len() - 1
                    }
                };
                let have = pts[i].1.len() as u32;
                assert!(
                    trials > have,
                    "asked for x={x} trials {trials}, has {have}: no progress"
                );
                for t in have..trials {
                    pts[i].1.push(good(x, t).min(requests));
                }
            }
        }
    }
    panic!("the search did not end");
}

/// A knee: every request good up to `k`, then none.
fn step_at(k: f64) -> impl Fn(f64, u32) -> u64 {
    move |x, _| if x <= k { 50 } else { 0 }
}

#[test]
fn monotone_concurrency_finds_the_exact_knee() {
    for k in [1.0, 2.0, 3.0, 6.0, 7.0, 13.0, 33.0, 63.0] {
        let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
        let o = drive(&c, 50, step_at(k));
        assert_eq!(o.found.passing, Some(k), "knee {k}");
        assert_eq!(o.found.failing, Some(k + 1.0), "knee {k}");
        assert_eq!(o.found.reason, Reason::Resolved);
        assert!(o.found.noisy.is_empty());
        // Bracket (log2 64 + 1) plus bisection (log2 of the bracket): well under a grid.
        assert!(o.probes <= 13, "knee {k}: {} probes", o.probes);
    }
}

#[test]
fn a_gradual_curve_is_interpolated() {
    // Attainment falls linearly from 1 at x=10 to 0 at x=30: crosses 0.9 at x=12.
    let f = |x: f64, _| (50.0 * (1.0 - ((x - 10.0) / 20.0).clamp(0.0, 1.0))).round() as u64;
    let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    let o = drive(&c, 50, f);
    assert_eq!(o.found.passing, Some(12.0));
    assert_eq!(o.found.failing, Some(13.0));
}

#[test]
fn rate_mode_resolves_within_the_resolution() {
    for k in [0.7, 3.3, 9.9, 41.0] {
        let c = cfg(LoadMode::Rate, 0.5, 64.0);
        let o = drive(&c, 50, step_at(k));
        let (p, f) = (o.found.passing.unwrap(), o.found.failing.unwrap());
        assert!(p <= k && f > k, "knee {k}: {p}..{f}");
        assert!(f - p <= 0.05 * p * 1.000001, "knee {k}: {p}..{f} too wide");
    }
}

#[test]
fn never_passing_says_the_lowest_load_fails() {
    let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    let o = drive(&c, 50, |_, _| 0);
    assert_eq!(o.found.passing, None);
    assert_eq!(o.found.failing, Some(1.0));
    assert_eq!(o.found.reason, Reason::LowestFails);
    assert_eq!(o.probes, 1);
}

#[test]
fn always_passing_stops_at_max() {
    let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    let o = drive(&c, 50, |_, _| 50);
    assert_eq!(o.found.passing, Some(64.0));
    assert_eq!(o.found.failing, None);
    assert_eq!(o.found.reason, Reason::MaxPasses);
    assert_eq!(o.probes, 7); // 1 2 4 8 16 32 64
    let c = cfg(LoadMode::Rate, 0.5, 10.0);
    let o = drive(&c, 50, |_, _| 50);
    assert_eq!(o.found.passing, Some(10.0));
}

#[test]
fn a_plateau_at_the_target_counts_as_meeting_it() {
    // Exactly 90% good from 1 to 20, then 50%: the plateau passes (≥ target).
    let f = |x: f64, _| if x <= 20.0 { 45 } else { 25 };
    let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    let o = drive(&c, 50, f);
    assert_eq!((o.found.passing, o.found.failing), (Some(20.0), Some(21.0)));
    // 45/50 straddles 0.9: the deciding passing probe got its extra trials.
    assert!(o.found.noisy.contains(&20.0), "{:?}", o.found);
}

#[test]
fn noise_gets_bounded_extra_trials_and_is_reported() {
    // Near the knee (x = 8) trials alternate between 44 and 47 good of 50.
    let f = |x: f64, t: u32| {
        if x < 8.0 {
            50
        } else if x == 8.0 {
            if t.is_multiple_of(2) {
                47
            } else {
                44
            }
        } else {
            0
        }
    };
    let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    let o = drive(&c, 50, f);
    assert_eq!(o.found.failing, Some(9.0));
    assert_eq!(o.found.passing, Some(8.0));
    assert_eq!(o.found.noisy, vec![8.0]);
    // At most max_trials_per_probe at x = 8.
    assert!(o.trials <= o.probes as u32 + 2 + 2, "{} trials", o.trials);
}

#[test]
fn few_requests_straddle_and_are_confirmed_with_more_trials() {
    // 8 of 8 good: the Wilson lower bound is 0.68, below 0.9: more trials.
    let c = cfg(LoadMode::Concurrency, 1.0, 8.0);
    let o = drive(&c, 8, |x, _| if x <= 3.0 { 8 } else { 0 });
    assert_eq!((o.found.passing, o.found.failing), (Some(3.0), Some(4.0)));
    // 24 of 24 is still below: the probe is said to be noisy after 3 trials.
    assert_eq!(o.found.noisy, vec![3.0]);
}

#[test]
fn a_noisy_flip_moves_the_bracket_down() {
    // x = 5 passes its first trial, then fails the next two: the search goes on below.
    let f = |x: f64, t: u32| {
        if x < 5.0 {
            50
        } else if x == 5.0 {
            if t == 0 {
                46
            } else {
                30
            }
        } else {
            0
        }
    };
    let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    let o = drive(&c, 50, f);
    assert_eq!((o.found.passing, o.found.failing), (Some(4.0), Some(5.0)));
}

#[test]
fn the_probe_budget_bounds_the_search() {
    let mut c = cfg(LoadMode::Rate, 0.5, 1000.0);
    c.max_probes = 4;
    c.resolution = 0.0001;
    let o = drive(&c, 50, step_at(77.7));
    assert_eq!(o.probes, 4);
    assert_eq!(o.found.reason, Reason::ProbeBudget);
    let mut c = cfg(LoadMode::Concurrency, 1.0, 100_000.0);
    c.max_probes = 3;
    let o = drive(&c, 50, |_, _| 50);
    assert_eq!((o.probes, o.found.reason), (3, Reason::ProbeBudget));
}

#[test]
fn non_monotone_measurements_use_the_lowest_failure() {
    // Measured (e.g. by an earlier search with other bounds): a pass at 8 above a
    // fail at 4. The lowest failure decides, and the answer says so.
    let o = |x: f64, meets: bool| Obs {
        x,
        trials: 1,
        attainment: Some(if meets { 1.0 } else { 0.0 }),
        ci: None,
        meets,
        judgement: None,
        good_tokens_per_s: None,
        width: None,
    };
    let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    let obs = [
        o(1.0, true),
        o(2.0, true),
        o(3.0, true),
        o(4.0, false),
        o(8.0, true),
    ];
    match next_step(&c, &obs) {
        Step::Done(f) => {
            assert_eq!((f.passing, f.failing), (Some(3.0), Some(4.0)));
            assert!(f.non_monotone);
        }
        s => panic!("{s:?}"),
    }
    // With a gap below the failure, the search narrows there.
    let obs = [o(1.0, true), o(4.0, false), o(8.0, true)];
    assert!(matches!(next_step(&c, &obs), Step::Run { x, .. } if x > 1.0 && x < 4.0));
}

#[test]
fn min_equal_max_is_one_probe() {
    let c = cfg(LoadMode::Concurrency, 4.0, 4.0);
    let o = drive(&c, 50, |_, _| 50);
    assert_eq!((o.probes, o.found.passing), (1, Some(4.0)));
    let o = drive(&c, 50, |_, _| 0);
    assert_eq!((o.probes, o.found.passing), (1, None));
}

/// Runs a search to the end where load `x` meets the SLO up to `capacity` and gives
/// `good(x)` good output tokens per second; the probed loads and the answer.
fn drive_cost(cfg: &SearchConfig, capacity: f64, good: impl Fn(f64) -> f64) -> (Vec<f64>, Found) {
    let mut xs: Vec<f64> = Vec::new();
    for _ in 0..1000 {
        let obs: Vec<Obs> = xs
            .iter()
            .map(|&x| Obs {
                x,
                trials: cfg.base_trials,
                attainment: Some(if x <= capacity { 1.0 } else { 0.0 }),
                ci: None,
                meets: x <= capacity,
                judgement: None,
                good_tokens_per_s: Some(good(x)),
                width: None,
            })
            .collect();
        match next_step(cfg, &obs) {
            Step::Done(found) => return (xs, found),
            Step::Run { x, .. } => {
                assert!(!xs.contains(&x), "{x} probed twice");
                xs.push(x);
            }
        }
    }
    panic!("the search did not end");
}

#[test]
fn the_cost_objective_finds_the_cheapest_load_below_capacity() {
    let mut c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    c.objective = Objective::Cost;
    // Good tokens/s peak at 11 (preemptions past it), the SLO holds up to 13.
    let (xs, found) = drive_cost(&c, 13.0, |x| 1000.0 - (x - 11.0).powi(2));
    assert_eq!(
        (found.passing, found.cheapest),
        (Some(13.0), Some(11.0)),
        "{xs:?}"
    );
    // Rising to the capacity: the capacity is the cheapest, and nothing more is probed.
    let (mut plain, _) = drive_cost(&cfg(LoadMode::Concurrency, 1.0, 64.0), 13.0, |x| x);
    let (mut more, found) = drive_cost(&c, 13.0, |x| x);
    assert_eq!(found.cheapest, Some(13.0));
    plain.sort_by(f64::total_cmp);
    more.sort_by(f64::total_cmp);
    assert_eq!(plain, more);
    // Without a load that meets the SLO there is no cheapest one; the capacity
    // objective names none.
    assert_eq!(drive_cost(&c, 0.5, |x| x).1.cheapest, None);
    let capacity_only = cfg(LoadMode::Concurrency, 1.0, 64.0);
    assert_eq!(drive_cost(&capacity_only, 13.0, |x| -x).1.cheapest, None);
}

#[test]
fn confirmation_trials_follow_the_one_trial_rule() {
    // A passing probe whose interval straddles the target, next to a clear fail.
    let o = |x: f64, meets: bool, ci: (f64, f64)| Obs {
        x,
        trials: 1,
        attainment: Some(if meets { 0.92 } else { 0.1 }),
        ci: Some(ci),
        meets,
        judgement: None,
        good_tokens_per_s: None,
        width: Some(0.01),
    };
    let obs = [o(3.0, true, (0.8, 0.97)), o(4.0, false, (0.02, 0.3))];
    let c = cfg(LoadMode::Concurrency, 3.0, 64.0);
    // Fixed trials: the straddling probe gets another trial.
    assert_eq!(next_step(&c, &obs), Step::Run { x: 3.0, trials: 2 });
    // `trials = "auto"`: its key metrics are already narrower than 2%: settled.
    let auto = SearchConfig {
        width: Some(0.02),
        ..c.clone()
    };
    assert!(matches!(next_step(&auto, &obs), Step::Done(_)));
    // At the budget, it stops and the result says the probe is noisy.
    let spent = [
        Obs {
            trials: 3,
            ..obs[0].clone()
        },
        obs[1].clone(),
    ];
    let Step::Done(found) = next_step(&c, &spent) else {
        panic!("the budget ends the confirmation");
    };
    assert_eq!(found.noisy, vec![3.0]);
}

/// An observation at `x` with `trials` trials, its point estimate `meets` and its
/// stored judgement.
fn judged(x: f64, trials: u32, meets: bool, j: Judgement) -> Obs {
    Obs {
        x,
        trials,
        attainment: Some(if meets { 0.95 } else { 0.5 }),
        ci: None,
        meets,
        judgement: Some(j),
        good_tokens_per_s: None,
        width: None,
    }
}

#[test]
fn the_bracket_follows_the_judgement_not_the_point_estimate() {
    // Percentile form: the point estimate at 2 is within the bound, but its
    // interval lies beyond it: judged fails, so 2 is the first failure.
    let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    let obs = [
        judged(1.0, 1, true, Judgement::Meets),
        judged(2.0, 1, true, Judgement::Fails),
    ];
    let Step::Done(found) = next_step(&c, &obs) else {
        panic!("{:?}", next_step(&c, &obs));
    };
    assert_eq!((found.passing, found.failing), (Some(1.0), Some(2.0)));
    assert!(found.noisy.is_empty());
}

#[test]
fn an_undecided_probe_gets_its_trials_before_the_bracket_moves() {
    let c = cfg(LoadMode::Concurrency, 1.0, 64.0);
    // Undecided at 2 (point estimate: passes): neither side yet, one more trial.
    let obs = [
        judged(1.0, 1, true, Judgement::Meets),
        judged(2.0, 1, true, Judgement::Undecided),
    ];
    assert_eq!(next_step(&c, &obs), Step::Run { x: 2.0, trials: 2 });
    // Decided either way, the search moves on from it.
    let obs = [
        judged(1.0, 1, true, Judgement::Meets),
        judged(2.0, 2, true, Judgement::Meets),
    ];
    assert_eq!(next_step(&c, &obs), Step::Run { x: 4.0, trials: 1 });
    // An undecided probe above the lowest failure steers nothing: no trials for it.
    let obs = [
        judged(1.0, 1, true, Judgement::Meets),
        judged(2.0, 1, false, Judgement::Fails),
        judged(4.0, 1, true, Judgement::Undecided),
    ];
    assert!(matches!(next_step(&c, &obs), Step::Done(_)));
    // Still undecided at its budget (3 trials): its point estimate places it,
    // and when it decides the answer, the answer names it.
    let obs = [
        judged(1.0, 1, true, Judgement::Meets),
        judged(2.0, 3, true, Judgement::Undecided),
        judged(3.0, 1, false, Judgement::Fails),
    ];
    let Step::Done(found) = next_step(&c, &obs) else {
        panic!("{:?}", next_step(&c, &obs));
    };
    assert_eq!((found.passing, found.failing), (Some(2.0), Some(3.0)));
    assert_eq!(found.noisy, vec![2.0]);
}
