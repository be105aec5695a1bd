//! The adaptive-trial rule's error rate, measured by a seeded simulation (pure: no
//! servers). Each run draws trials of 24 requests from a beta-binomial around a
//! true attainment (design effect 1.4, within the 1.1-1.6 measured over 166 real
//! trials), reads the judgement after each trial from 2 to 10 by the rule, and
//! stops as the rule says; the call is the judgement when it stopped.

use report::stats::sequential::Looks;
use report::stats::Z95;
use report::{Judgement, TrialsStopped};

use super::Settled;
use crate::define::plan::TrialRule;
use crate::measure::metrics::judgement::{judge_trials, sim};

const RULE: TrialRule = TrialRule {
    min: 2,
    max: 10,
    width: None,
};

/// Over `reps` seeded runs at true attainment `p` against a 90% target: the share
/// called `meets`, the share called `fails`, and the mean trials run. `sequential`
/// reads each look at its sequential level; otherwise at 95% every time (the
/// rule before alpha spending).
fn rates(seed: u64, reps: u32, p: f64, sequential: bool) -> (f64, f64, f64) {
    let mut rng = sim::rng(seed);
    let looks = RULE.looks();
    let (mut meets, mut fails, mut trials) = (0u32, 0u32, 0u32);
    for _ in 0..reps {
        let mut counts = Vec::new();
        let call = loop {
            counts.push((sim::trial(&mut rng, 24, p, 1.4), 24));
            let k = counts.len() as u32;
            let z = if sequential { looks.z(k) } else { Z95 };
            let judgement = judge_trials(&counts, 0.9, z).map(|(j, _)| j);
            let decisive = matches!(judgement, Some(Judgement::Meets | Judgement::Fails));
            let settled = Settled {
                trials: k,
                decisive,
                width: None,
            };
            if let Some(why) = RULE.stopped(settled) {
                break (why == TrialsStopped::Decisive)
                    .then_some(judgement)
                    .flatten();
            }
        };
        trials += counts.len() as u32;
        meets += u32::from(call == Some(Judgement::Meets));
        fails += u32::from(call == Some(Judgement::Fails));
    }
    let r = f64::from(reps);
    (
        f64::from(meets) / r,
        f64::from(fails) / r,
        f64::from(trials) / r,
    )
}

#[test]
fn on_the_target_the_rule_calls_meets_at_most_two_and_a_half_percent() {
    // 4,000 runs: one standard error of a 2.5% rate is 0.25%.
    let (meets, fails, trials) = rates(431, 4000, 0.9, true);
    eprintln!("on the target, by the rule: meets {meets}, fails {fails}, {trials} trials");
    assert!(meets <= 0.025, "sequential: meets {meets}");
    // Reading every look at 95% calls it far more often (the old rule).
    let (naive, naive_fails, _) = rates(431, 4000, 0.9, false);
    eprintln!("on the target, every look at 95%: meets {naive}, fails {naive_fails}");
    assert!(naive >= 0.05, "every look at 95%: meets {naive}");
    assert!(naive >= 3.0 * meets, "{naive} vs {meets}");
    // The other error (a true attainment on the target called `fails`) stays
    // small too, though the design effect's estimate from few trials lets it
    // exceed 2.5% (docs/statistics.md gives the figure).
    assert!(fails <= 0.05, "sequential: fails {fails}");
}

#[test]
fn far_from_the_target_the_rule_still_stops_early() {
    // 75% against 90%: called `fails` after about 3 trials, nearly always.
    let (meets, fails, trials) = rates(432, 2000, 0.75, true);
    eprintln!("at 75%: meets {meets}, fails {fails}, {trials} trials");
    assert!(meets == 0.0 && fails >= 0.99, "{meets} {fails}");
    assert!(trials <= 4.0, "mean trials {trials}");
    // 98%: called `meets` nearly always, well before the budget of 10.
    let (meets, fails, trials) = rates(433, 2000, 0.98, true);
    eprintln!("at 98%: meets {meets}, fails {fails}, {trials} trials");
    assert!(meets >= 0.85 && fails == 0.0, "{meets} {fails}");
    assert!(trials <= 5.5, "mean trials {trials}");
}

#[test]
fn a_fixed_count_is_one_look_at_95_percent() {
    assert_eq!(Looks::ONE.z(3), Z95);
    let fixed = TrialRule {
        min: 3,
        max: 3,
        width: None,
    };
    assert_eq!(fixed.looks().z(3), Z95);
    // 2 to 10 trials: the first look at z = 2.24, the later ones at 2.96
    // (report::stats::sequential).
    let l = RULE.looks();
    assert!(l.z(2) < 2.25 && l.z(3) > 2.95 && l.z(10) == l.z(3));
}
