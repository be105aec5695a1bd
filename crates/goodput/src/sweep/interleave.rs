//! Which engine runs its next trial when the engines' trials interleave: a design
//! against drift (docs/statistics.md, "Design against drift").
//!
//! Method: randomised block order. The run goes in rounds; in round `k` every
//! engine that still has trials runs its next one, in an order drawn for that
//! round alone: a Fisher-Yates shuffle of the plan's engines driven by SplitMix64
//! (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
//! OOPSLA 2014) seeded from the run's seed and `k`. Each engine's trials are
//! spread over the whole run, and the engine that goes first changes from round
//! to round at random, so a drift in time (a warming GPU, a neighbour's job) is
//! spread over every engine instead of being confounded with one of them.
//!
//! The order is a pure function of what is complete: the round is the fewest
//! trials any engine still running has completed, and its engines go in the
//! round's order among those that have not yet run it. A resumed run therefore
//! continues the same order from what its report holds, and an engine that
//! joins late (added to a resumed run) runs alone until it has caught up.

/// SplitMix64's increment (the golden ratio, 2^64 / φ).
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// One step of SplitMix64: the next state and its output.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(GOLDEN);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The order of round `round` of a run seeded `seed` over `n` engines: a
/// permutation of `0..n` (indexes into the plan's engines).
pub fn round_order(seed: u64, round: u32, n: usize) -> Vec<usize> {
    // Seed and round mixed through one SplitMix64 step each, so neighbouring
    // seeds and rounds give unrelated orders.
    let mut state = seed;
    let mixed = splitmix64(&mut state);
    let mut state = mixed ^ u64::from(round).wrapping_mul(GOLDEN);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        // Lemire's multiply-shift: an index in 0..=i with negligible bias.
        let j = ((u128::from(splitmix64(&mut state)) * (i as u128 + 1)) >> 64) as usize;
        order.swap(i, j);
    }
    order
}

/// The engine to run next: `done[i]` is `Some(trials engine i has completed)`
/// while it has trials left, `None` once its share is over (or it failed). `None`
/// when no engine has a trial left.
pub fn next_engine(seed: u64, done: &[Option<u32>]) -> Option<usize> {
    let round = done.iter().flatten().copied().min()?;
    round_order(seed, round, done.len())
        .into_iter()
        .find(|&i| done[i] == Some(round))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the order to its end over engines that each have `trials` trials
    /// (complete on the first go), from `done` already complete; the engines in
    /// the order they ran.
    fn play(seed: u64, trials: &[u32], mut done: Vec<u32>) -> Vec<usize> {
        let mut ran = Vec::new();
        loop {
            let state: Vec<Option<u32>> = done
                .iter()
                .zip(trials)
                .map(|(&d, &t)| (d < t).then_some(d))
                .collect();
            let Some(i) = next_engine(seed, &state) else {
                return ran;
            };
            ran.push(i);
            done[i] += 1;
        }
    }

    #[test]
    fn every_round_is_a_permutation_of_the_engines() {
        for seed in 0..50 {
            for round in 0..20 {
                let mut o = round_order(seed, round, 5);
                o.sort_unstable();
                assert_eq!(o, [0, 1, 2, 3, 4]);
            }
        }
        assert_eq!(round_order(7, 0, 1), [0]);
        assert!(round_order(7, 0, 0).is_empty());
    }

    #[test]
    fn two_engines_alternate_in_rounds_in_a_seeded_order() {
        let ran = play(42, &[6, 6], vec![0, 0]);
        assert_eq!(ran.len(), 12);
        for (k, pair) in ran.chunks(2).enumerate() {
            let mut p = pair.to_vec();
            p.sort_unstable();
            assert_eq!(p, [0, 1], "round {k}: each engine once");
            assert_eq!(pair, &round_order(42, k as u32, 2)[..], "round {k}");
        }
        // The same seed, the same order; another seed, another order.
        assert_eq!(play(42, &[6, 6], vec![0, 0]), ran);
        let others: Vec<Vec<usize>> = (0..8).map(|s| play(s, &[6, 6], vec![0, 0])).collect();
        assert!(others.iter().any(|o| *o != ran));
    }

    #[test]
    fn who_goes_first_is_balanced_over_many_rounds() {
        // Over 2,000 rounds, engine 0 leads about half of them (a fixed ABAB
        // order would lead every one; 3 standard deviations is about ±67).
        let first0 = (0..2000).filter(|&k| round_order(3, k, 2)[0] == 0).count();
        assert!((933..=1067).contains(&first0), "{first0}");
        // Three engines: each position taken by each engine about a third.
        let mut counts = [[0u32; 3]; 3];
        for k in 0..3000 {
            for (pos, e) in round_order(9, k, 3).into_iter().enumerate() {
                counts[e][pos] += 1;
            }
        }
        for row in counts {
            for c in row {
                assert!((900..=1100).contains(&c), "{counts:?}");
            }
        }
    }

    #[test]
    fn a_resumed_run_continues_the_same_order() {
        let whole = play(5, &[4, 4, 4], vec![0, 0, 0]);
        // Stopped after any number of trials: the rest runs as the whole would.
        for cut in 0..whole.len() {
            let mut done = vec![0, 0, 0];
            for &i in &whole[..cut] {
                done[i] += 1;
            }
            assert_eq!(play(5, &[4, 4, 4], done), whole[cut..], "cut at {cut}");
        }
    }

    #[test]
    fn engines_that_finish_early_drop_out_and_a_late_one_catches_up() {
        // Engine 1 has one trial, engine 0 three: after round 0 only 0 runs.
        let ran = play(1, &[3, 1], vec![0, 0]);
        assert_eq!(ran.iter().filter(|&&i| i == 1).count(), 1);
        assert_eq!(&ran[2..], [0, 0]);
        // Engine 2 joins a run where the others have two trials each: it runs
        // its first two alone, then the three go in rounds.
        let ran = play(1, &[3, 3, 3], vec![2, 2, 0]);
        assert_eq!(&ran[..2], [2, 2]);
        let mut last = ran[2..].to_vec();
        last.sort_unstable();
        assert_eq!(last, [0, 1, 2]);
    }

    #[test]
    fn nothing_left_is_none() {
        assert_eq!(next_engine(0, &[None, None]), None);
        assert_eq!(next_engine(0, &[]), None);
        assert_eq!(next_engine(0, &[None, Some(3)]), Some(1));
    }
}
