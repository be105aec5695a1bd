//! The results store end to end, as a user meets it: simulator runs recorded with
//! their tags, `goodput history` listing and filtering them and following a metric
//! (text and an HTML chart), `goodput gate --baseline last|TAG` taking its baseline
//! from the store (exit 0 on an A/A pair, 1 on a slower candidate, 2 when the
//! baseline's file changed or went), and a store that cannot be opened never
//! failing the run.

use crate::common;

use common::cli::{contains, goodput, goodput_run, text, PredicateBooleanExt, Scratch};

/// One `fixed` simulator, twice real time (`scale`: its time scale, so that a
/// smaller one is a slower engine under the same profile and engine name).
fn profile(scale: &str) -> String {
    format!(
        r#"
name = "store-sim"
[slo]
ttft_ms = 500
tpot_ms = 50
[load]
points = [1, 2]
requests_per_trial = 8
trials = 2
warmup_requests = 1
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 12
[engines.fixed]
kind = "sim"
preset = "fixed"
args = ["--time-scale", "{scale}"]
"#
    )
}

/// `history` with `args` against `store`; its stdout, asserting success.
fn history(store: &str, args: &[&str]) -> String {
    let out = goodput()
        .args(["history", "--store", store])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "history {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn runs_are_recorded_listed_filtered_followed_and_gated_from_the_store() {
    let dir = Scratch::new();
    let store = dir.arg("store.sqlite");
    let fast = dir.write("fast.toml", &profile("2"));
    goodput_run(&fast, &dir.path("r1.json"))
        .args(["--store", &store, "--tag", "nightly"])
        .assert()
        .success()
        .stderr(contains("store: run #1 recorded in"));
    // GOODPUT_STORE names the store as --store does.
    goodput_run(&fast, &dir.path("r2.json"))
        .env("GOODPUT_STORE", &store)
        .args(["--tag", "release", "--tag", "v2"])
        .assert()
        .success()
        .stderr(contains("store: run #2 recorded in"));

    let all = history(&store, &[]);
    let (r1, r2) = (all.find("r1.json").unwrap(), all.find("r2.json").unwrap());
    assert!(r2 < r1, "newest first:\n{all}");
    assert!(
        all.contains("store-sim") && all.contains("release v2"),
        "{all}"
    );
    let nightly = history(&store, &["--tag", "nightly"]);
    assert!(
        nightly.contains("r1.json") && !nightly.contains("r2.json"),
        "{nightly}"
    );
    let both = history(
        &store,
        &[
            "--engine",
            "fixed",
            "--profile",
            "store-sim",
            "--since",
            "2020-01-01",
        ],
    );
    assert!(
        both.contains("r1.json") && both.contains("r2.json"),
        "{both}"
    );
    for none in [
        &["--engine", "other"][..],
        &["--until", "2020-01-01"],
        &["--profile", "x"],
    ] {
        let out = history(&store, none);
        assert!(
            !out.contains("r1.json") && !out.contains("r2.json"),
            "{none:?}: {out}"
        );
    }

    let html = dir.path("trend.html");
    let trend = history(
        &store,
        &[
            "--metric",
            "goodput",
            "--engine",
            "fixed",
            "--html",
            &html.display().to_string(),
        ],
    );
    assert!(
        trend.starts_with("goodput of fixed: good requests/s"),
        "{trend}"
    );
    let lines: Vec<&str> = trend.lines().collect();
    assert_eq!(
        lines.len(),
        4,
        "a title, a header and a row per run, oldest first:\n{trend}"
    );
    assert!(
        lines[1].contains("x=1") && lines[1].contains("x=2"),
        "{trend}"
    );
    assert!(
        lines[2].starts_with("#1") && lines[2].contains("nightly"),
        "{trend}"
    );
    assert!(lines[3].starts_with("#2"), "{trend}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<svg") && page.contains("goodput of fixed"),
        "{page}"
    );
    let tpot = history(&store, &["--metric", "p99-tpot", "--engine", "fixed"]);
    assert!(tpot.starts_with("p99-tpot of fixed"), "{tpot}");
    goodput()
        .args(["history", "--store", &store, "--metric", "goodput"])
        .assert()
        .code(2)
        .stderr(contains("--engine"));

    // The gate's baseline from the store: the latest other run, or the tagged one.
    let gate = |which: &str, candidate: &str| {
        let mut cmd = goodput();
        cmd.args(["gate", "--store", &store, "--baseline", which])
            .arg(dir.path(candidate));
        cmd
    };
    gate("last", "r2.json")
        .assert()
        .code(0)
        .stderr(contains("baseline: run #1"));
    gate("nightly", "r2.json")
        .assert()
        .code(0)
        .stderr(contains("baseline: run #1"));
    gate("no-such-tag", "r2.json")
        .assert()
        .code(2)
        .stderr(contains("no run tagged \"no-such-tag\""));
    goodput()
        .args(["gate", "--store", &store, "--baseline", "last"])
        .arg(dir.path("r1.json"))
        .arg(dir.path("r2.json"))
        .assert()
        .code(2)
        .stderr(contains("only the candidate"));

    // The same profile and engine, four times slower in wall-clock time: worse.
    let slow = dir.write("slow.toml", &profile("0.5"));
    goodput_run(&slow, &dir.path("r3.json"))
        .args(["--store", &store, "--quiet"])
        .assert()
        .success();
    gate("release", "r3.json")
        .assert()
        .code(1)
        .stdout(contains("FAIL"));

    // A baseline whose file changed since it was recorded, or went: exit 2.
    let r1 = dir.path("r1.json");
    let mut changed = std::fs::read_to_string(&r1).unwrap();
    changed.push('\n');
    std::fs::write(&r1, changed).unwrap();
    gate("nightly", "r2.json")
        .assert()
        .code(2)
        .stderr(contains("run #1").and(contains("changed since it was recorded")));
    std::fs::remove_file(&r1).unwrap();
    gate("nightly", "r2.json")
        .assert()
        .code(2)
        .stderr(contains("cannot be read").and(contains("r1.json")));
}

#[test]
fn a_store_that_cannot_be_opened_never_fails_the_run_and_no_store_skips_it() {
    let dir = Scratch::new();
    std::fs::create_dir(dir.path("a-folder")).unwrap();
    let p = dir.write("p.toml", &profile("4"));
    goodput_run(&p, &dir.path("r.json"))
        .args(["--store", &dir.arg("a-folder")])
        .assert()
        .success()
        .stderr(contains("notice: results store").and(contains("is a directory")));
    assert!(dir.path("r.json").is_file());
    let unset = dir.path("never.sqlite");
    goodput_run(&p, &dir.path("r.json"))
        .args(["--force", "--no-store"])
        .env("GOODPUT_STORE", &unset)
        .assert()
        .success()
        .stderr(contains("recorded").not());
    assert!(!unset.exists(), "--no-store wrote the store");
    // The default store lies in goodput's folder of the data directory; history
    // names it when nothing was recorded there yet.
    goodput()
        .arg("history")
        .env_remove("GOODPUT_STORE")
        .env("XDG_DATA_HOME", dir.path("data"))
        .assert()
        .code(2)
        .stderr(contains(format!(
            "{}: no such file",
            dir.path("data/goodput/store.sqlite").display()
        )));
    goodput_run(&p, &dir.path("r.json"))
        .args(["--tag", "last"])
        .assert()
        .code(2)
        .stderr(contains("choose another tag"));
}
