//! A capacity search in virtual time: the same search ([`crate::judge::search::next_step`])
//! over predicted points, driven by the one trial loop ([`super::predict_sweep`]).
//! Its answer is where `goodput search --predict` confirms on the real engine; the
//! trials it took are what a blind search of a real engine that behaves like the
//! model would have needed.

/// The predicted knee of `engine` and the trials the predicted search took.
pub fn knee(report: &report::Report, engine: &str) -> (Option<f64>, u32) {
    report
        .capacity
        .get(engine)
        .map_or((None, 0), |c| (c.max_load, c.trials))
}

/// The predicted loads of `engine` whose interval straddles the SLO (the model's
/// uncertainty could flip their judgement), ascending.
pub fn straddling(report: &report::Report, engine: &str) -> Vec<f64> {
    let mut xs: Vec<f64> = report
        .load
        .get(engine)
        .map(|e| {
            e.points
                .iter()
                .filter(|p| super::interval::straddles(p))
                .map(|p| p.x)
                .collect()
        })
        .unwrap_or_default();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs
}
