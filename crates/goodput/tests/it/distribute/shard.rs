//! A sweep split into shards (`run --shard I/N`) and merged (`goodput merge`) reads
//! like the same sweep run on one machine: same engines, levels, trials, requests
//! and fingerprints; `show`, `compare`, the HTML page and the verdict work on it.
//! A partial merge warns and names what is missing; shards of another plan, a
//! slice given twice and reports that are no shards are refused.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::cli::goodput_output;
use common::profiles::fixed_sims;
use report::{Report, RunStatus};
use serde_json::Value;

/// Two simulators, two load levels, two trials each.
fn sweep_profile() -> String {
    fixed_sims(
        "shard-sim",
        "[slo]\nttft_ms = 500\ntpot_ms = 50\n[load]\npoints = [1, 2]\nrequests_per_trial = 4\ntrials = 2\nrequest_timeout_s = 30\n",
        5,
        &["a", "b"],
    )
}

/// Shards of the 2 engines x 2 levels: engine a's levels on shards 0 and 1, b on 2.
const N: u32 = 3;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    fn shard(&self, i: u32) -> PathBuf {
        self.path(&format!("shard-{i}/report.json"))
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One single-machine run and the three shards of the same plan, run once for all
/// the tests of this file.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        let profile = f.path("p.toml");
        std::fs::write(&profile, sweep_profile()).unwrap();
        let single = f.path("single/report.json");
        ok(
            &goodput_output(&["run", s(&profile), "-o", s(&single), "--quiet", "--no-html"]),
            "single run",
        );
        for i in 0..N {
            let shard = format!("{i}/{N}");
            let out = f.shard(i);
            ok(
                &goodput_output(&[
                    "run",
                    s(&profile),
                    "--shard",
                    &shard,
                    "-o",
                    s(&out),
                    "--quiet",
                ]),
                &format!("shard {shard}"),
            );
        }
        f
    })
}

