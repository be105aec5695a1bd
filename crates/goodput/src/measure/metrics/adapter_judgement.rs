//! Whether one LoRA adapter's latency differs from the other adapters': the one
//! judgement behind every "lora-b's TTFT is higher" goodput prints (the report
//! stores it; the warnings and the verdict only show it).
//!
//! Per adapter and judged metric, over a point's successful requests (all trials
//! pooled): the adapter's median against the median of every other adapter's
//! requests together. Each median gets its distribution-free order-statistic
//! interval ([`crate::stats::order`], Hahn & Meeker §5.2), and the difference of
//! the medians lies in `[a_low − o_high, a_high − o_low]` whenever both intervals
//! cover their medians. Bonferroni's inequality over every interval of the point
//! (each at `1 − α / (2 m)` for `m` differences judged) makes all of the point's
//! difference intervals hold together with probability ≥ 1 − α (α = 0.05,
//! `compare`'s). An adapter is **higher** (lower) when its interval lies above
//! (below) zero and the difference is at least `compare`'s least effect (2%) of
//! the others' median; **same** when the whole interval lies within that effect;
//! else **undecided**: the data cannot tell. Requests of one trial share its
//! conditions, which the pooled intervals do not allow for: with adapters drawn
//! in the same trials, those conditions fall on every adapter alike.

use report::stats::sort_values;
use report::{AdapterJudgement, AdapterOutcome, SloMetric};

use crate::stats::order::quantile_interval;

/// The judgements of a point's adapters, from each adapter's pooled values per
/// metric (in [`SloMetric::ALL`]'s order), for the `judged` metrics; none with
/// fewer than two adapters.
pub fn judge(
    pooled: &[(String, [Vec<f64>; SloMetric::COUNT])],
    judged: &[SloMetric],
) -> Vec<AdapterJudgement> {
    if pooled.len() < 2 {
        return Vec::new();
    }
    let rule = report::compare::Rule::default();
    // The (adapter, metric) pairs with values on both sides.
    let mut pairs = Vec::new();
    for (i, (_, values)) in pooled.iter().enumerate() {
        for &m in judged {
            let others = pooled
                .iter()
                .enumerate()
                .any(|(j, (_, v))| j != i && !v[m as usize].is_empty());
            if !values[m as usize].is_empty() && others {
                pairs.push((i, m));
            }
        }
    }
    let level = 1.0 - rule.alpha / (2.0 * pairs.len().max(1) as f64);
    pairs
        .into_iter()
        .filter_map(|(i, m)| {
            let mut mine = pooled[i].1[m as usize].clone();
            let mut others: Vec<f64> = pooled
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .flat_map(|(_, (_, v))| v[m as usize].iter().copied())
                .collect();
            sort_values(&mut mine);
            sort_values(&mut others);
            let a = quantile_interval(&mine, 0.5, level)?;
            let o = quantile_interval(&others, 0.5, level)?;
            let difference = a.estimate - o.estimate;
            let low = a.low.zip(o.high).map(|(al, oh)| al - oh);
            let high = a.high.zip(o.low).map(|(ah, ol)| ah - ol);
            let effect = rule.min_effect * o.estimate.abs();
            let outcome = if low.is_some_and(|l| l > 0.0) && difference >= effect {
                AdapterOutcome::Higher
            } else if high.is_some_and(|h| h < 0.0) && -difference >= effect {
                AdapterOutcome::Lower
            } else if low.is_some_and(|l| l >= -effect) && high.is_some_and(|h| h <= effect) {
                AdapterOutcome::Same
            } else {
                AdapterOutcome::Undecided
            };
            Some(AdapterJudgement {
                adapter: pooled[i].0.clone(),
                metric: m.key().to_string(),
                median_ms: a.estimate,
                others_median_ms: o.estimate,
                difference_ms: difference,
                low_ms: low,
                high_ms: high,
                level: 1.0 - rule.alpha,
                min_effect: rule.min_effect,
                outcome,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// `n` TTFTs around `centre` ms (±10% uniform noise), and TPOTs of 10 ms.
    fn adapter(name: &str, n: usize, centre: f64, seed: u64) -> (String, [Vec<f64>; 5]) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut v: [Vec<f64>; 5] = Default::default();
        v[SloMetric::Ttft as usize] = (0..n).map(|_| centre * rng.gen_range(0.9..1.1)).collect();
        v[SloMetric::Tpot as usize] = (0..n).map(|_| 10.0 * rng.gen_range(0.99..1.01)).collect();
        (name.to_string(), v)
    }

    const JUDGED: [SloMetric; 2] = [SloMetric::Ttft, SloMetric::Tpot];

    fn outcome<'a>(j: &'a [AdapterJudgement], adapter: &str, metric: &str) -> &'a AdapterJudgement {
        j.iter()
            .find(|j| j.adapter == adapter && j.metric == metric)
            .unwrap()
    }

    #[test]
    fn a_slower_adapter_is_higher_and_the_others_lower() {
        let pooled = [
            adapter("lora-a", 60, 40.0, 1),
            adapter("lora-b", 60, 120.0, 2),
            adapter("lora-c", 60, 40.0, 3),
        ];
        let j = judge(&pooled, &JUDGED);
        assert_eq!(j.len(), 6);
        let b = outcome(&j, "lora-b", "ttft");
        assert_eq!(b.outcome, AdapterOutcome::Higher, "{b:?}");
        let (low, high) = (b.low_ms.unwrap(), b.high_ms.unwrap());
        assert!(
            low > 60.0 && high < 100.0 && (low..=high).contains(&b.difference_ms),
            "{b:?}"
        );
        // The others' pool holds lora-b's slow requests: a and c are lower.
        assert_eq!(outcome(&j, "lora-a", "ttft").outcome, AdapterOutcome::Lower);
        assert_eq!(outcome(&j, "lora-b", "tpot").outcome, AdapterOutcome::Same);
    }

    #[test]
    fn equal_adapters_are_never_called_apart() {
        // Over many seeds, adapters drawn from one distribution are never higher or
        // lower (the intervals hold together at 95%; the least effect adds margin).
        let mut apart = 0;
        for seed in 0..200 {
            let pooled = [
                adapter("a", 40, 40.0, seed * 3),
                adapter("b", 40, 40.0, seed * 3 + 1),
            ];
            apart += judge(&pooled, &JUDGED)
                .iter()
                .filter(|j| matches!(j.outcome, AdapterOutcome::Higher | AdapterOutcome::Lower))
                .count();
        }
        assert!(apart <= 2, "{apart} false differences in 200 points");
    }

    #[test]
    fn too_few_requests_cannot_tell() {
        let pooled = [adapter("a", 3, 40.0, 1), adapter("b", 3, 120.0, 2)];
        let j = judge(&pooled, &[SloMetric::Ttft]);
        assert_eq!(j[0].outcome, AdapterOutcome::Undecided);
        assert_eq!((j[0].low_ms, j[0].high_ms), (None, None));
        // One adapter alone is judged against nothing.
        assert!(judge(&pooled[..1], &JUDGED).is_empty());
    }
}
