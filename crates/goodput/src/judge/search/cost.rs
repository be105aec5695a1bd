//! The cost objective (`search --objective cost`): after the capacity search, the
//! load at which good tokens cost least.
//!
//! At any price, the cost per good token is the price over the good output
//! throughput (`metrics::cost`), so the cheapest load is the one with the most good
//! output tokens per second. Among the probed loads that meet the SLO (up to the
//! capacity found), take the best; while a gap between it and a probed neighbour
//! is wider than the search resolves, probe that gap's middle (the wider gap
//! first). A throughput that rises to one peak is found to the resolution; the
//! probe budget bounds the rest. Pure, like [`super::next_step`].

use super::{Found, Obs, SearchConfig, Step};

/// The next step once the capacity search found `found` over `obs` (sorted by load).
pub(super) fn refine(cfg: &SearchConfig, obs: &[&Obs], found: Found) -> Step {
    let eligible =
        |o: &&&Obs| o.passes(cfg) == Some(true) && found.passing.is_some_and(|p| o.x <= p);
    let best = obs
        .iter()
        .filter(eligible)
        .filter_map(|o| Some((*o, o.good_tokens_per_s?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(o, _)| o);
    let Some(best) = best else {
        return Step::Done(found);
    };
    let below = obs.iter().rfind(|o| o.x < best.x).map(|o| o.x);
    let above = obs
        .iter()
        .find(|o| o.x > best.x)
        .map(|o| o.x)
        .filter(|x| found.passing.is_some_and(|p| *x <= p));
    let mut gaps: Vec<(f64, f64)> = [below.map(|b| (b, best.x)), above.map(|a| (best.x, a))]
        .into_iter()
        .flatten()
        .filter(|(a, b)| !cfg.resolved(*a, *b))
        .collect();
    gaps.sort_by(|g, h| (h.1 - h.0).total_cmp(&(g.1 - g.0)));
    let budget_left = (obs.len() as u32) < cfg.max_probes;
    for (a, b) in gaps.into_iter().filter(|_| budget_left) {
        let x = cfg.snap((a + b) / 2.0);
        if x > a && x < b {
            return Step::Run {
                x,
                trials: cfg.base_trials,
            };
        }
    }
    Step::Done(Found {
        cheapest: Some(best.x),
        ..found
    })
}
