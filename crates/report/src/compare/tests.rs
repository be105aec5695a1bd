use super::*;

/// A level of one engine: two trials' goodput figures, on `meets`'s side of
/// the SLO.
fn level(x: f64, meets: bool, values: [f64; 2]) -> Point {
    Point {
        x,
        trials: values
            .iter()
            .map(|v| crate::TrialInfo {
                status: crate::RunStatus::Complete,
                figures: [(
                    GOODPUT_KEY.to_string(),
                    crate::Figure {
                        value: *v,
                        var: Some(0.01),
                    },
                )]
                .into_iter()
                .collect(),
                ..Default::default()
            })
            .collect(),
        slo_check: Some(crate::SloCheck {
            meets,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The README's main job: goodput at x=1 (meets) varies by 3% between trials,
/// at x=4 (fails, requests queue) by half. The x=1 comparison rests on x=1's
/// regime only: +52% is told apart, not lost in x=4's noise.
#[test]
fn the_spread_is_pooled_only_over_levels_on_the_same_side_of_the_slo() {
    let engine = |l1: [f64; 2], l4: [f64; 2]| crate::EngineResult {
        kv_pool_tokens: None,
        points: vec![level(1.0, true, l1), level(4.0, false, l4)],
        kv_pool_source: None,
        error: None,
        restarts: Vec::new(),
        extra: Default::default(),
    };
    let base = engine([2.955, 2.970], [4.32, 4.37]);
    let cand = engine([4.376, 4.655], [1.123, 3.094]);
    let rows = pair_rows(("b", &base), ("c", &cand), true, &Rule::default());
    let at1 = rows
        .iter()
        .find(|r| r.metric == GOODPUT_METRIC && r.x == 1.0)
        .expect("a goodput row at x=1");
    let [lo, hi] = at1.ci.expect("an interval");
    assert!(lo > 0.2 && hi < 1.0, "{lo}..{hi}");
    // Pooled over both regimes, x=4's spread would have swamped it.
    let all = |e: &crate::EngineResult| {
        let mut e = e.clone();
        for p in &mut e.points {
            p.slo_check = None;
        }
        e
    };
    let rows = pair_rows(
        ("b", &all(&base)),
        ("c", &all(&cand)),
        true,
        &Rule::default(),
    );
    let pooled = rows
        .iter()
        .find(|r| r.metric == GOODPUT_METRIC && r.x == 1.0)
        .unwrap();
    assert!(pooled.ci.unwrap()[0] < 0.0, "{:?}", pooled.ci);
}
