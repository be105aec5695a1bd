//! Where vLLM users already are: a profile-free run in `vllm bench serve`'s flags
//! against a running simulator, peers' flags named by goodput's equivalent, and the
//! vLLM-format result goodput writes read back.

use crate::common;

use common::cli::{contains, goodput, PredicateBooleanExt, Scratch};
use common::load_share::start_sim;

#[test]
fn vllms_command_line_benchmarks_a_running_server_without_a_profile() {
    let sim = start_sim();
    let dir = Scratch::new();
    let out = dir.arg("r.json");
    goodput()
        .current_dir(dir.dir())
        .args([
            "run",
            "--url",
            &sim.url,
            "--model",
            "goodput-sim",
            "--max-concurrency",
            "2",
            "--num-prompts",
            "20",
            "--random-input-len",
            "64",
            "--random-output-len",
            "16",
            "--goodput",
            "ttft:1000",
            "tpot:100",
            "--seed",
            "7",
            "-o",
            &out,
            "--no-html",
            "--save-result",
        ])
        .assert()
        .success()
        .stderr(contains(
            "goodput measures differently from `vllm bench serve`",
        ))
        .stderr(contains("vLLM-format result"));
    let r = dir.report();
    let run = r.run.as_ref().expect("run info");
    let profile = run
        .profile
        .as_deref()
        .expect("the resolved profile is recorded");
    assert!(
        profile.contains(&sim.url) && profile.contains("input_tokens = 64"),
        "{profile}"
    );
    let p = &r.load["goodput-sim"].points[0];
    assert_eq!((p.x, p.completed.clone()), (2.0, vec![20]));
    assert_eq!(
        (
            r.slo.bound(report::SloMetric::Ttft),
            r.slo.bound(report::SloMetric::Tpot)
        ),
        (Some(1000.0), Some(100.0))
    );
    assert_eq!(p.mean_output_tokens.and_then(|s| s.median), Some(16.0));

    // The vLLM-format file beside it reads as vLLM's own, and shows its figures.
    let vllm = dir.path("r.vllm.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&vllm).expect("the vLLM file"))
            .expect("JSON");
    assert_eq!(v["completed"], 20);
    assert_eq!(v["max_concurrency"], 2);
    assert_eq!(v["request_rate"], "inf");
    assert_eq!(v["ttfts"].as_array().map(Vec::len), Some(20));
    let shown = goodput()
        .args(["show", "--format", "json"])
        .arg(&vllm)
        .output()
        .expect("show");
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("JSON rows");
    let row = &rows[0];
    assert_eq!(row["engine"], "goodput-sim");
    assert_eq!(row["median_ttft_ms"], v["median_ttft_ms"]);
    assert_eq!(row["p99_tpot_ms"], v["p99_tpot_ms"]);
    assert_eq!(row["completed"], 20);
    // Read back as the run was: its SLO and seed (#37 item 24), not "no bound for
    // 90% of requests" and not a made-up seed.
    let shown = goodput().arg("show").arg(&vllm).output().expect("show");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("TTFT ≤ 1000 ms and TPOT ≤ 100 ms") && !shown.contains("no bound"),
        "{shown}"
    );
    assert!(shown.contains(", seed 7"), "{shown}");
    // Nothing lands in the folder the command ran in but what was asked for.
    let mut names: Vec<String> = std::fs::read_dir(dir.dir())
        .expect("the folder")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    assert_eq!(names, ["r.json", "r.requests.jsonl", "r.vllm.json"]);
}

#[test]
fn a_peers_spelling_is_named_by_goodputs_equivalent() {
    goodput()
        .args(["run", "--url", "http://127.0.0.1:9", "--request-count", "5"])
        .assert()
        .code(2)
        .stderr(contains("AIPerf's spelling").and(contains("--requests")))
        .stderr(contains("similar argument").not());
    goodput()
        .args(["run", "--target", "http://127.0.0.1:9"])
        .assert()
        .code(2)
        .stderr(contains("GuideLLM's spelling").and(contains("--url")));
}

#[test]
fn a_profile_without_engines_and_no_url_says_what_is_missing_once() {
    let dir = Scratch::new();
    let p = dir.write("p.toml", "name = \"x\"\n");
    goodput()
        .arg("run")
        .arg(&p)
        .args(["-o", &dir.arg("r.json")])
        .assert()
        .code(2)
        .stderr(contains("no [engines.NAME] table").and(contains("--url")));
}

