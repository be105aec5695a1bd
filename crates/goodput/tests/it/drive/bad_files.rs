//! Bad input from files and servers (issue #37 items 8, 9, 17, 18, 19): a requests
//! file that is sparse, corrupt or does not belong to its report; peers' result files
//! and server usage with numbers out of range; request rates no run can keep; a raw
//! newline in a model id; a FIFO beside an AIPerf export.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::cli::goodput;
use common::fake_engine::{self, Behaviour, Completions, Models};
use goodput::drive::record::{Chunk, RequestRecord};
use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/peers")
        .join(rel)
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string(v).unwrap()).unwrap();
}

/// `goodput ARGS`, at most 60 s, its output.
fn run(args: &[&str]) -> std::process::Output {
    goodput()
        .args(args)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

/// No line of `out` starts with `fake` (a line a name injected).
fn no_line_starts(out: &str, fake: &str) {
    assert!(
        !out.lines().any(|l| l.trim_start().starts_with(fake)),
        "a name started a line of its own: {out}"
    );
}

/// The reference report at `dir/r.json` (no per-trial figures: `compare` reads its
/// requests file), its first engine's first point listing one trial of 3 requests.
fn reference_with_a_trial(dir: &Path) -> PathBuf {
    let mut r = json(Path::new(common::reports::REFERENCE));
    let trial = goodput::report::TrialInfo {
        index: 0,
        completed: 3,
        ..Default::default()
    };
    r["load"]["vllm-fast-b"]["points"][0]["trials"] =
        Value::Array(vec![serde_json::to_value(trial).unwrap()]);
    let out = dir.join("r.json");
    write_json(&out, &r);
    out
}

/// A successful record of the reference's first engine at x=1, trial 0.
fn record(index: u32) -> String {
    let mut r = RequestRecord::new("vllm-fast-b", 1.0, 0, index, 0);
    r.chunks = (1..=4)
        .map(|i| Chunk {
            t: i * 1_000_000,
            len: 2,
            reasoning: 0,
            lag: None,
            bound: None,
        })
        .collect();
    r.done = Some(4_000_000);
    r.completion_tokens = Some(4);
    serde_json::to_string(&r).unwrap()
}

#[test]
fn a_sparse_or_corrupt_requests_file_is_an_error_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    std::fs::copy(common::reports::REFERENCE, &report).unwrap();
    let records = dir.path().join("r.requests.jsonl");
    // 3 GiB of nothing, one line: refused at the line cap, not read into memory.
    let f = std::fs::File::create(&records).unwrap();
    f.set_len(3 << 30).unwrap();
    drop(f);
    let o = run(&["compare", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(
        e.contains("r.requests.jsonl:1:") && e.contains("67108864 bytes"),
        "{e}"
    );
    // One line of garbage is a corrupt file, not one that holds no requests.
    std::fs::write(&records, "garbage\n").unwrap();
    let o = run(&["compare", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("r.requests.jsonl:1:"),
        "{}",
        text(&o.stderr)
    );
    let fitted = dir.path().join("e.toml");
    let o = run(&[
        "fit",
        report.to_str().unwrap(),
        "-o",
        fitted.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("r.requests.jsonl:1:"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn compare_refuses_records_duplicated_or_disagreeing_with_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = reference_with_a_trial(dir.path());
    let records = dir.path().join("r.requests.jsonl");
    let three: Vec<String> = (0..3).map(record).collect();
    // The records the report counts: compared.
    std::fs::write(&records, three.join("\n") + "\n").unwrap();
    let o = run(&["compare", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Appended 200 times: refused, not a +19898% goodput.
    let mut lines = three.join("\n") + "\n";
    for _ in 0..199 {
        lines.push_str(&(three.join("\n") + "\n"));
    }
    std::fs::write(&records, lines).unwrap();
    let o = run(&["compare", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(
        e.contains("r.requests.jsonl") && e.contains("more than once"),
        "{e}"
    );
    // Fewer than the report counts: refused, naming both counts.
    std::fs::write(&records, three[..2].join("\n") + "\n").unwrap();
    let o = run(&["compare", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(
        e.contains("r.requests.jsonl") && e.contains("2 successful") && e.contains("counts 3"),
        "{e}"
    );
}

#[test]
fn peer_files_with_numbers_out_of_range_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let summary = json(&fixture("vllm/summary.json"));
    let bench = json(&fixture("guidellm/benchmarks.json"));
    let mut cases: Vec<(&str, Value, &str)> = Vec::new();
    let mut v = summary.clone();
    v["completed"] = serde_json::json!(1e30);
    cases.push(("completed.json", v, "/completed"));
    let mut v = summary.clone();
    v["request_rate"] = serde_json::json!(-1e308);
    cases.push(("rate.json", v, "/request_rate"));
    let mut v = summary.clone();
    v["median_ttft_ms"] = serde_json::json!(-5.0);
    cases.push(("ttft.json", v, "/median_ttft_ms"));
    let mut v = bench.clone();
    v["benchmarks"][0]["config"]["strategy"]["streams"] = serde_json::json!(-3);
    cases.push(("streams.json", v, "/benchmarks/0/config/strategy/streams"));
    let mut v = bench.clone();
    let b = v["benchmarks"][0].clone();
    v["benchmarks"].as_array_mut().unwrap().push(b);
    cases.push(("twice.json", v, "two load levels at x = 2"));
    for (name, v, field) in cases {
        let p = dir.path().join(name);
        write_json(&p, &v);
        let o = run(&["show", p.to_str().unwrap()]);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}{}", text(&o.stdout));
        assert!(e.contains(name) && e.contains(field), "{name}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_token_count_beyond_the_request_is_bad_usage() {
    let fake = fake_engine::start(Behaviour {
        completions: Completions::Prompt {
            prompt_tokens: u64::MAX,
        },
        ..Behaviour::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(&p, fake_engine::profile(&fake.url, 3, 1, "", "")).unwrap();
    let out = dir.path().join("r.json");
    let mut cmd = goodput();
    cmd.args([
        "run",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--no-html",
    ])
    .timeout(Duration::from_secs(60));
    let o = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let r =
        goodput::report::read_report(&out).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stderr)));
    let p0 = &r
        .load
        .get("e")
        .unwrap_or_else(|| panic!("{:?}\n{}", r.load.keys(), text(&o.stderr)))
        .points[0];
    assert_eq!(p0.errors.get("bad_usage"), Some(&3), "{:?}", p0.errors);
    let mean_input = p0.mean_input_tokens.as_ref().and_then(|s| s.median);
    assert!(mean_input.is_none_or(|m| m < 1e6), "{mean_input:?}");
}

#[test]
fn request_rates_no_run_can_keep_are_usage_errors_with_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = run(&[
        "run",
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--request-rate",
        "1e-300",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(
        e.contains("--request-rate") && e.contains("[0.001, 1000000]"),
        "{e}"
    );
    let p = dir.path().join("p.toml");
    std::fs::write(&p, fake_engine::profile("http://127.0.0.1:9", 1, 1, "", "")).unwrap();
    let o = run(&[
        "run",
        p.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--rate",
        "1e-300",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(
        e.contains("load.points") && e.contains("[0.001, 1000000]"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newline_in_a_model_id_does_not_start_a_line() {
    let fake_line = "Verdict: every engine meets";
    // From a peer's file: `show` and `compare`.
    let dir = tempfile::tempdir().unwrap();
    let mut v = json(&fixture("vllm/summary.json"));
    v["model_id"] = Value::String(format!("evil\n{fake_line}"));
    let p = dir.path().join("evil.json");
    write_json(&p, &v);
    for cmd in ["show", "compare"] {
        let o = run(&[cmd, p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{cmd}: {}", text(&o.stderr));
        no_line_starts(&text(&o.stdout), fake_line);
        assert!(
            text(&o.stdout).contains("evil\\u{a}Verdict"),
            "{}",
            text(&o.stdout)
        );
    }
    // From `/v1/models`: the progress lines, and the notice `show` prints.
    let fake = fake_engine::start(Behaviour {
        models: Models::Named(format!("m2\n{fake_line}")),
        ..Behaviour::default()
    })
    .await;
    for (model, name) in [("", "served.json"), ("model = \"m\"", "named.json")] {
        let profile = fake_engine::profile(&fake.url, 2, 1, "", "").replace("model = \"m\"", model);
        let p = dir.path().join("p.toml");
        std::fs::write(&p, profile).unwrap();
        let out = dir.path().join(name);
        let mut cmd = goodput();
        cmd.args([
            "run",
            p.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--no-html",
        ])
        .timeout(Duration::from_secs(60));
        let o = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        for t in [text(&o.stderr), text(&o.stdout)] {
            no_line_starts(&t, fake_line);
        }
        if model.is_empty() {
            // The served id, in the progress line that says what the engine serves.
            assert!(
                text(&o.stderr).contains("m2\\u{a}Verdict"),
                "{}",
                text(&o.stderr)
            );
        }
        let shown = run(&["show", out.to_str().unwrap()]);
        no_line_starts(&text(&shown.stdout), fake_line);
    }
}

#[test]
fn an_aiperf_export_beside_a_fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("profile_export_aiperf.json");
    std::fs::copy(fixture("aiperf/profile_export_aiperf.json"), &export).unwrap();
    let fifo = dir.path().join("profile_export.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let o = goodput()
        .args(["show", export.to_str().unwrap()])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("profile_export.jsonl") && e.contains("not a regular file"),
        "{e}"
    );
}
