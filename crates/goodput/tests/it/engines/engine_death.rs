//! An engine that dies in the middle of a trial: the trial is recorded as failed
//! with the exit status and log tail, what was measured is kept, the engine is not
//! restarted unless the profile allows it (and then the restart is recorded), and
//! the next engine still runs.

use crate::common;

use common::cli::Scratch;

fn profile(max_restarts: u32) -> String {
    let bin = env!("CARGO_BIN_EXE_goodput");
    format!(
        r#"
name = "death"
[slo]
ttft_ms = 500
tpot_ms = 50
[load]
points = [1]
requests_per_trial = 30
trials = 1
request_timeout_s = 30
stall_timeout_s = 5
[workload]
input_tokens = 16
output_tokens = 12
[engines.dies]
shell = "{bin} sim --preset fixed --port {{port}} & sleep 2.5; kill -9 $!; exit 9"
port = "auto"
ready_timeout_s = 30
max_restarts = {max_restarts}
[engines.healthy]
kind = "sim"
preset = "fixed"
"#
    )
}

/// Runs the profile; exits 3 (trials failed) in both cases.
fn run(max_restarts: u32) -> (report::Report, Scratch) {
    let dir = Scratch::new();
    dir.run(&profile(max_restarts), &["--quiet"])
        .assert()
        .code(3);
    let r = dir.report();
    (r, dir)
}

#[test]
fn death_mid_trial_is_recorded_and_the_next_engine_runs() {
    let (r, dir) = run(0);
    let dies = &r.load["dies"];
    let err = dies.error.as_ref().expect("engine failure recorded");
    assert_eq!(err.kind, report::FailureKind::DiedDuringTrial);
    assert!(
        err.exit_status.as_deref().unwrap_or("").contains('9'),
        "{err:?}"
    );
    assert!(dies.restarts.is_empty(), "not restarted silently");
    let p = &dies.points[0];
    assert_eq!(p.status, Some(report::RunStatus::Partial));
    assert_eq!(p.trials[0].status, report::RunStatus::Partial);
    assert!(p.trials[0].error.as_deref().unwrap().contains("exited"));
    assert!(
        p.completed.is_empty(),
        "the partial trial does not count as a trial"
    );
    // What was measured before the death is kept in the requests file.
    let recs = goodput::drive::record::read_records(&dir.path("r.requests.jsonl")).unwrap();
    assert!(
        recs.iter().any(|r| r.engine == "dies" && r.ok()),
        "some requests finished before the death"
    );
    assert!(
        recs.iter().any(|r| r.engine == "dies" && !r.ok()),
        "the in-flight ones failed"
    );
    // The next engine still ran.
    assert_eq!(r.load["healthy"].points[0].completed, vec![30]);
}

#[test]
fn an_allowed_restart_is_recorded() {
    let (r, _dir) = run(1);
    let dies = &r.load["dies"];
    assert_eq!(dies.restarts.len(), 1, "one restart, recorded");
    assert_eq!(dies.restarts[0].kind, report::FailureKind::DiedDuringTrial);
    // The restarted engine died again: no restarts left.
    assert!(dies.error.is_some());
    assert_eq!(r.load["healthy"].points[0].completed, vec![30]);
}

/// A server goodput did not launch (`url`) that is killed mid-run: the trial is
/// kept as partial, the engine is recorded as gone (not "run complete"), the next
/// load level is not sent into a dead server, and the run exits 3.
#[test]
fn a_url_server_killed_mid_run_is_an_engine_failure_and_exit_3() {
    let sim = common::load_share::start_sim();
    let dir = Scratch::new();
    let profile = format!(
        r#"
name = "gone"
[slo]
ttft_ms = 500
[load]
points = [1, 2]
requests_per_trial = 10
trials = 3
request_timeout_s = 30
stall_timeout_s = 5
[workload]
input_tokens = 16
output_tokens = 12
[engines.remote]
url = "{}"
"#,
        sim.url
    );
    // The server is killed (by its id, when `sim` drops) once the first trial is
    // kept (its 10 records written), a little into the second.
    let records = dir.path("r.requests.jsonl");
    let killer = std::thread::spawn(move || {
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_secs(120) {
            let lines = std::fs::read_to_string(&records).map_or(0, |t| t.lines().count());
            if lines >= 10 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(600));
        drop(sim);
    });
    let out = dir.run(&profile, &["--quiet"]).output().unwrap();
    killer.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        common::cli::text(&out.stderr)
    );
    let r = dir.report();
    let remote = &r.load["remote"];
    let err = remote
        .error
        .as_ref()
        .expect("the engine's failure is recorded");
    assert_eq!(err.kind, report::FailureKind::DiedDuringTrial);
    assert!(err.message.contains("stopped answering"), "{err:?}");
    assert!(err.message.contains("refuses connections"), "{err:?}");
    let p = &remote.points[0];
    assert_eq!(p.trials[0].status, report::RunStatus::Complete);
    let last = p.trials.last().unwrap();
    assert_eq!(last.status, report::RunStatus::Partial);
    assert!(
        last.error.as_deref().unwrap().contains("went away"),
        "{:?}",
        last.error
    );
    assert_eq!(remote.points.len(), 1, "x=2 is not sent into a dead server");
    let recs = goodput::drive::record::read_records(&dir.path("r.requests.jsonl")).unwrap();
    assert!(recs.iter().any(|r| r.ok()), "what finished before is kept");
    assert!(recs.iter().any(|r| !r.ok()), "the rest failed");
}
