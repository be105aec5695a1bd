//! Throttled GPUs, too few requests for a p99, missing trials.

use super::*;

#[test]
fn thermal_share_above_five_percent_fires() {
    let mut r = clean();
    point(&mut r).gpu.as_mut().expect("gpu").thermal_share = Some(0.06);
    let w = only(&r, WarningKind::ThermalThrottle);
    assert!(w.message.contains("6% of GPU samples"), "{}", w.message);
    assert!(!w.advice.is_empty());
    point(&mut r).gpu.as_mut().expect("gpu").thermal_share = Some(0.05);
    assert!(!kinds(&r).contains(&WarningKind::ThermalThrottle));
}

#[test]
fn low_clock_against_known_maximum_fires() {
    let mut r = clean();
    let g = point(&mut r).gpu.as_mut().expect("gpu");
    g.median_sm_mhz = stat(1300.0, 2);
    assert!(
        !kinds(&r).contains(&WarningKind::ThermalThrottle),
        "no maximum known: no judgement"
    );
    point(&mut r).gpu.as_mut().expect("gpu").max_sm_clock_mhz = Some(1980.0);
    let w = only(&r, WarningKind::ThermalThrottle);
    assert!(
        w.message.contains("66% of its 1980 MHz maximum"),
        "{}",
        w.message
    );
    point(&mut r).gpu.as_mut().expect("gpu").median_sm_mhz = stat(1900.0, 2);
    assert!(!kinds(&r).contains(&WarningKind::ThermalThrottle));
}

#[test]
fn low_clock_against_environment_maximum_fires() {
    let mut r = clean();
    point(&mut r).gpu.as_mut().expect("gpu").median_sm_mhz = stat(900.0, 2);
    r.environment = Some(report::Environment {
        gpus: vec![report::GpuInfo {
            index: 0,
            max_sm_clock_mhz: Some(2040.0),
            ..Default::default()
        }],
        ..Default::default()
    });
    only(&r, WarningKind::ThermalThrottle);
}

/// The simulator's GPU throttles by its thermal model: the advice says how to turn
/// the model off, never to fix the cooling of a GPU that does not exist (#37).
#[test]
fn a_throttled_simulated_gpu_gets_no_hardware_advice() {
    let mut r = clean();
    point(&mut r).gpu.as_mut().expect("gpu").thermal_share = Some(0.5);
    assert!(only(&r, WarningKind::ThermalThrottle)
        .advice
        .contains("cooling"));
    r.environment = Some(report::Environment {
        gpus: vec![report::GpuInfo {
            index: 0,
            name: Some("goodput-sim GPU".into()),
            driver: Some("goodput-sim".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    let w = only(&r, WarningKind::ThermalThrottle);
    assert!(!w.advice.contains("cooling"), "{}", w.advice);
    assert!(w.advice.contains("--no-thermal"), "{}", w.advice);
    let v = goodput::render::verdict::verdict_text(&r);
    assert!(!v.contains("cool"), "{v}");
    assert!(v.contains("--no-thermal"), "{v}");
}

#[test]
fn p99_from_fewer_than_100_requests_fires() {
    let mut r = clean();
    point(&mut r).completed = vec![99, 200];
    let w = only(&r, WarningKind::FewRequestsForP99);
    assert!(w.message.contains("99-200 requests"), "{}", w.message);
    point(&mut r).completed = vec![100, 100];
    assert!(!kinds(&r).contains(&WarningKind::FewRequestsForP99));
}

#[test]
fn trials_below_plan_fire() {
    let mut r = clean();
    point(&mut r).planned_trials = Some(3);
    let w = only(&r, WarningKind::MissingTrials);
    assert!(w.message.contains("2 of 3 trials"), "{}", w.message);
    point(&mut r).planned_trials = Some(2);
    assert!(!kinds(&r).contains(&WarningKind::MissingTrials));
}

#[test]
fn trials_below_run_plan_fire_with_the_trial_error() {
    let mut r = clean();
    concurrency_run(&mut r, "concurrency");
    if let Some(run) = r.run.as_mut() {
        run.planned_trials = 3;
    }
    point(&mut r).trials = vec![TrialInfo {
        index: 2,
        status: RunStatus::Partial,
        error: Some("engine died".into()),
        ..Default::default()
    }];
    let w = only(&r, WarningKind::MissingTrials);
    assert!(w.message.contains("trial 3: engine died"), "{}", w.message);
}

#[test]
fn fewer_trials_than_other_points_fire_without_a_plan() {
    let mut r = clean();
    let mut second = r.load[0].points[0].clone();
    second.x = 2.0;
    second.completed = vec![200];
    second.output_throughput = stat(64.0, 1);
    r.load[0].points.push(second);
    let w = only(&r, WarningKind::MissingTrials);
    assert_eq!(w.x, Some(2.0));
    assert!(w.message.contains("1 of 2 trials"), "{}", w.message);
}

#[test]
fn estimated_token_counts_fire() {
    let mut r = clean();
    point(&mut r).estimated_tokens = Some(12);
    let w = only(&r, WarningKind::EstimatedTokens);
    assert!(w.message.contains("12 requests"), "{}", w.message);
    point(&mut r).estimated_tokens = Some(0);
    assert!(!kinds(&r).contains(&WarningKind::EstimatedTokens));
}
