//! Design against drift: two engines that can be up at once (simulators, or
//! servers at a URL) run their trials interleaved in rounds, in an order drawn
//! per round from the seed; an interrupted interleaved run resumes that order;
//! launched engines, or `interleave = false`, run one after the other and the
//! report says so.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::cli::{goodput_child, Scratch};
use common::procs::{self, Signal};
use common::profiles::fixed_sims;
use common::reports::complete_trials;
use goodput::sweep::interleave::round_order;
use report::{NoticeKind, Report, RunStatus};

/// Two fixed simulators `a` and `b`, two load levels, two trials each, seed 7.
fn two_sims(extra_load: &str) -> String {
    fixed_sims(
        "drift",
        &format!(
            "[slo]\nttft_ms = 500\ntpot_ms = 50\n[load]\npoints = [1, 2]\nrequests_per_trial = 4\ntrials = 2\nwarmup_requests = 0\nseed = 7\nrequest_timeout_s = 30\n{extra_load}"
        ),
        4,
        &["a", "b"],
    )
}

/// Every complete trial as `(engine, x, trial)`, in the order the trials started.
fn by_start(r: &Report) -> Vec<(String, f64, u32)> {
    let mut t: Vec<(f64, String, f64, u32)> = r
        .load
        .iter()
        .flat_map(|(n, e)| {
            e.points.iter().flat_map(move |p| {
                p.trials
                    .iter()
                    .filter(|t| t.status == RunStatus::Complete)
                    .map(move |t| {
                        let at = t
                            .started_unix_s
                            .expect("every measured trial has its start");
                        (at, n.clone(), p.x, t.index)
                    })
            })
        })
        .collect();
    t.sort_by(|a, b| a.0.total_cmp(&b.0));
    t.into_iter().map(|(_, n, x, i)| (n, x, i)).collect()
}

/// The engines in the order their trials started.
fn engine_order(r: &Report) -> Vec<String> {
    by_start(r).into_iter().map(|(n, ..)| n).collect()
}

/// What the seeded rounds give for `a` and `b` with `trials` trials each.
fn seeded(seed: u64, trials: usize) -> Vec<String> {
    (0..trials as u32)
        .flat_map(|k| round_order(seed, k, 2))
        .map(|i| ["a", "b"][i].to_string())
        .collect()
}

/// Each engine's own trials in the plan's order: x=1 trials 0, 1, then x=2.
fn assert_own_order(r: &Report) {
    for e in ["a", "b"] {
        let own: Vec<(f64, u32)> = by_start(r)
            .into_iter()
            .filter(|(n, ..)| n == e)
            .map(|(_, x, t)| (x, t))
            .collect();
        assert_eq!(own, [(1.0, 0), (1.0, 1), (2.0, 0), (2.0, 1)], "{e}");
    }
}

fn has_sequential_notice(r: &Report) -> Option<String> {
    r.run
        .as_ref()?
        .notices
        .iter()
        .find(|n| n.kind == NoticeKind::Sequential)
        .map(|n| n.text.clone())
}

#[test]
fn two_simulators_interleave_in_the_seeded_order_and_the_same_seed_repeats_it() {
    let mut orders = Vec::new();
    for _ in 0..2 {
        let dir = Scratch::new();
        dir.run(&two_sims(""), &["--quiet"]).assert().success();
        let r = dir.report();
        let run = r.run.as_ref().unwrap();
        assert_eq!(run.interleaved, Some(true));
        assert_eq!(has_sequential_notice(&r), None);
        let order = engine_order(&r);
        assert_eq!(order, seeded(7, 4), "rounds in the order drawn from seed 7");
        assert_own_order(&r);
        // The requests file holds the trials in the order they ran, too.
        let records = goodput::drive::record::read_records(&dir.path("r.requests.jsonl")).unwrap();
        let mut in_file: Vec<String> = records.iter().map(|r| r.engine.clone()).collect();
        in_file.dedup();
        let mut want = order.clone();
        want.dedup();
        assert_eq!(in_file, want);
        orders.push(order);
    }
    assert_eq!(orders[0], orders[1], "the same seed, the same order");
}

#[test]
fn interleave_false_keeps_one_engine_after_the_other_and_says_so() {
    let dir = Scratch::new();
    dir.run(&two_sims("interleave = false\n"), &["--quiet"])
        .assert()
        .success();
    let r = dir.report();
    assert_eq!(r.run.as_ref().unwrap().interleaved, Some(false));
    let order = engine_order(&r);
    assert_eq!(order, ["a", "a", "a", "a", "b", "b", "b", "b"]);
    assert_own_order(&r);
    let n = has_sequential_notice(&r).expect("a notice says the engines ran in turn");
    assert!(n.contains("interleave = false"), "{n}");
    assert!(n.contains("confounded"), "{n}");
}

