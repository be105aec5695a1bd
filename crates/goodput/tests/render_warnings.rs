//! Each warning rule: when it fires and when it does not.

use goodput::render::warnings::{warnings, Warning, WarningKind};
use goodput::render::warnings_text;
use goodput::report::{self, EngineFailure, Outlier, Report, RunInfo, RunStatus, Stat, TrialInfo};

const REFERENCE: &str = include_str!("../../../tests/data/l4-gpu1-vllm.json");

fn reference() -> Report {
    report::io::parse_report(REFERENCE).expect("reference parses")
}

fn stat(v: f64, n: u32) -> Stat {
    Stat {
        median: Some(v),
        min: Some(v),
        max: Some(v),
        n,
    }
}

/// One engine, one point at x=1, that triggers no rule: 200 requests in each of two
/// trials, within the SLO, a cool GPU, some good requests.
fn clean() -> Report {
    let mut r = reference();
    r.load.truncate(1);
    let e = &mut r.load[0];
    e.points.truncate(1);
    let p = &mut e.points[0];
    p.completed = vec![200, 200];
    p.median_ttft_ms = stat(400.0, 2);
    p.median_tpot_ms = stat(40.0, 2);
    p.goodput_rps = stat(0.5, 2);
    p.request_throughput = stat(0.5, 2);
    p.output_throughput = stat(64.0, 2);
    if let Some(g) = p.gpu.as_mut() {
        g.thermal_share = Some(0.0);
        g.median_sm_mhz = stat(1900.0, 2);
    }
    r
}

fn point(r: &mut Report) -> &mut report::Point {
    &mut r.load[0].points[0]
}

fn kinds(r: &Report) -> Vec<WarningKind> {
    warnings(r).into_iter().map(|w| w.kind).collect()
}

fn only(r: &Report, kind: WarningKind) -> Warning {
    let ws: Vec<Warning> = warnings(r).into_iter().filter(|w| w.kind == kind).collect();
    assert_eq!(ws.len(), 1, "expected one {kind:?}: {ws:#?}");
    ws.into_iter().next().expect("one warning")
}

fn concurrency_run(r: &mut Report, mode: &str) {
    r.run = Some(RunInfo {
        schema: report::SCHEMA.into(),
        load_mode: mode.into(),
        planned_trials: 2,
        requests_per_trial: 200,
        ..Default::default()
    });
}

#[test]
fn clean_report_has_no_warnings() {
    let r = clean();
    assert_eq!(kinds(&r), vec![]);
    assert_eq!(warnings_text(&r, true), "No warnings.\n");
}

#[test]
fn reference_gets_the_warnings_its_readme_asks_for() {
    let r = reference();
    let ws = warnings(&r);
    let count = |k| ws.iter().filter(|w| w.kind == k).count();
    assert_eq!(
        count(WarningKind::ThermalThrottle),
        6,
        "every point is throttled"
    );
    assert_eq!(
        count(WarningKind::FewRequestsForP99),
        6,
        "16 requests per trial"
    );
    assert_eq!(count(WarningKind::GoodputZero), 6);
    assert_eq!(count(WarningKind::MissingTrials), 1);
    assert_eq!(
        count(WarningKind::KvPoolOverflow),
        0,
        "prompt lengths unknown"
    );
    assert_eq!(
        count(WarningKind::Outliers),
        0,
        "the slowest request is at most 2x the median"
    );
    assert_eq!(count(WarningKind::LoadNotReached), 0, "16 requests, x <= 4");
    let missing = only(&r, WarningKind::MissingTrials);
    assert_eq!(
        (missing.engine.as_str(), missing.x),
        ("vllm-no-async", Some(4.0))
    );
    assert!(
        missing.message.contains("1 of 2 trials"),
        "{}",
        missing.message
    );
    let zero = ws
        .iter()
        .find(|w| w.kind == WarningKind::GoodputZero)
        .expect("goodput zero");
    assert!(
        zero.message
            .contains("median TTFT 1437.2 ms is 1.44x the 1000 ms SLO"),
        "{}",
        zero.message
    );
    let text = warnings_text(&r, false);
    assert!(text.contains("GPU thermally throttled"));
    assert!(text.contains("vllm-fast-b x=1, 4: p99 TTFT and TPOT come from 16 requests"));
}

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
fn failed_requests_fire_with_their_kinds() {
    let mut r = clean();
    let p = point(&mut r);
    p.failed = Some(vec![2, 1]);
    p.errors.insert("timeout".into(), 2);
    p.errors.insert("http_500".into(), 1);
    let w = only(&r, WarningKind::FailedRequests);
    assert!(
        w.message
            .contains("3 of 403 requests failed (timeout: 2, http_500: 1)"),
        "{}",
        w.message
    );
    let p = point(&mut r);
    p.failed = Some(vec![0, 0]);
    p.errors.clear();
    assert!(!kinds(&r).contains(&WarningKind::FailedRequests));
}