fn read(p: &Path) -> Report {
    report::read_report(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn merge(f: &Fixture, shards: &[u32], out: &str) -> (std::process::Output, PathBuf) {
    let out = f.path(out);
    let paths: Vec<PathBuf> = shards.iter().map(|&i| f.shard(i)).collect();
    let mut args = vec!["merge"];
    args.extend(paths.iter().map(|p| s(p)));
    args.extend(["-o", s(&out), "--force"]);
    (goodput_output(&args), out)
}

/// Every key path of a JSON value (array items merged), for comparing shapes.
fn shape(v: &Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = format!("{at}.{k}");
                out.insert(p.clone());
                shape(v, &p, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| shape(v, &format!("{at}[]"), out)),
        _ => {}
    }
}

fn shape_of(r: &Report) -> std::collections::BTreeSet<String> {
    let mut s = Default::default();
    shape(&serde_json::to_value(r).unwrap(), "", &mut s);
    s
}

/// (engine, x, trial, index) -> prompt tokens, from a report's requests file.
fn requests(report: &Path) -> BTreeMap<(String, u64, u32, u32), Option<u64>> {
    let recs = goodput::drive::record::read_records(&goodput::drive::record::records_path(report))
        .unwrap();
    recs.into_iter()
        .map(|r| ((r.engine, r.x.to_bits(), r.trial, r.index), r.prompt_tokens))
        .collect()
}

#[test]
fn merged_shards_read_like_one_run_of_the_plan() {
    let f = fixture();
    let shard0 = read(&f.shard(0));
    let info = shard0
        .run
        .as_ref()
        .unwrap()
        .shard
        .clone()
        .expect("run.shard");
    assert_eq!((info.index, info.count), (0, N));
    assert_eq!(info.engines, ["a"]);
    assert_eq!(info.points, [1.0]);
    assert_eq!(info.plan_engines, ["a", "b"]);

    let (out, merged) = merge(f, &[2, 0, 1], "merged.json");
    ok(&out, "merge");
    let single = read(&f.path("single/report.json"));
    let m = read(&merged);
    let run = m.run.as_ref().unwrap();
    assert_eq!(run.status, RunStatus::Complete, "{:?}", run.reason);
    assert_eq!(run.fingerprints, single.run.as_ref().unwrap().fingerprints);
    assert!(run.shard.is_none());
    // One simulator per shard: the engines ran apart, not interleaved.
    assert_eq!(single.run.as_ref().unwrap().interleaved, Some(true));
    assert_eq!(run.interleaved, Some(false));
    let info = run.merged.as_ref().expect("run.merged");
    assert_eq!(info.count, N);
    assert_eq!(
        info.shards.iter().map(|s| s.index).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert!(info.missing.is_empty());
    assert!(info.shards.iter().all(|s| s.host.is_some()));
    // The same engines, levels and trials, in the same order.
    assert_eq!(
        m.load.keys().collect::<Vec<_>>(),
        single.load.keys().collect::<Vec<_>>()
    );
    for (name, e) in &single.load {
        let me = &m.load[name];
        let xs = |e: &report::EngineResult| e.points.iter().map(|p| p.x).collect::<Vec<_>>();
        assert_eq!(xs(me), xs(e), "{name}");
        for (a, b) in me.points.iter().zip(&e.points) {
            assert_eq!(a.completed, b.completed, "{name} x={}", a.x);
            assert_eq!(a.trials.len(), b.trials.len());
        }
        let env = &m.environment.as_ref().unwrap().engines[name];
        assert!(
            env.host
                .as_ref()
                .and_then(|h| h.hostname.as_ref())
                .is_some(),
            "{name}: host"
        );
        // The log is found from the merged report's folder.
        let log = env.log_file.as_deref().expect("log file");
        assert!(merged.parent().unwrap().join(log).exists(), "{log}");
    }
    // Identical in shape, up to what a merge adds.
    let added = |k: &String| {
        k.starts_with(".run.merged")
            || k.contains(".environment.engines.") && (k.contains(".host") || k.contains(".gpus"))
    };
    let (ms, ss) = (shape_of(&m), shape_of(&single));
    // Notices are situational (a trial whose chunks a busy machine read late says
    // so in either run), not a difference of shape.
    let situational = |k: &&String| k.starts_with(".run.notices");
    let only_merged: Vec<_> = ms
        .difference(&ss)
        .filter(|k| !added(k) && !situational(k))
        .collect();
    let only_single: Vec<_> = ss.difference(&ms).filter(|k| !situational(k)).collect();
    assert!(
        only_merged.is_empty() && only_single.is_empty(),
        "{only_merged:?} {only_single:?}; merged notices: {:?}",
        m.run.as_ref().map(|r| &r.notices)
    );
    // The same requests: every one, with the prompts one machine would have sent.
    assert_eq!(requests(&merged), requests(&f.path("single/report.json")));
}

#[test]
fn show_compare_html_and_verdict_work_on_a_merged_report() {
    let f = fixture();
    let (out, merged) = merge(f, &[0, 1, 2], "for-render.json");
    ok(&out, "merge");
    let show = goodput_output(&["show", s(&merged)]);
    ok(&show, "show");
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.starts_with("Verdict:"), "{text}");
    assert!(text.contains("a") && text.contains("b"));
    let single = f.path("single/report.json");
    let cmp = goodput_output(&["compare", s(&single), s(&merged)]);
    ok(&cmp, "compare");
    assert!(!String::from_utf8_lossy(&cmp.stdout).trim().is_empty());
    let html = merged.with_extension("html");
    let page = std::fs::read_to_string(&html).expect("merge writes the HTML page");
    assert!(page.contains(goodput::sweep::HTML_GENERATOR) && page.contains("<svg"));
    let again = f.path("again.html");
    ok(
        &goodput_output(&["report", s(&merged), "-o", s(&again)]),
        "report",
    );
    let json = goodput_output(&["show", s(&merged), "--format", "json"]);
    ok(&json, "show json");
}

#[test]
fn a_partial_merge_warns_and_names_the_missing_slice() {
    let f = fixture();
    let (out, merged) = merge(f, &[0, 1], "partial.json");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("partial merge") && err.contains("shard 2: b"),
        "{err}"
    );
    let m = read(&merged);
    let run = m.run.as_ref().unwrap();
    assert_eq!(run.status, RunStatus::Partial);
    assert_eq!(run.merged.as_ref().unwrap().missing, [2]);
    assert!(run
        .notices
        .iter()
        .any(|n| n.kind == report::NoticeKind::Merged && n.text.contains("partial merge")));
    let b = m.load.get("b").expect("the missing engine is listed");
    assert_eq!(
        b.error.as_ref().map(|e| &e.kind),
        Some(&report::FailureKind::NotRun)
    );
    let show = String::from_utf8_lossy(&goodput_output(&["show", s(&merged)]).stdout).into_owned();
    assert!(show.contains("shard 2/3"), "{show}");
}

