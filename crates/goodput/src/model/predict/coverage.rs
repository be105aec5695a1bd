//! How often a search's capacity interval covers another run's capacity: repeated
//! searches of one noisy engine in virtual time (the simulator's model with its
//! step and request noise, a fresh seed for the noise and the arrivals each time,
//! through the same trial loop as `search --predict`), and the share of ordered
//! pairs `(i, j)`, `i ≠ j`, whose interval `i` holds estimate `j`.
//!
//! For a 95% interval of an estimate that is roughly normal, that pairwise share
//! is about 83% (`P(|Z| < 1.96 / √2)`: both the interval's centre and the other
//! estimate vary), so that is the level to expect, not 95%. The capacity test and
//! `cargo bench -p goodput --bench search` (`GOODPUT_BENCH_COVERAGE=N`) use it.

use goodput_sim::config::JitterConfig;
use goodput_sim::SimConfig;
use report::{Capacity, CapacityInterval};

use crate::define::plan::Plan;
use crate::define::profile::{Overrides, Profile, SearchSpec};

/// A search profile on the simulator (`mode` `rate` or `concurrency`, bounds
/// `min`..`max`): SLO TTFT ≤ `ttft_ms` and TPOT ≤ `tpot_ms` for 90% of requests,
/// `requests` requests a trial, the default trials (2, up to 4 at a probe still
/// undecided), the load seed `seed`.
pub fn plan(
    mode: &str,
    (min, max): (f64, f64),
    (ttft_ms, tpot_ms): (f64, f64),
    requests: u32,
    seed: u64,
) -> Result<Plan, String> {
    let text = format!(
        "name = \"coverage\"\n[slo]\nttft_ms = {ttft_ms}\ntpot_ms = {tpot_ms}\n\
         [load]\nmode = \"{mode}\"\npoints = [{min}]\nrequests_per_trial = {requests}\n\
         trials = 2\nwarmup_requests = 0\nseed = {seed}\n\
         [workload]\ninput_tokens = 512\noutput_tokens = 64\n\
         [search]\nmin = {min}\nmax = {max}\n\
         [engines.sim]\nkind = \"sim\"\npreset = \"vllm-fast-b\"\n"
    );
    Profile::parse(&text, "coverage")
        .and_then(|p| {
            let ov = Overrides {
                search: Some(SearchSpec::default()),
                ..Default::default()
            };
            p.into_plan("coverage", &ov)
        })
        .map_err(|e| e.to_string())
}

/// The vllm-fast-b preset, unthrottled, with seeded noise (10% a step, 20% a
/// request) from `seed`.
pub fn engine(seed: u64) -> SimConfig {
    let mut c = goodput_sim::preset("vllm-fast-b").unwrap_or_default();
    c.thermal = None;
    c.jitter = Some(JitterConfig {
        step: 0.1,
        request: 0.2,
    });
    c.seed = seed;
    c
}

/// One search of `plan` on `config` in virtual time: the engine's capacity.
pub fn search(plan: &Plan, config: &SimConfig) -> Option<Capacity> {
    let (sweep, _) = crate::model::predict::predict_sweep(plan, config);
    let report = sweep.report(plan);
    crate::sweep::capacities(plan, &sweep, &report)
        .into_iter()
        .next()
        .map(|(_, c)| c)
}

/// Ordered pairs `(i, j)`, `i ≠ j`, whose interval `i` holds estimate `j`, and
/// the pairs counted.
pub fn pairwise(intervals: &[CapacityInterval]) -> (usize, usize) {
    let mut hits = 0;
    let mut pairs = 0;
    for (i, a) in intervals.iter().enumerate() {
        for (j, b) in intervals.iter().enumerate() {
            if i != j {
                pairs += 1;
                hits += usize::from(a.low <= b.estimate && b.estimate <= a.high);
            }
        }
    }
    (hits, pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ci(estimate: f64, low: f64, high: f64) -> CapacityInterval {
        CapacityInterval {
            estimate,
            low,
            high,
            resamples: 1,
        }
    }

    #[test]
    fn pairs_are_counted_both_ways() {
        let v = [ci(1.0, 0.9, 1.1), ci(1.05, 1.0, 1.2), ci(2.0, 1.9, 2.1)];
        // 0 holds 1; 1 holds 0; nothing holds 2 or is held by it.
        assert_eq!(pairwise(&v), (2, 6));
    }

    /// Twelve rate-mode searches of one noisy engine (fresh seeds): the intervals
    /// hold another run's capacity in 109 of 132 ordered pairs (83%, what a 95%
    /// interval of a normal estimate gives). Before the interval was widened to the
    /// probes' own judgements ([`crate::stats::capacity::widened`]) it was 84 of
    /// 132: the curve is flat near the target here (about 90% attainment from 0.57
    /// to 0.85 requests/s across runs), and each run's bootstrap stayed between the
    /// close probes its search put around its own crossing. Resampling each probe's
    /// trials instead (trials, then Binomial requests) held 12 of 30 pairs on the
    /// first six runs.
    #[test]
    fn repeated_rate_searches_cover_each_other_in_most_pairs() {
        let found: Vec<Capacity> = (1..=12u64)
            .map(|seed| {
                let plan = plan("rate", (0.1, 16.0), (1500.0, 80.0), 32, seed).unwrap();
                search(&plan, &engine(seed)).unwrap()
            })
            .collect();
        let intervals: Vec<CapacityInterval> = found.iter().filter_map(|c| c.interval).collect();
        assert_eq!(intervals.len(), found.len(), "{found:#?}");
        for i in &intervals {
            assert!(i.low < i.high, "a zero-width interval: {i:?}");
        }
        // A capacity stated at an undecided probe says so (several runs here).
        assert!(found.iter().filter(|c| c.noisy).count() >= 2, "{found:#?}");
        for c in &found {
            let said = c.note.contains("where the SLO judgement is undecided");
            assert_eq!(c.noisy, said, "{c:?}");
        }
        let (hits, pairs) = pairwise(&intervals);
        assert_eq!(pairs, 132);
        assert!(hits * 100 >= pairs * 75, "{hits} of {pairs}: {intervals:?}");
    }

    #[test]
    fn concurrency_intervals_are_whole_loads_holding_the_capacity() {
        for seed in 1..=4u64 {
            let plan = plan("concurrency", (1.0, 64.0), (1500.0, 80.0), 32, seed).unwrap();
            let c = search(&plan, &engine(seed)).unwrap();
            let i = c.interval.unwrap_or_else(|| panic!("{c:?}"));
            assert!(i.low <= i.estimate && i.estimate <= i.high, "{i:?}");
            assert_eq!(
                (i.low.fract(), i.estimate.fract(), i.high.fract()),
                (0.0, 0.0, 0.0)
            );
            assert!(
                c.max_load.is_some_and(|m| i.low <= m && m <= i.high),
                "{c:?}"
            );
        }
    }
}
