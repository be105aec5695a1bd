//! The interval's draws: correlated costs against independent ones, and the
//! number of draws.

use super::*;
use crate::model::fit::evidence::Covariance;
use crate::model::predict::validate;

/// An engine whose step is `fixed + decode × batch` and nothing else: at a batch
/// of 8, TPOT moves with `fixed + 8 × decode`.
fn engine() -> SimConfig {
    SimConfig {
        step_fixed_ms: 10.0,
        per_prefill_token_ms: 0.0,
        per_decode_seq_ms: 1.0,
        per_kv_token_ms: 0.0,
        prefill_step_ms: 0.0,
        per_prefill_seq_ms: 0.0,
        sched_cpu_ms: 0.0,
        ..SimConfig::default()
    }
}

/// Evidence of a fit at concurrency 8 with no model error and no trial spread
/// (the interval is the costs' alone), the fixed and per-request costs each
/// with a standard error worth 1 ms of a step at batch 8, correlated `rho`.
fn evidence(rho: f64) -> Evidence {
    let (sf, sd) = (1.0, 0.125);
    let mut ev = Evidence {
        mode: "concurrency".into(),
        loads: vec![8.0],
        max_batch_seen: 8,
        trial_spread: vec![0.0; 3],
        model_error: vec![0.0; 3],
        ..Evidence::default()
    };
    ev.stderr.insert("step_fixed_ms".into(), sf);
    ev.stderr.insert("per_decode_seq_ms".into(), sd);
    ev.covariance = Some(Covariance {
        names: vec!["step_fixed_ms".into(), "per_decode_seq_ms".into()],
        matrix: vec![vec![sf * sf, rho * sf * sd], vec![rho * sf * sd, sd * sd]],
    });
    ev
}

/// The TPOT interval's width at concurrency 8 with `costs`.
fn tpot_width(ev: &Evidence, costs: &CostDraw) -> f64 {
    let plan = validate::plan(&[8.0], (32, 1, 16, 64, 0.0)).unwrap_or_else(|e| panic!("{e}"));
    let point = Point {
        engine: "e",
        pi: 0,
        x: 8.0,
        nominal: [None; 3],
    };
    let iv = bootstrap_with(&plan, &engine(), ev, costs, DRAWS, &point);
    assert_eq!(iv.draws, DRAWS);
    let [lo, hi] = iv.metrics["median_tpot_ms"];
    hi - lo
}

#[test]
fn correlated_costs_narrow_or_widen_the_interval_as_the_covariance_says() {
    // Var(fixed + 8 decode) = 1 + 1 + 2 rho: with rho = -0.8 a fifth of the
    // independent draw's 2 (width × 0.45), with rho = +0.8 1.8 times it (× 1.34).
    let against = evidence(-0.8);
    let along = evidence(0.8);
    let diagonal = tpot_width(&against, &CostDraw::independent(&against));
    assert!(diagonal > 0.0);
    let narrow = tpot_width(&against, &CostDraw::new(&against)) / diagonal;
    let wide = tpot_width(&along, &CostDraw::new(&along)) / diagonal;
    assert!(
        (0.3..0.6).contains(&narrow),
        "rho -0.8: width ratio {narrow}"
    );
    assert!((1.15..1.6).contains(&wide), "rho +0.8: width ratio {wide}");
    // An older file without a covariance draws the costs alone.
    let mut old = against.clone();
    old.covariance = None;
    assert!(!CostDraw::new(&old).is_joint());
    let same = tpot_width(&old, &CostDraw::new(&old)) / diagonal;
    assert!((same - 1.0).abs() < 1e-9, "{same}");
}

#[test]
fn the_draws_are_the_files_or_the_default_within_bounds() {
    let mut ev = Evidence::default();
    assert_eq!(draws(&ev), DRAWS);
    const { assert!(DRAWS >= 400) };
    ev.draws = Some(1000);
    assert_eq!(draws(&ev), 1000);
    ev.draws = Some(3);
    assert_eq!(draws(&ev), MIN_DRAWS);
    ev.draws = Some(u32::MAX);
    assert_eq!(draws(&ev), MAX_DRAWS);
}

#[test]
fn the_draws_do_not_depend_on_the_threads() {
    let ev = evidence(-0.5);
    let plan = validate::plan(&[8.0], (16, 2, 16, 32, 0.2)).unwrap_or_else(|e| panic!("{e}"));
    let point = Point {
        engine: "e",
        pi: 0,
        x: 8.0,
        nominal: [None; 3],
    };
    let costs = CostDraw::new(&ev);
    let a = bootstrap_with(&plan, &engine(), &ev, &costs, 64, &point);
    let b = bootstrap_with(&plan, &engine(), &ev, &costs, 64, &point);
    assert_eq!(a.metrics, b.metrics);
    // One thread gives the same draws as several: each draw its own generator.
    let one = |b: u32| -> Drawn {
        let mut rng = StdRng::seed_from_u64(u64::from(b));
        [Some(rng.gen::<f64>()), None, None, None]
    };
    let sorted = |threads: u32| {
        let mut v: Vec<f64> = parallel(50, threads, &one)
            .iter()
            .filter_map(|d| d[0])
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    assert_eq!(sorted(1).len(), 50);
    assert_eq!(sorted(1), sorted(3));
}
