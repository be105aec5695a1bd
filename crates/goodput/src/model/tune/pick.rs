//! The answer: the best **measured** capacity, judged against the runner-up by
//! their capacity intervals (the searches' 95% bootstrap intervals): apart, it is
//! the best; overlapping, the two are within noise, and the note says what would
//! separate them. A prediction never takes part.

use report::{TuneCapacity, TuneJudgement};

/// The measured capacities `(index, capacity)` ranked best first: by the stated
/// capacity, then the interval's estimate, then the space's order. Candidates
/// that serve no load rank last.
pub fn rank(measured: &[(usize, TuneCapacity)]) -> Vec<usize> {
    let key = |c: &TuneCapacity| {
        (
            c.max_load.unwrap_or(-1.0),
            c.interval
                .map_or(c.max_load.unwrap_or(-1.0), |i| i.estimate),
        )
    };
    let mut v: Vec<&(usize, TuneCapacity)> = measured.iter().collect();
    v.sort_by(|(ia, a), (ib, b)| {
        let (ka, kb) = (key(a), key(b));
        kb.0.total_cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(ia.cmp(ib))
    });
    v.into_iter().map(|(i, _)| *i).collect()
}

/// `[low, high]` of a capacity (its interval, else the point itself; none: 0).
fn span(c: &TuneCapacity) -> (f64, f64) {
    match (c.interval, c.max_load) {
        (Some(i), _) => (i.low, i.high),
        (None, Some(x)) => (x, x),
        (None, None) => (0.0, 0.0),
    }
}

/// The best against the runner-up, with the judgement in words.
pub fn judge(best: &TuneCapacity, runner_up: &TuneCapacity) -> (TuneJudgement, String) {
    let (bl, bh) = span(best);
    let (rl, rh) = span(runner_up);
    let num = crate::render::text::num;
    if runner_up.max_load.is_none() || bl > rh {
        (
            TuneJudgement::Best,
            format!(
                "the best's capacity interval ({}-{}) lies above the runner-up's ({}-{})",
                num(bl),
                num(bh),
                num(rl),
                num(rh)
            ),
        )
    } else {
        (
            TuneJudgement::WithinNoise,
            format!(
                "Their capacity intervals overlap ({}-{} and {}-{}): the measurements cannot order them. More requests per trial (`requests_per_trial`) or more trials per probe (`[search] max_trials_per_probe`) narrow the intervals; `goodput compare` on the two search reports says which metrics differ",
                num(bl),
                num(bh),
                num(rl),
                num(rh)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::CapacityInterval;

    fn cap(x: Option<f64>, low: f64, high: f64) -> TuneCapacity {
        TuneCapacity {
            max_load: x,
            interval: x.map(|e| CapacityInterval {
                estimate: e,
                low,
                high,
                resamples: 200,
            }),
            limited_by: "ttft".into(),
            trials: 4,
        }
    }

    #[test]
    fn the_best_is_the_largest_measured_capacity_and_none_ranks_last() {
        let m = vec![
            (0, cap(Some(2.0), 2.0, 2.0)),
            (1, cap(None, 0.0, 0.0)),
            (2, cap(Some(8.0), 7.0, 8.0)),
            (3, cap(Some(8.0), 8.0, 8.0)),
        ];
        assert_eq!(rank(&m), vec![2, 3, 0, 1]);
    }

    #[test]
    fn apart_intervals_make_a_best_and_overlapping_ones_are_noise() {
        let (j, why) = judge(&cap(Some(8.0), 7.0, 8.0), &cap(Some(2.0), 2.0, 3.0));
        assert_eq!(j, TuneJudgement::Best, "{why}");
        let (j, why) = judge(&cap(Some(8.0), 6.0, 8.0), &cap(Some(7.0), 5.0, 7.0));
        assert_eq!(j, TuneJudgement::WithinNoise);
        assert!(
            why.contains("overlap") && why.contains("max_trials_per_probe"),
            "{why}"
        );
        let (j, _) = judge(&cap(Some(1.0), 1.0, 1.0), &cap(None, 0.0, 0.0));
        assert_eq!(j, TuneJudgement::Best);
    }
}
