//! Load levels not reached, KV-pool fit, client lag and outlier requests.

use super::*;

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
            metric: report::OutlierMetric::Ttft,
            trial: 0,
            index: 0,
            value_ms: 1191.0,
            median_ms: 16.0,
            score: Some(800.0),
        },
        Outlier {
            metric: report::OutlierMetric::E2el,
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

/// Outliers at a load level whose requests queued on the KV pool are those waits:
/// the advice does not ask for more warm-up there (#37: the two warnings
/// contradicted each other).
#[test]
fn outliers_where_requests_queued_on_the_kv_pool_are_not_sent_to_warm_up() {
    let mut r = clean();
    concurrency_run(&mut r, "concurrency");
    if let Some(run) = r.run.as_mut() {
        run.requests_per_trial = 50;
    }
    r.load[0].kv_pool_tokens = Some(10_000);
    let p = point(&mut r);
    p.x = 40.0;
    p.completed = vec![50, 50];
    p.mean_input_tokens = Some(stat(850.0, 2));
    p.mean_output_tokens = Some(stat(128.0, 2));
    p.achieved_concurrency = Some(stat(40.0, 2));
    p.outliers = Some(vec![Outlier {
        metric: report::OutlierMetric::Ttft,
        trial: 0,
        index: 30,
        value_ms: 1191.0,
        median_ms: 16.0,
        score: Some(800.0),
    }]);
    let ws = warnings(&r);
    assert!(
        ws.iter().any(|w| w.kind == WarningKind::KvPoolOverflow),
        "{ws:#?}"
    );
    let w = ws
        .iter()
        .find(|w| w.kind == WarningKind::Outliers)
        .expect("outliers");
    assert!(
        !w.advice.contains("warm-up requests before"),
        "{}",
        w.advice
    );
    assert!(w.advice.contains("queued"), "{}", w.advice);
}