#[test]
fn zero_good_requests_say_which_slo_was_missed() {
    let mut r = clean();
    let p = point(&mut r);
    p.good = Some(vec![0, 0]);
    p.median_tpot_ms = stat(250.0, 2);
    let w = only(&r, WarningKind::GoodputZero);
    assert!(
        w.message
            .contains("median TPOT 250 ms is 2.50x the 100 ms SLO"),
        "{}",
        w.message
    );
    assert!(!w.message.contains("TTFT"), "TTFT met: {}", w.message);
    point(&mut r).good = Some(vec![0, 1]);
    assert!(!kinds(&r).contains(&WarningKind::GoodputZero));
}

#[test]
fn zero_goodput_with_medians_inside_the_slo_points_at_the_tail() {
    let mut r = clean();
    point(&mut r).good = Some(vec![0, 0]);
    let w = only(&r, WarningKind::GoodputZero);
    assert!(w.message.contains("medians meet the SLO"), "{}", w.message);
}

/// Every request failed: 16 per trial, all HTTP 500.
fn all_failed() -> Report {
    let mut r = clean();
    concurrency_run(&mut r, "concurrency");
    let p = point(&mut r);
    p.completed = vec![0, 0];
    p.failed = Some(vec![16, 16]);
    p.good = Some(vec![0, 0]);
    p.errors.insert("http_500".into(), 32);
    p.first_error = Some("http_500: Internal Server Error: model not loaded".into());
    for s in [
        &mut p.median_ttft_ms,
        &mut p.median_tpot_ms,
        &mut p.p99_ttft_ms,
        &mut p.p99_tpot_ms,
    ] {
        *s = Stat::default();
    }
    p.goodput_rps = stat(0.0, 2);
    r
}

#[test]
fn every_request_failing_says_so_with_the_first_error() {
    let r = all_failed();
    assert_eq!(kinds(&r), vec![WarningKind::NoRequestSucceeded]);
    let w = only(&r, WarningKind::NoRequestSucceeded);
    assert!(
        w.message.contains(
            "no request succeeded: all 32 requests failed (http_500: 32); first error: \
             http_500: Internal Server Error: model not loaded"
        ),
        "{}",
        w.message
    );
    let text = warnings_text(&r, false);
    assert!(!text.contains("medians meet the SLO"), "{text}");
    assert!(!text.contains("Lower the load"), "{text}");
}

#[test]
fn every_request_stalling_without_a_recorded_detail_names_the_kind() {
    let mut r = all_failed();
    let p = point(&mut r);
    p.errors.clear();
    p.errors.insert("stall".into(), 32);
    p.first_error = None;
    let w = only(&r, WarningKind::NoRequestSucceeded);
    assert!(
        w.message.ends_with("all 32 requests failed (stall: 32)"),
        "{}",
        w.message
    );
}

#[test]
fn failed_requests_carry_the_first_error() {
    let mut r = clean();
    let p = point(&mut r);
    p.failed = Some(vec![1, 0]);
    p.errors.insert("http_503".into(), 1);
    p.first_error = Some("http_503: overloaded".into());
    let w = only(&r, WarningKind::FailedRequests);
    assert!(
        w.message
            .ends_with("(http_503: 1); first error: http_503: overloaded"),
        "{}",
        w.message
    );
}