#[test]
fn merge_refuses_other_plans_duplicates_and_non_shards() {
    let f = fixture();
    let two = goodput_output(&[
        "merge",
        s(&f.shard(0)),
        s(&f.shard(0)),
        "-o",
        s(&f.path("dup.json")),
    ]);
    assert_eq!(two.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&two.stderr).contains("given twice"));

    let single = f.path("single/report.json");
    let not = goodput_output(&[
        "merge",
        s(&f.shard(0)),
        s(&single),
        "-o",
        s(&f.path("x.json")),
    ]);
    assert_eq!(not.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&not.stderr).contains("not a shard report"));

    // Shard 1 of a plan with other requests per trial.
    let mut other = read(&f.shard(1));
    let sh = other.run.as_mut().unwrap().shard.as_mut().unwrap();
    sh.plan_fingerprints
        .insert("load".into(), "0000000000000000".into());
    let other_path = f.path("other/report.json");
    std::fs::create_dir_all(other_path.parent().unwrap()).unwrap();
    report::write_report_atomic(&other_path, &other).unwrap();
    let mixed = goodput_output(&[
        "merge",
        s(&f.shard(0)),
        s(&other_path),
        "-o",
        s(&f.path("y.json")),
    ]);
    let err = String::from_utf8_lossy(&mixed.stderr);
    assert_eq!(mixed.status.code(), Some(2), "{err}");
    assert!(
        err.contains("another plan") && err.contains("load"),
        "{err}"
    );
    assert!(!f.path("y.json").exists());
}

#[test]
fn a_shard_resumes_its_own_slice_and_no_other() {
    let f = fixture();
    let profile = f.path("p.toml");
    // Shard 2's report as if its run had been killed.
    let dir = f.path("resume");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("report.json");
    let mut r = read(&f.shard(2));
    r.run.as_mut().unwrap().status = RunStatus::Running;
    report::write_report_atomic(&out, &r).unwrap();
    std::fs::copy(
        goodput::drive::record::records_path(&f.shard(2)),
        goodput::drive::record::records_path(&out),
    )
    .unwrap();
    let wrong = goodput_output(&[
        "run",
        s(&profile),
        "--shard",
        "1/3",
        "-o",
        s(&out),
        "--quiet",
    ]);
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(2), "{err}");
    assert!(err.contains("shard") && err.contains("--fresh"), "{err}");
    let right = goodput_output(&[
        "run",
        s(&profile),
        "--shard",
        "2/3",
        "-o",
        s(&out),
        "--no-html",
    ]);
    ok(&right, "resume shard 2");
    assert!(String::from_utf8_lossy(&right.stderr).contains("resuming"));
    let done = read(&out);
    assert_eq!(done.run.as_ref().unwrap().status, RunStatus::Complete);
    // Nothing ran again: the records are those of the first run.
    assert_eq!(requests(&out), requests(&f.shard(2)));
}

#[test]
fn bad_shard_flags_are_usage_errors() {
    let f = fixture();
    let profile = f.path("p.toml");
    for (flag, why) in [
        ("3/3", "below N"),
        ("0/5", "at most 4 shards"),
        ("a/b", "whole number"),
    ] {
        let out = goodput_output(&[
            "run",
            s(&profile),
            "--shard",
            flag,
            "-o",
            s(&f.path("bad.json")),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(why), "{flag}: {err}");
    }
}

/// A prediction cuts nothing and resumes nothing: `--predict` with a flag it would
/// ignore is a usage error (exit 2) naming both flags, and nothing is written.
#[test]
fn predict_with_a_flag_it_would_ignore_is_refused_naming_both() {
    let f = fixture();
    let profile = f.path("p.toml");
    let out = f.path("predicted.json");
    for (cmd, extra) in [
        ("run", &["--shard", "0/2"][..]),
        ("search", &["--shard", "0/2"][..]),
        ("run", &["--load-shard", "0/2"][..]),
        ("run", &["--save-result"][..]),
        ("run", &["--fresh"][..]),
        ("run", &["--ttft-includes-connect"][..]),
    ] {
        let mut args = vec![cmd, s(&profile), "--predict", "engine.toml", "-o", s(&out)];
        args.extend(extra);
        let o = goodput_output(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--predict") && err.contains(extra[0]),
            "{args:?}: {err}"
        );
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
}
