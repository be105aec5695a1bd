//! What broke, misled or lost data when goodput was tried as a new user would:
//! each test runs the binary as a user does and fails on the old behaviour.

use crate::common;

use common::cli::{goodput, goodput_child};
use common::procs;

use std::path::{Path, PathBuf};
use std::process::Output;

const PROFILE: &str = r#"
name = "hardening"
[slo]
ttft_ms = 500
tpot_ms = 50
[load]
points = [1]
requests_per_trial = 3
trials = 1
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 4
[engines.a]
kind = "sim"
preset = "fixed"
"#;

fn setup(profile: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(&p, profile).unwrap();
    let out = dir.path().join("r.json");
    (dir, p, out)
}

fn run(profile: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        profile.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    goodput().args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_run_with_one_slo_bound_writes_a_report_goodput_reads_back() {
    for slo in ["ttft:100", "e2el:500"] {
        let (_dir, p, out) = setup(PROFILE);
        let o = run(&p, &out, &["--slo", slo]);
        assert!(o.status.success(), "{slo}: {}", stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let bounds: serde_json::Map<String, serde_json::Value> = v["slo"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.ends_with("_ms"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(bounds.len(), 1, "{slo}: only the given bound: {bounds:?}");
        assert!(
            bounds.values().all(|b| b.as_f64().is_some()),
            "{slo}: every bound is a number: {bounds:?}"
        );
        let shown = goodput()
            .args(["show", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(shown.status.success(), "{slo}: show: {}", stderr(&shown));
        let html = out.with_extension("check.html");
        let o = goodput()
            .args([
                "report",
                out.to_str().unwrap(),
                "-o",
                html.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{slo}: report: {}", stderr(&o));
        let o = goodput()
            .args(["compare", out.to_str().unwrap(), out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{slo}: compare: {}", stderr(&o));
    }
}

#[test]
fn bad_flag_values_are_usage_errors_that_name_the_flag() {
    let (_dir, p, out) = setup(PROFILE);
    for (flags, needle) in [
        (vec!["--slo", ""], "--slo"),
        (vec!["--slo", "ttft:100,ttft:200"], "twice"),
        (vec!["--slo", "ttft:abc"], "--slo"),
        (vec!["--slo", "foo:1"], "foo"),
        (vec!["--concurrency", ""], "--concurrency"),
        (vec!["--rate", "x"], "--rate"),
    ] {
        let o = run(&p, &out, &flags);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{flags:?}: {}", stderr(&o));
        assert!(!out.exists(), "{flags:?}: nothing written");
    }
}

#[test]
fn files_goodput_did_not_write_are_not_overwritten() {
    // A stray requests file without its report.
    let (_dir, p, out) = setup(PROFILE);
    let rec = out.with_file_name("r.requests.jsonl");
    std::fs::write(&rec, "precious\n").unwrap();
    let o = run(&p, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("r.requests.jsonl"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&rec).unwrap(), "precious\n");

    // Someone's HTML page where goodput would write its own.
    let (_dir, p, out) = setup(PROFILE);
    let html = out.with_extension("html");
    std::fs::write(&html, "<html>mine</html>").unwrap();
    let o = run(&p, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("r.html"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&html).unwrap(), "<html>mine</html>");
    // ... unless the page is not wanted, or overwriting is asked for.
    let o = run(&p, &out, &["--no-html"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&html).unwrap(), "<html>mine</html>");
    let o = run(&p, &out, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&html).unwrap().contains("goodput"));

    // A report goodput did not run (the reference) and a file that is no report.
    let (dir, p, out) = setup(PROFILE);
    let reference = include_str!("../../../../../tests/data/l4-gpu1-vllm.json");
    std::fs::write(&out, reference).unwrap();
    let o = run(&p, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), reference);
    std::fs::write(&out, "not json").unwrap();
    let o = run(&p, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "not json");

    // A directory as the output: said plainly.
    let o = run(&p, dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
}

/// Marks a finished report as interrupted, as a SIGKILL mid-run leaves it.
fn make_incomplete(out: &Path) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    v["run"]["status"] = "running".into();
    std::fs::write(out, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn resume_refuses_a_report_of_another_plan_and_names_what_differs() {
    let (_dir, p, out) = setup(PROFILE);
    let o = run(&p, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    make_incomplete(&out);
    let before = std::fs::read(&out).unwrap();
    for (what, profile, part) in [
        (
            "input_tokens",
            PROFILE.replace("input_tokens = 16", "input_tokens = 8"),
            "workload",
        ),
        (
            "engine args",
            PROFILE.replace(
                "preset = \"fixed\"",
                "preset = \"fixed\"\nargs = [\"--probe\"]",
            ),
            "engine.a",
        ),
        (
            "SLO",
            PROFILE.replace("ttft_ms = 500", "ttft_ms = 400"),
            "slo",
        ),
    ] {
        std::fs::write(&p, &profile).unwrap();
        let o = run(&p, &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(stderr(&o).contains(part), "{what}: {}", stderr(&o));
        assert_eq!(std::fs::read(&out).unwrap(), before, "{what}: report kept");
    }
    // Rate 1 is not concurrency 1: a different load mode is a different plan.
    std::fs::write(&p, PROFILE).unwrap();
    let o = run(&p, &out, &["--rate", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("load"), "{}", stderr(&o));
    // The same plan resumes; --fresh starts over.
    let o = run(&p, &out, &[]);
    assert!(o.status.success(), "same plan resumes: {}", stderr(&o));
    make_incomplete(&out);
    let o = run(&p, &out, &["--rate", "1", "--fresh"]);
    assert!(o.status.success(), "--fresh: {}", stderr(&o));
    let r = report::read_report(&out).unwrap();
    assert_eq!(r.run.unwrap().load_mode, report::LoadMode::Rate);
}

#[test]
fn a_signal_while_an_engine_starts_ends_the_run_at_once() {
    // An engine that never becomes ready (nothing listens on its port) and a long
    // readiness timeout: the signal, not the timeout, must end the wait.
    let profile = r#"
name = "interrupt"
[slo]
ttft_ms = 500
[load]
points = [1]
requests_per_trial = 2
request_timeout_s = 30
[workload]
input_tokens = 8
output_tokens = 2
[engines.never]
command = ["sleep", "1000"]
ready_timeout_s = 600
[engines.later]
kind = "sim"
preset = "fixed"
"#;
    let (_dir, p, out) = setup(profile);
    let mut child = goodput_child()
        .args([
            "run",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .env("GOODPUT_TEST_MARKER", &out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the engine is launched (its log exists), then interrupt.
    let log = goodput::sweep::logs_dir(&out).join("never.log");
    let t0 = std::time::Instant::now();
    while !log.exists() && t0.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(log.exists(), "the engine was launched");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(procs::signal(child.id(), procs::Signal::SIGTERM));
    let signalled = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if signalled.elapsed().as_secs() > 60 {
            let _ = child.kill();
            panic!("goodput still waited for readiness 60 s after SIGTERM (timeout 600 s)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    let r = report::read_report(&out).unwrap();
    let run = r.run.as_ref().unwrap();
    assert_eq!(run.status, report::RunStatus::Partial);
    assert!(
        run.reason.as_deref().unwrap_or("").contains("SIGTERM"),
        "{:?}",
        run.reason
    );
    let never = r.load["never"]
        .error
        .as_ref()
        .expect("the engine is recorded");
    assert_eq!(never.kind, report::FailureKind::Interrupted, "{never:?}");
    let later = r.load.get("later").and_then(|e| e.error.as_ref());
    assert_eq!(
        later.map(|e| e.kind.as_str()),
        Some("not_run"),
        "an engine never started is listed as not run"
    );
    // The engine's process group is gone: no `sleep 1000` of this run is left.
    let mut out_err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut out_err).unwrap();
    for p in procs::marked(&procs::marker(&out)) {
        if p.cmdline()
            .starts_with(&["sleep".to_string(), "1000".to_string()])
        {
            panic!("engine left running: pid {}; {out_err}", p.pid);
        }
    }
}

#[test]
fn what_the_results_rest_on_is_said_where_they_are_printed() {
    if !common::require::python() {
        return;
    }
    // An engine without /tokenize (the fake vLLM answers POST with 501) and a
    // simulator ten times faster than real time.
    let fake = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fake_engine.py");
    let profile = format!(
        r#"
name = "said"
[slo]
ttft_ms = 500
[load]
points = [1]
requests_per_trial = 2
request_timeout_s = 10
[workload]
input_tokens = 8
output_tokens = 2
[engines.notok]
command = ["python3", "{fake}", "--port", "{{port}}", "--health-delay", "0"]
[engines.fast]
kind = "sim"
preset = "fixed"
args = ["--time-scale", "10"]
"#
    );
    let (_dir, p, out) = setup(&profile);
    let o = goodput()
        .args(["run", p.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    // The fake engine streams nothing: its requests fail; the simulator's succeed.
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = report::read_report(&out).unwrap();
    let env = r.environment.as_ref().unwrap();
    assert_eq!(
        env.engines["notok"].prompt_lengths.as_deref(),
        Some("uncalibrated"),
        "a failed calibration is recorded"
    );
    assert_eq!(
        env.engines["fast"].prompt_lengths.as_deref(),
        Some("tokenize")
    );
    let notices = &r.run.as_ref().unwrap().notices;
    assert!(
        notices
            .iter()
            .any(|n| n.kind == report::NoticeKind::PromptLengths
                && n.text.starts_with("notok: prompt lengths are uncalibrated")),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| n.text.starts_with("fast: ") && n.text.contains("--time-scale 10")),
        "{notices:?}"
    );
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(
        shown.contains("--time-scale 10"),
        "said where results are printed: {shown}"
    );
    assert!(shown.contains("uncalibrated"), "{shown}");
    assert!(shown.contains("1 trial per point"), "plural: {shown}");
    // The first failure's detail, not only its kind, in the trial summary.
    let err = stderr(&o);
    assert!(err.contains("first failure: http_501"), "{err}");
}

#[test]
fn every_example_profile_is_a_valid_plan() {
    // The examples' model and interpreter paths come from the environment (the
    // install scripts print them); a plan only checks that they are set. Unset ones
    // are given stand-ins in a copy of the examples (beside their `data/`), not in
    // this process's environment, which the other tests of this binary read.
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let copy = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(examples.join("data"), copy.path().join("data")).unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        // Planning a ShareGPT profile reads the file (scripts/test.sh installs it).
        if path.ends_with("sharegpt-sim.toml")
            && common::require::opted_out("GOODPUT_SKIP_SHAREGPT", "the ShareGPT example")
        {
            continue;
        }
        let mut text = std::fs::read_to_string(&path).unwrap();
        for (var, stand_in) in [
            ("GOODPUT_SMOLLM2", "/models/smollm2.gguf"),
            ("VLLM_PYTHON", "/venv/bin/python"),
            ("GOODPUT_TINY_LLAMA", "/models/tiny-llama"),
        ] {
            if std::env::var_os(var).is_none() {
                text = text.replace(&format!("${{{var}}}"), stand_in);
            }
        }
        let planned = copy.path().join(path.file_name().unwrap());
        std::fs::write(&planned, text).unwrap();
        let plan = goodput::define::profile::Profile::load(&planned)
            .and_then(|p| p.into_plan(&path.display().to_string(), &Default::default()));
        assert!(plan.is_ok(), "{}: {}", path.display(), plan.unwrap_err());
        n += 1;
    }
    assert!(n >= 4, "found {n} example profiles");
}