#[test]
fn concurrency_above_the_requests_per_trial_is_not_reached() {
    let mut r = clean();
    concurrency_run(&mut r, "concurrency");
    if let Some(run) = r.run.as_mut() {
        run.requests_per_trial = 2;
    }
    let p = point(&mut r);
    p.x = 4.0;
    p.completed = vec![2, 2];
    p.achieved_concurrency = Some(stat(1.5, 2));
    let w = only(&r, WarningKind::LoadNotReached);
    assert_eq!(
        w.message,
        "x=4 with 2 requests per trial: at most 2 were ever in flight; 1.5 in flight on \
         average, 38% of x"
    );
    // without the achieved concurrency (an older report) the plan still says it
    point(&mut r).achieved_concurrency = None;
    let w = only(&r, WarningKind::LoadNotReached);
    assert!(w.message.contains("at most 2 were ever"), "{}", w.message);
    // a reached load is quiet
    if let Some(run) = r.run.as_mut() {
        run.requests_per_trial = 200;
    }
    point(&mut r).achieved_concurrency = Some(stat(3.6, 2));
    assert!(!kinds(&r).contains(&WarningKind::LoadNotReached));
}

#[test]
fn a_mean_in_flight_below_half_of_x_is_not_reached() {
    let mut r = clean();
    concurrency_run(&mut r, "concurrency");
    let p = point(&mut r);
    p.x = 8.0;
    p.achieved_concurrency = Some(stat(3.0, 2));
    let w = only(&r, WarningKind::LoadNotReached);
    assert!(
        w.message.contains("3 in flight on average, 38% of x"),
        "{}",
        w.message
    );
    concurrency_run(&mut r, "rate");
    assert!(!kinds(&r).contains(&WarningKind::LoadNotReached));
}

#[test]
fn the_kv_pool_check_uses_the_concurrency_reached() {
    // --concurrency 100000 --requests 50: 40 in flight on average, not 100000
    let mut r = clean();
    concurrency_run(&mut r, "concurrency");
    if let Some(run) = r.run.as_mut() {
        run.requests_per_trial = 50;
    }
    r.load[0].kv_pool_tokens = Some(100_000);
    let p = point(&mut r);
    p.x = 100_000.0;
    p.completed = vec![50, 50];
    p.mean_input_tokens = Some(stat(850.0, 2));
    p.mean_output_tokens = Some(stat(128.0, 2));
    p.achieved_concurrency = Some(stat(40.0, 2));
    assert!(
        !kinds(&r).contains(&WarningKind::KvPoolOverflow),
        "{:#?}",
        warnings(&r)
    );
    only(&r, WarningKind::LoadNotReached);
    r.load[0].kv_pool_tokens = Some(10_000);
    let w = only(&r, WarningKind::KvPoolOverflow);
    assert!(
        w.message.starts_with(
            "40 requests in flight on average (x=100000) x 978 tokens each \
             (850 prompt + 128 output) = 39120 tokens"
        ),
        "{}",
        w.message
    );
    // without the achieved value, the requests per trial bound it
    point(&mut r).achieved_concurrency = None;
    let w = only(&r, WarningKind::KvPoolOverflow);
    assert!(
        w.message
            .starts_with("at most 50 requests in flight (x=100000) x 978 tokens"),
        "{}",
        w.message
    );
}

#[test]
fn a_slow_first_request_is_an_outlier_with_warm_up_advice() {
    let mut r = clean();
    point(&mut r).outliers = Some(vec![
        Outlier {
            metric: "ttft".into(),
            trial: 0,
            index: 0,
            value_ms: 1191.0,
            median_ms: 16.0,
            score: Some(800.0),
        },
        Outlier {
            metric: "e2el".into(),
            trial: 0,
            index: 0,
            value_ms: 1300.0,
            median_ms: 130.0,
            score: Some(400.0),
        },
    ]);
    let w = only(&r, WarningKind::Outliers);
    assert_eq!(
        w.message,
        "request 1 of trial 1, the first of its trial: TTFT 1191 ms, 74.4x the median 16 ms"
    );
    assert!(w.advice.contains("warmup_requests"), "{}", w.advice);
    point(&mut r).outliers = Some(vec![]);
    assert!(!kinds(&r).contains(&WarningKind::Outliers));
}

