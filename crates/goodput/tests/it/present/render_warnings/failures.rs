//! Failed requests, zero goodput, failed engines and interrupted runs.

use super::*;

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
fn failed_engine_fires_with_kind_message_and_exit_status() {
    let mut r = clean();
    r.load[0].error = Some(EngineFailure {
        kind: report::FailureKind::Exited,
        message: "engine exited during startup".into(),
        exit_status: Some("exit status: 1".into()),
        log_tail: vec!["ValueError: bad flag".into(), String::new()],
        cause: Vec::new(),
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
        kind: report::FailureKind::NotRun,
        message: "not run: the run was interrupted by SIGINT before this engine started".into(),
        ..Default::default()
    });
    r.load.insert("later".into(), later);
    let mut remote = r.load["later"].clone();
    remote.error = Some(EngineFailure {
        kind: report::FailureKind::Unreachable,
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
