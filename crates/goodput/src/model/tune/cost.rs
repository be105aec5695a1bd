//! `objective = "cost"`: the least dollars per million good tokens at the load
//! that must be served (`[tune] load`). Each candidate is priced (the engine's
//! `usd_per_hour`, or `usd_per_hour_per_gpu` times the GPUs its flags ask for:
//! `--tensor-parallel-size`/`-tp` times `--pipeline-parallel-size`/`-pp` times
//! `--data-parallel-size`/`-dp`) and measured at that load, one point of the
//! profile's trials through the one runner, cheapest price first, within the
//! budget. Its cost per good token is the point's (derived in
//! `measure::metrics::cost`, the one place); it qualifies only where the point
//! meets the SLO. The best is the least median cost; against the runner-up the
//! trials' ranges decide: apart, it is the best; overlapping, within noise.

use report::{TuneCost, TuneJudgement};

use super::Tuning;
use crate::define::plan::Plan;
use crate::define::profile::{Candidate, FlagValue};

/// The flags that multiply the GPUs a candidate uses.
const GPU_FLAGS: &[&str] = &[
    "--tensor-parallel-size",
    "-tp",
    "--pipeline-parallel-size",
    "-pp",
    "--data-parallel-size",
    "-dp",
];

/// The GPUs `c` asks for (1 without a parallelism flag).
pub fn gpus(c: &Candidate) -> u32 {
    c.flags
        .iter()
        .filter(|(f, _)| GPU_FLAGS.contains(&f.replace('_', "-").as_str()))
        .filter_map(|(_, v)| match v {
            FlagValue::Int(n) => u32::try_from(*n).ok().filter(|n| *n >= 1),
            FlagValue::Text(s) => s.parse().ok().filter(|n: &u32| *n >= 1),
            _ => None,
        })
        .product()
}

/// The candidate's price an hour: per GPU times its GPUs when a per-GPU price
/// is given, else the engine's own.
pub(crate) fn price(t: &Tuning<'_>, c: &Candidate) -> Option<f64> {
    match t.space.usd_per_hour_per_gpu {
        Some(per_gpu) => Some(per_gpu * f64::from(gpus(c))),
        None => t
            .plan
            .engines
            .get(&t.space.engine)
            .and_then(|e| e.usd_per_hour),
    }
}

/// `plan` as one point at `load`, no search, the engine priced at `usd`.
fn point_plan(plan: &Plan, engine: &str, load: f64, usd: f64) -> Plan {
    let mut p = plan.clone();
    p.search = None;
    p.points = vec![load];
    if let Some(e) = p.engines.get_mut(engine) {
        e.usd_per_hour = Some(usd);
    }
    p
}

/// The cost of the measured point at `load`, from its report.
fn cost_of(report: &report::Report, engine: &str, load: f64, usd: f64) -> Option<TuneCost> {
    let point = report
        .load
        .get(engine)?
        .points
        .iter()
        .find(|p| (p.x - load).abs() < 1e-9)?;
    Some(TuneCost {
        load,
        usd_per_hour: usd,
        meets: point.slo_check.as_ref().is_some_and(|s| s.meets),
        usd_per_million_good_tokens: point
            .cost
            .as_ref()
            .map(|c| c.usd_per_million_good_tokens)
            .filter(|s| s.n > 0 && s.median.is_some()),
    })
}