#[test]
fn an_outlier_is_found_in_the_grid_of_a_report_without_the_list() {
    let mut r = clean();
    let p = point(&mut r);
    p.outliers = None;
    let mut grid: Vec<f64> = (0..50).map(|i| 15.0 + f64::from(i % 3)).collect();
    grid.push(1191.0);
    p.ttft_quantiles_ms = grid;
    let w = only(&r, WarningKind::Outliers);
    assert!(
        w.message
            .starts_with("the slowest request (which one is not recorded): TTFT 1191 ms"),
        "{}",
        w.message
    );
}

#[test]
fn load_beyond_the_kv_pool_fires_in_concurrency_mode() {
    let mut r = clean();
    concurrency_run(&mut r, "concurrency");
    let p = point(&mut r);
    p.x = 4.0;
    p.mean_input_tokens = Some(stat(850.0, 2));
    p.mean_output_tokens = Some(stat(128.0, 2));
    let w = only(&r, WarningKind::KvPoolOverflow);
    assert!(
        w.message
            .contains("4 requests in flight x 978 tokens each (850 prompt + 128 output)"),
        "{}",
        w.message
    );
    assert!(w.message.contains("about 2 fit at once"), "{}", w.message);
    concurrency_run(&mut r, "rate");
    assert!(!kinds(&r).contains(&WarningKind::KvPoolOverflow));
    concurrency_run(&mut r, "concurrency");
    point(&mut r).x = 2.0;
    assert!(!kinds(&r).contains(&WarningKind::KvPoolOverflow));
}

#[test]
fn kv_pool_check_falls_back_to_output_length_only() {
    let mut r = clean();
    r.load[0].kv_pool_tokens = Some(100);
    // 64 tok/s / 0.5 req/s = 128 output tokens per request, prompt unknown.
    let w = only(&r, WarningKind::KvPoolOverflow);
    assert!(
        w.message.contains("at least 128 output tokens"),
        "{}",
        w.message
    );
}

#[test]
fn client_behind_its_schedule_fires() {
    let mut r = clean();
    let p = point(&mut r);
    p.offered_rate = Some(10.0);
    p.scheduled_rate = Some(stat(10.0, 2));
    p.achieved_rate = Some(stat(8.9, 2));
    let w = only(&r, WarningKind::ClientLag);
    assert!(
        w.message
            .contains("8.9 req/s of the 10 req/s its schedule asked for"),
        "{}",
        w.message
    );
    point(&mut r).achieved_rate = Some(stat(9.5, 2));
    assert!(!kinds(&r).contains(&WarningKind::ClientLag));
}

#[test]
fn a_short_poisson_draw_below_the_nominal_rate_is_not_client_lag() {
    // the case: 20 req/s nominal, the draw scheduled 17.1 req/s, the client
    // sent all of them on time (0.15 ms p99 lag)
    let mut r = clean();
    concurrency_run(&mut r, "rate");
    let p = point(&mut r);
    p.x = 20.0;
    p.offered_rate = Some(20.0);
    p.scheduled_rate = Some(stat(17.1, 2));
    p.achieved_rate = Some(stat(17.1, 2));
    p.p99_send_lag_ms = Some(stat(0.15, 2));
    assert!(
        !kinds(&r).contains(&WarningKind::ClientLag),
        "{:#?}",
        warnings(&r)
    );
    // without a recorded schedule the nominal rate proves nothing either
    point(&mut r).scheduled_rate = None;
    assert!(!kinds(&r).contains(&WarningKind::ClientLag));
}