#[test]
fn launched_engines_run_one_after_the_other_with_the_notice_unless_forced() {
    let bin = env!("CARGO_BIN_EXE_goodput");
    let mut p = two_sims("").replace("kind = \"sim\"\npreset = \"fixed\"\n", "");
    for e in ["a", "b"] {
        p = p.replace(
            &format!("[engines.{e}]\n"),
            &format!(
                "[engines.{e}]\ncommand = [\"{bin}\", \"sim\", \"--preset\", \"fixed\", \"--port\", \"{{port}}\"]\nport = \"auto\"\nready_timeout_s = 30\n"
            ),
        );
    }
    let dir = Scratch::new();
    dir.run(&p, &["--quiet"]).assert().success();
    let r = dir.report();
    assert_eq!(r.run.as_ref().unwrap().interleaved, Some(false));
    assert_eq!(engine_order(&r), ["a", "a", "a", "a", "b", "b", "b", "b"]);
    let n = has_sequential_notice(&r).expect("a notice says the engines ran in turn");
    assert!(n.contains("a, b launched by goodput"), "{n}");
    assert!(n.contains("--interleave"), "{n}");
    // `--interleave` forces them up together, in the seeded rounds.
    let dir = Scratch::new();
    dir.run(&p, &["--quiet", "--interleave"]).assert().success();
    let r = dir.report();
    assert_eq!(r.run.as_ref().unwrap().interleaved, Some(true));
    assert_eq!(engine_order(&r), seeded(7, 4));
    assert_eq!(has_sequential_notice(&r), None);
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

fn start(profile: &Path, out: &Path) -> std::process::Child {
    goodput_child()
        .args([
            "run",
            profile.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn an_interrupted_interleaved_run_resumes_the_same_order_to_the_same_trials() {
    let dir = Scratch::new();
    // Longer trials, so that the kill lands inside one.
    let profile = dir.write(
        "p.toml",
        &two_sims("").replace("requests_per_trial = 4", "requests_per_trial = 10"),
    );
    let out = dir.path("r.json");
    let mut child = start(&profile, &out);
    assert!(
        wait_for(|| complete_trials(&out) >= 3, 120),
        "three trials never completed"
    );
    procs::signal(child.id(), Signal::SIGKILL);
    let _ = child.wait();
    let before = report::read_report(&out).unwrap();
    let kept = by_start(&before);
    assert!((3..8).contains(&kept.len()), "{kept:?}");
    // What was kept is the start of the seeded order.
    let whole = seeded(7, 4);
    let kept_engines: Vec<String> = kept.iter().map(|(n, ..)| n.clone()).collect();
    assert_eq!(kept_engines, whole[..kept.len()]);

    let o = start(&profile, &out).wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = report::read_report(&out).unwrap();
    assert_eq!(after.run.as_ref().unwrap().status, RunStatus::Complete);
    assert_eq!(after.run.as_ref().unwrap().interleaved, Some(true));
    // The same final set of trials, in the order an uninterrupted run takes.
    assert_eq!(engine_order(&after), whole);
    assert_own_order(&after);
    assert_eq!(
        &by_start(&after)[..kept.len()],
        &kept[..],
        "kept, not rerun"
    );
    let records = goodput::drive::record::read_records(&dir.path("r.requests.jsonl")).unwrap();
    assert_eq!(
        records.len(),
        2 * 2 * 2 * 10,
        "no duplicate of the killed trial"
    );
}

#[test]
fn a_search_over_two_simulators_interleaves_each_engines_own_probes() {
    let dir = Scratch::new();
    let cfg = common::search::write_three_slots(dir.dir(), "sim.toml");
    let engines = common::search::sim_engines(&["a", "b"], &cfg);
    let p = dir.write(
        "p.toml",
        &common::search::profile(
            "search-two",
            "[1]",
            "[search]\nmin = 1\nmax = 8\n",
            &engines,
        ),
    );
    let out = dir.path("s.json");
    let o = common::cli::goodput()
        .args([
            "search",
            &p.display().to_string(),
            "-o",
            &out.display().to_string(),
            "--quiet",
        ])
        .output()
        .unwrap();
    common::cli::succeeded(&o, "goodput search");
    let r = report::read_report(&out).unwrap();
    assert_eq!(r.run.as_ref().unwrap().interleaved, Some(true));
    // Each engine's own search, as one engine alone finds it: the knee at 3.
    for e in ["a", "b"] {
        let c = &r.capacity[e];
        assert_eq!((c.passing, c.failing), (Some(3.0), Some(4.0)), "{e}: {c:?}");
    }
    // The same engines probe the same levels: their trials go in the seeded rounds
    // (seed 0), each engine's probes in its own search's order.
    let trials = r.capacity["a"].trials as usize;
    assert_eq!(r.capacity["b"].trials as usize, trials);
    assert_eq!(engine_order(&r), seeded(0, trials));
    let probes = |e: &str| -> Vec<f64> {
        by_start(&r)
            .into_iter()
            .filter(|(n, ..)| n == e)
            .map(|(_, x, _)| x)
            .collect()
    };
    assert_eq!(probes("a"), probes("b"));
}