/// Measures candidates at the load, cheapest first, within the budget.
pub(super) async fn run(t: &mut Tuning<'_>) {
    let Some(load) = t.space.load else {
        return;
    };
    let mut order: Vec<(usize, f64)> = (0..t.space.candidates.len())
        .filter_map(|i| price(t, &t.space.candidates[i]).map(|p| (i, p)))
        .collect();
    order.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    t.notes.push(format!(
        "cost: every candidate priced, then measured at load {} (one point, the profile's trials), cheapest price first; the engine model does not predict cost yet",
        crate::render::text::num(load)
    ));
    for (i, usd) in order {
        if !t.budget_left() {
            t.notes.push(format!(
                "the budget ({}) ran out before every candidate was measured at the load",
                t.spent()
            ));
            break;
        }
        let plan = point_plan(t.plan, &t.space.engine, load, usd);
        let m = t.measure(i, Some(&plan), "").await;
        let row = &mut t.rows[i];
        match m
            .report
            .as_ref()
            .and_then(|r| cost_of(r, &t.space.engine, load, usd))
        {
            Some(c) => row.cost = Some(c),
            None if row.failure.is_none() => {
                row.failure = Some(format!(
                    "no point at load {} in its report",
                    crate::render::text::num(load)
                ))
            }
            None => {}
        }
        t.reports[i] = m.report;
    }
}

/// The median cost, when it meets the SLO and served good tokens.
pub fn qualifying(c: &TuneCost) -> Option<f64> {
    c.meets
        .then(|| c.usd_per_million_good_tokens.and_then(|s| s.median))
        .flatten()
}

/// Candidates that meet the SLO at the load, least median cost first (ties by
/// the space's order).
pub fn rank(rows: &[report::TuneCandidate]) -> Vec<usize> {
    let mut v: Vec<(usize, f64)> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.cost.as_ref().and_then(qualifying).map(|c| (i, c)))
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    v.into_iter().map(|(i, _)| i).collect()
}

/// The cheapest against the runner-up, by the trials' ranges of their costs.
pub fn judge(best: &TuneCost, runner_up: &TuneCost) -> (TuneJudgement, String) {
    let range = |c: &TuneCost| {
        c.usd_per_million_good_tokens
            .map_or((0.0, 0.0), |s| (s.min.unwrap_or(0.0), s.max.unwrap_or(0.0)))
    };
    let ((bl, bh), (rl, rh)) = (range(best), range(runner_up));
    let num = crate::render::text::num;
    if bh < rl {
        (
            TuneJudgement::Best,
            format!(
                "the best's cost per million good tokens (${}-${} over trials) lies below the runner-up's (${}-${})",
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
                "Their costs per million good tokens overlap over trials (${}-${} and ${}-${}): the measurements cannot order them. More trials (`trials`) or requests per trial narrow them",
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
    use crate::define::profile::product;

    fn cost(meets: bool, median: f64, min: f64, max: f64) -> TuneCost {
        TuneCost {
            load: 4.0,
            usd_per_hour: 2.0,
            meets,
            usd_per_million_good_tokens: Some(report::Stat {
                median: Some(median),
                min: Some(min),
                max: Some(max),
                n: 2,
            }),
        }
    }

    #[test]
    fn gpus_multiply_the_parallelism_flags() {
        let c = &product(&[
            ("-tp".into(), vec![FlagValue::Int(2)]),
            (
                "--pipeline_parallel_size".into(),
                vec![FlagValue::Text("2".into())],
            ),
            ("--max-num-seqs".into(), vec![FlagValue::Int(8)]),
        ])[0];
        assert_eq!(gpus(c), 4);
        let none = &product(&[("--max-num-seqs".into(), vec![FlagValue::Int(8)])])[0];
        assert_eq!(gpus(none), 1);
    }

    #[test]
    fn only_a_candidate_that_meets_qualifies_and_ranges_decide() {
        assert_eq!(qualifying(&cost(false, 1.0, 1.0, 1.0)), None);
        assert_eq!(qualifying(&cost(true, 3.0, 2.0, 4.0)), Some(3.0));
        let (j, why) = judge(&cost(true, 1.0, 0.9, 1.1), &cost(true, 2.0, 1.8, 2.2));
        assert_eq!(j, TuneJudgement::Best, "{why}");
        let (j, why) = judge(&cost(true, 1.0, 0.9, 1.9), &cost(true, 2.0, 1.8, 2.2));
        assert_eq!(j, TuneJudgement::WithinNoise);
        assert!(why.contains("overlap"), "{why}");
    }
}