#[test]
fn send_lag_above_10_ms_fires() {
    let mut r = clean();
    point(&mut r).p99_send_lag_ms = Some(stat(10.5, 2));
    only(&r, WarningKind::ClientLag);
    point(&mut r).p99_send_lag_ms = Some(stat(9.0, 2));
    assert!(!kinds(&r).contains(&WarningKind::ClientLag));
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

#[test]
fn failed_engine_fires_with_kind_message_and_exit_status() {
    let mut r = clean();
    r.load[0].error = Some(EngineFailure {
        kind: "exited".into(),
        message: "engine exited during startup".into(),
        exit_status: Some("exit status: 1".into()),
        log_tail: vec!["ValueError: bad flag".into(), String::new()],
    });
    let w = only(&r, WarningKind::EngineFailed);
    assert_eq!(w.x, None);
    for part in [
        "engine exited during startup",
        "(exited)",
        "exit status: 1",
        "ValueError: bad flag",
    ] {
        assert!(w.message.contains(part), "{part}: {}", w.message);
    }
    let text = warnings_text(&r, true);
    assert!(text.contains("\x1b[33m! Engine failed\x1b[0m"), "{text}");
}

#[test]
fn warnings_name_engine_and_load_level_in_text() {
    let mut r = clean();
    point(&mut r).estimated_tokens = Some(3);
    let text = warnings_text(&r, false);
    assert!(text.starts_with("Warnings (1)\n"), "{text}");
    assert!(
        text.contains("    vllm-fast-b x=1: output tokens of 3 requests"),
        "{text}"
    );
    assert!(
        text.contains("    -> Make the server report usage"),
        "{text}"
    );
}

/// An interrupted run's report as Ctrl-C leaves it: the one trial partial with one
/// request done, an engine never started, a URL engine that was not reachable.
fn interrupted() -> Report {
    let mut r = clean();
    concurrency_run(&mut r, "concurrency");
    if let Some(run) = r.run.as_mut() {
        run.planned_trials = 1;
        run.status = RunStatus::Partial;
        run.reason = Some("interrupted by SIGINT".into());
    }
    let e = &mut r.load[0];
    let p = &mut e.points[0];
    p.completed = Vec::new();
    p.planned_trials = Some(1);
    p.status = Some(RunStatus::Partial);
    p.trials = vec![TrialInfo {
        index: 0,
        status: RunStatus::Partial,
        completed: 1,
        error: Some("interrupted".into()),
        ..Default::default()
    }];
    let mut later = r.load[0].clone();
    later.points.clear();
    later.error = Some(EngineFailure {
        kind: "not_run".into(),
        message: "not run: the run was interrupted by SIGINT before this engine started".into(),
        ..Default::default()
    });
    r.load.insert("later".into(), later);
    let mut remote = r.load["later"].clone();
    remote.error = Some(EngineFailure {
        kind: "unreachable".into(),
        message: "GET http://127.0.0.1:9/v1/models: connection refused".into(),
        ..Default::default()
    });
    r.load.insert("remote".into(), remote);
    r
}

#[test]
fn an_interrupted_run_is_told_as_one_and_does_not_contradict_its_table() {
    let r = interrupted();
    let ks = kinds(&r);
    // The interrupted trial's one request is in no percentile: no p99 warning.
    assert!(!ks.contains(&WarningKind::FewRequestsForP99), "{ks:?}");
    let missing = only(&r, WarningKind::MissingTrials);
    assert!(missing.advice.contains("interrupted"), "{}", missing.advice);
    assert!(
        !missing.advice.contains("out of memory"),
        "{}",
        missing.advice
    );
    let failed: Vec<Warning> = warnings(&r)
        .into_iter()
        .filter(|w| w.kind == WarningKind::EngineFailed)
        .collect();
    let later = failed
        .iter()
        .find(|w| w.engine == "later")
        .expect("not-run engine listed");
    assert!(
        later.advice.contains("rerun into the same output"),
        "{}",
        later.advice
    );
    let remote = failed
        .iter()
        .find(|w| w.engine == "remote")
        .expect("url engine listed");
    assert!(
        !remote.advice.contains("log") && !remote.advice.contains("GPU"),
        "a server goodput did not launch has no log or GPU of ours: {}",
        remote.advice
    );
    assert!(remote.advice.contains("reachable"), "{}", remote.advice);
}