#[test]
fn compare_reads_the_three_peers_files_and_keeps_their_figures() {
    let fixture = |rel: &str| {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/peers")
            .join(rel)
            .display()
            .to_string()
    };
    let vllm = fixture("vllm/detailed.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&vllm).expect("fixture")).expect("JSON");
    let median_ttft = format!("{:.2}", v["median_ttft_ms"].as_f64().expect("a figure"));
    goodput()
        .args(["compare", &vllm])
        .arg(fixture("guidellm/benchmarks.json"))
        .arg(fixture("aiperf/profile_export_aiperf.json"))
        .assert()
        .success()
        .stdout(contains(median_ttft.as_str()))
        .stdout(contains("Not compared").not())
        .stderr(contains("converted from GuideLLM 0.8.1"));
    goodput()
        .args(["show", &vllm])
        .assert()
        .success()
        .stdout(contains(median_ttft.as_str()).and(contains("vllm bench serve")))
        // vLLM's file records no seed: none is shown (#37 item 24), and no
        // share of requests is held to a bound there is not.
        .stdout(
            contains(", seed ")
                .not()
                .and(contains("no bound for").not()),
        );
}

/// A short run in vLLM's flags against `sim` into `r.json` of `dir`, with `extra`.
fn vllm_run(sim: &str, dir: &Scratch, extra: &[&str]) -> assert_cmd::Command {
    vllm_run_to(sim, dir, "r.json", extra)
}

/// [`vllm_run`] into `out` of `dir`.
fn vllm_run_to(sim: &str, dir: &Scratch, out: &str, extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = goodput();
    cmd.current_dir(dir.dir())
        .args([
            "run",
            "--url",
            sim,
            "--model",
            "goodput-sim",
            "--max-concurrency",
            "1",
            "--num-prompts",
            "2",
            "--random-input-len",
            "8",
            "--random-output-len",
            "4",
            "--num-warmups",
            "0",
            "-o",
            &dir.arg(out),
            "--no-html",
            "-q",
        ])
        .args(extra);
    cmd
}

#[test]
fn every_bound_of_vllms_goodput_flag_is_applied_and_an_unknown_one_refused() {
    let sim = start_sim();
    let dir = Scratch::new();
    vllm_run(
        &sim.url,
        &dir,
        &["--goodput", "ttft:2000", "tpot:200", "ttfat:1000"],
    )
    .assert()
    .success();
    let slo = dir.report().slo;
    assert_eq!(
        (
            slo.bound(report::SloMetric::Ttft),
            slo.bound(report::SloMetric::Tpot),
            slo.bound(report::SloMetric::Ttfat)
        ),
        (Some(2000.0), Some(200.0), Some(1000.0))
    );
    let other = Scratch::new();
    vllm_run(&sim.url, &other, &["--goodput", "ttft:2000", "ttfx:5"])
        .assert()
        .code(2)
        .stderr(contains("--goodput").and(contains("`ttfx`")));
}

#[test]
fn save_result_never_overwrites_a_report_or_the_runs_own_files_unless_forced() {
    let sim = start_sim();
    let dir = Scratch::new();
    // Another report beside this one, named as the vLLM-format file.
    let other = dir.write("other.json", "{\"precious\": true}\n");
    vllm_run(
        &sim.url,
        &dir,
        &["--save-result", "--result-filename", "other.json"],
    )
    .assert()
    .code(2)
    .stderr(contains(other.display().to_string()).and(contains("--force")));
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        "{\"precious\": true}\n"
    );
    // The run's own report and requests file are never the vLLM-format file.
    for own in ["r.json", "r.requests.jsonl"] {
        let fresh = Scratch::new();
        vllm_run(
            &sim.url,
            &fresh,
            &["--save-result", "--result-filename", own, "--force"],
        )
        .assert()
        .code(2)
        .stderr(contains(own).and(contains("--result-filename")));
    }
    // With --force another file is overwritten; a vLLM-format file goodput wrote
    // is replaced without it (a rerun, a resumed run).
    vllm_run(
        &sim.url,
        &dir,
        &[
            "--save-result",
            "--result-filename",
            "other.json",
            "--force",
        ],
    )
    .assert()
    .success();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&other).unwrap()).expect("JSON");
    assert_eq!(v["completed"], 2);
    vllm_run_to(
        &sim.url,
        &dir,
        "r2.json",
        &["--save-result", "--result-filename", "other.json"],
    )
    .assert()
    .success();
}
