//! Never lose a run: SIGKILL in the middle of a sweep loses at most the trial in
//! flight, and rerunning into the same output finishes the rest; SIGINT stops
//! cleanly with a partial report and no engine left behind.

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::cli::{goodput_child, goodput_run};
use common::procs::{self, Signal};
use common::profiles::fixed_sims;
use common::reports::complete_trials;
use goodput::drive::record::read_records;
use report::RunStatus;

/// Two simulators, three load levels, two trials each.
fn sweep_profile() -> String {
    fixed_sims(
        "resume-sim",
        "[slo]\nttft_ms = 500\ntpot_ms = 50\n[load]\npoints = [1, 2, 3]\nrequests_per_trial = 6\ntrials = 2\nrequest_timeout_s = 30\n",
        10,
        &["a", "b"],
    )
}

fn start(profile: &Path, out: &Path) -> Child {
    goodput_child()
        .args([
            "run",
            profile.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .env("GOODPUT_TEST_MARKER", out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Live `goodput sim` engines started by the run writing `out` (they inherit the
/// marker variable from it).
fn sim_children(out: &Path) -> Vec<u32> {
    procs::marked(&procs::marker(out))
        .into_iter()
        .filter(|p| p.cmdline().iter().any(|a| a == "sim"))
        .map(|p| p.pid as u32)
        .collect()
}

fn wait_for(cond: impl Fn() -> bool, secs: u64) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(secs) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn sigkill_mid_sweep_then_rerun_loses_at_most_the_trial_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    std::fs::write(&profile, sweep_profile()).unwrap();
    let out = dir.path().join("r.json");
    let mut child = start(&profile, &out);
    // Seven of the twelve trials are complete (the two simulators interleave).
    assert!(
        wait_for(|| complete_trials(&out) >= 7, 120),
        "seven trials never completed"
    );
    procs::signal(child.id(), Signal::SIGKILL);
    let _ = child.wait();
    let before = report::read_report(&out).unwrap();
    let kept: Vec<(String, f64, u32, u64)> = before
        .load
        .iter()
        .flat_map(|(n, e)| {
            e.points.iter().flat_map(move |p| {
                p.trials
                    .iter()
                    .filter(|t| t.status == RunStatus::Complete)
                    .map(move |t| (n.clone(), p.x, t.index, t.completed))
            })
        })
        .collect();
    assert!(kept.len() >= 7);
    // The engine of the killed run dies with its parent (parent-death signal).
    let orphans_gone = wait_for(|| sim_children(&out).is_empty(), 10);
    for pid in sim_children(&out) {
        procs::signal(pid, Signal::SIGKILL);
    }
    assert!(orphans_gone, "an engine outlived the SIGKILLed goodput");

    // Rerun into the same output: resumes.
    let o = start(&profile, &out).wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = report::read_report(&out).unwrap();
    assert_eq!(after.run.as_ref().unwrap().status, RunStatus::Complete);
    // Both engines' environments are in the resumed report.
    let env = after.environment.as_ref().unwrap();
    assert!(
        env.engines.contains_key("a") && env.engines.contains_key("b"),
        "{:?}",
        env.engines.keys()
    );
    for (name, e) in &after.load {
        assert_eq!(e.points.len(), 3, "{name}");
        for p in &e.points {
            assert_eq!(p.completed, vec![6, 6], "{name} x={}", p.x);
            assert_eq!(p.trials.len(), 2);
        }
    }
    // Trials complete before the kill were kept, not rerun: their records are the same.
    let records = read_records(&dir.path().join("r.requests.jsonl")).unwrap();
    assert_eq!(
        records.len(),
        2 * 3 * 2 * 6,
        "exactly the planned requests, no duplicates from the killed trial"
    );
    for (name, x, index, completed) in &kept {
        let p = after.load[name].points.iter().find(|p| p.x == *x).unwrap();
        let t = &p.trials[*index as usize];
        assert_eq!(t.completed, *completed);
        let old = before.load[name]
            .points
            .iter()
            .find(|p| p.x == *x)
            .unwrap()
            .trials
            .iter()
            .find(|t| t.index == *index)
            .unwrap();
        assert_eq!(
            t.duration_s, old.duration_s,
            "{name} x={x} trial {index} was not rerun"
        );
    }
}

#[test]
fn sigint_writes_a_partial_report_stops_engines_and_exits_nonzero() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    std::fs::write(
        &profile,
        sweep_profile().replace("requests_per_trial = 6", "requests_per_trial = 40"),
    )
    .unwrap();
    let out = dir.path().join("r.json");
    let child = start(&profile, &out);
    let pid = child.id();
    assert!(wait_for(|| complete_trials(&out) >= 1, 120));
    procs::signal(pid, Signal::SIGINT);
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = report::read_report(&out).unwrap();
    let run = r.run.unwrap();
    assert_eq!(run.status, RunStatus::Partial);
    assert!(run.reason.unwrap().contains("SIGINT"));
    assert!(complete_trials(&out) >= 1, "what finished is kept");
    // Every engine log's process is gone: no `goodput sim` child with this output dir.
    let logs: Vec<_> = std::fs::read_dir(goodput::sweep::logs_dir(&out))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .collect();
    assert!(!logs.is_empty());
    assert!(
        sim_children(&out).is_empty(),
        "engines stopped before goodput exited"
    );
}

#[test]
fn rerunning_into_a_complete_report_keeps_it_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    let small = sweep_profile()
        .replace("points = [1, 2, 3]", "points = [2]")
        .replace("trials = 2", "trials = 1")
        .replace("[engines.b]\nkind = \"sim\"\npreset = \"fixed\"\n", "");
    std::fs::write(&profile, small).unwrap();
    let out = dir.path().join("r.json");
    let started = |out: &Path| {
        report::read_report(out)
            .unwrap()
            .run
            .unwrap()
            .started_unix_s
            .unwrap()
    };
    assert!(start(&profile, &out).wait().unwrap().success());
    let first = started(&out);
    let before = std::fs::read(&out).unwrap();
    let o = start(&profile, &out).wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "a complete report is not overwritten"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("complete run") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        before,
        "the first run is kept byte for byte"
    );
    let o = goodput_run(&profile, &out)
        .args(["--quiet", "--force"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        started(&out) > first,
        "--force: a new run, not the old one kept"
    );
    let records = read_records(&dir.path().join("r.requests.jsonl")).unwrap();
    assert_eq!(records.len(), 6, "the new run's records only");
}
