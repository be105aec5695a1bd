//! Successive halving (Jamieson & Talwalkar 2016), for flags the engine model does
//! not speak: every candidate (a spread of `max_candidates_measured` of them when
//! the space is larger) gets a short capacity search (one trial a probe, a quarter
//! of the plan's requests); the better half by that capacity is kept and searched
//! again with twice the requests, until two are left, which get the plan's own
//! search. Only those full searches are `measured`; the short ones are `screened`.

use crate::define::plan::Plan;

use super::Tuning;

/// Evenly spread indices: `k` of `0..n`, the first and the last among them.
pub fn spread(n: usize, k: usize) -> Vec<usize> {
    if k >= n {
        return (0..n).collect();
    }
    if k <= 1 {
        return vec![0];
    }
    let mut v: Vec<usize> = (0..k)
        .map(|j| ((j * (n - 1)) as f64 / (k - 1) as f64).round() as usize)
        .collect();
    v.dedup();
    v
}

/// `plan`'s search, shorter: `requests` a trial, one trial a probe.
fn short(plan: &Plan, requests: u32) -> Plan {
    let mut p = plan.clone();
    p.requests_per_trial = requests.max(1);
    p.trials = 1;
    p.adaptive = None;
    if let Some(s) = p.search.as_mut() {
        s.base_trials = 1;
        s.max_trials_per_probe = 1;
        s.width = None;
    }
    p
}

pub(super) async fn run(t: &mut Tuning<'_>) {
    let n = t.space.candidates.len();
    let k = (t.space.max_measured as usize).min(n);
    let mut pool = spread(n, k);
    if k < n {
        t.notes.push(format!(
            "the space has {n} candidates and the budget {k}: {k} spread over it were searched, the rest not at all"
        ));
    }
    let full = t.plan.requests_per_trial;
    let mut requests = (full / 4).max(4).min(full);
    let mut round = 0;
    while pool.len() > 2 && requests < full {
        round += 1;
        let plan = short(t.plan, requests);
        let mut scored = Vec::new();
        for &i in &pool {
            if !t.time_left() {
                break;
            }
            let m = t.measure(i, Some(&plan), &format!("r{round}-")).await;
            if let Some(c) = m.capacity.clone() {
                t.rows[i].screened = Some(c.clone());
                scored.push((i, c));
            }
        }
        let keep = pool.len().div_ceil(2).max(2);
        pool = super::pick::rank(&scored).into_iter().take(keep).collect();
        requests = (requests * 2).min(full);
    }
    t.notes.push(format!(
        "successive halving: {round} round(s) of short searches (one trial a probe), then the plan's full search of the last {}",
        pool.len()
    ));
    for i in pool {
        if !t.time_left() {
            t.notes.push(format!(
                "the budget ({}) ran out before the full searches",
                t.spent()
            ));
            break;
        }
        t.measure_full(i).await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn spread_takes_both_ends_and_spaces_the_rest() {
        assert_eq!(super::spread(6, 2), vec![0, 5]);
        assert_eq!(super::spread(7, 3), vec![0, 3, 6]);
        assert_eq!(super::spread(3, 6), vec![0, 1, 2]);
        assert_eq!(super::spread(5, 1), vec![0]);
    }
}
