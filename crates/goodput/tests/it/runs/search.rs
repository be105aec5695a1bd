//! `goodput search` end to end on the simulator: the knee of an engine that runs at
//! most 3 requests at once (the 4th waits a whole request, far past the TTFT
//! bound) is found exactly; every probe is an ordinary point of the report; a search
//! killed mid-way resumes and finishes with the same answer; bad bounds are refused.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::cli::{goodput, goodput_child, succeeded};
use common::procs;
use common::search as search_setup;

/// The search profile with `search` (a `[search]` table, or none) and one
/// engine, `three-slots`, written to `p.toml` in `dir`.
fn profile(dir: &Path, search: &str) -> PathBuf {
    let cfg = search_setup::write_three_slots(dir, "sim.toml");
    let engines = search_setup::sim_engines(&["three-slots"], &cfg);
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        search_setup::profile("search-sim", "[1]", search, &engines),
    )
    .unwrap();
    p
}

/// `search PROFILE -o OUT --quiet`: the arguments every search here starts with.
fn search_args(p: &Path, out: &Path) -> Vec<String> {
    let (p, out) = (p.display().to_string(), out.display().to_string());
    ["search", &p, "-o", &out, "--quiet"]
        .map(String::from)
        .to_vec()
}

#[test]
fn search_finds_the_exact_knee_and_the_report_holds_every_probe() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile(dir.path(), "[search]\nmin = 1\nmax = 8\n");
    let out = dir.path().join("s.json");
    let o = goodput().args(search_args(&p, &out)).output().unwrap();
    let stdout = succeeded(&o, "goodput search");
    let r = report::read_report(&out).unwrap();
    let c = &r.capacity["three-slots"];
    assert_eq!(c.mode, report::LoadMode::Concurrency);
    assert_eq!(
        (c.max_load, c.passing, c.failing),
        (Some(3.0), Some(3.0), Some(4.0)),
        "{c:?}"
    );
    assert_eq!(
        c.limited_by,
        report::Limit::Metric(report::SloMetric::Ttft),
        "{c:?}"
    );
    // The capacity's interval lies within the bracket, around its estimate.
    let i = c.interval.expect("a capacity interval");
    assert!(
        3.0 <= i.low && i.low <= i.estimate && i.estimate <= i.high && i.high <= 4.0,
        "{i:?}"
    );
    // Every probe is a point with its trials and SLO check.
    let points = &r.load["three-slots"].points;
    assert_eq!(points.len() as u32, c.probes);
    let trials: usize = points.iter().map(|p| p.trials.len()).sum();
    assert_eq!(trials as u32, c.trials);
    for p in points {
        let check = p.slo_check.as_ref().unwrap();
        assert_eq!(check.meets, p.x <= 3.0, "x={}: {check:?}", p.x);
        assert!(p.attainment.is_some());
        assert!(check.ci_low.unwrap() <= check.attainment.unwrap());
    }
    // Bracket 1 2 4, then 3: four probes, not eight.
    assert!(c.probes <= 5, "{c:?}");
    // The verdict says the answer, at the top of show and at the end of search.
    assert!(
        stdout.contains(
            "three-slots serves TTFT ≤ 60 ms for 90% of requests up to 3 concurrent requests"
        ),
        "{stdout}"
    );
    let shown = goodput()
        .args(["show", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).starts_with("Verdict: three-slots serves"));
    let csv = goodput()
        .args(["show", out.to_str().unwrap(), "--format", "csv"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&csv.stdout)
        .lines()
        .next()
        .unwrap()
        .contains("attainment_ci_low"));
    let html = std::fs::read_to_string(out.with_extension("html")).unwrap();
    assert!(html.contains("id=\"verdict\"") && html.contains("up to 3 concurrent requests"));
}

/// Load levels of the report at `out` with a complete trial (0 while none is written).
fn probed(out: &Path) -> usize {
    report::read_report(out).map_or(0, |r| {
        r.load
            .values()
            .flat_map(|e| &e.points)
            .filter(|p| {
                p.trials
                    .iter()
                    .any(|t| t.status == report::RunStatus::Complete)
            })
            .count()
    })
}

#[test]
fn a_search_killed_mid_way_resumes_and_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile(dir.path(), "[search]\nmin = 1\nmax = 8\n");
    let out = dir.path().join("s.json");
    let mut child = goodput_child()
        .args(search_args(&p, &out))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    // Two probes measured (12 requests a trial leave x=1 undecided: it gets its
    // extra trials first, so more than two trials).
    while probed(&out) < 2 && t.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    procs::signal(child.id(), procs::Signal::SIGKILL);
    let _ = child.wait();
    let before = report::read_report(&out).unwrap();
    assert!(before.capacity.is_empty(), "the search had not finished");
    let kept: Vec<f64> = before.load["three-slots"]
        .points
        .iter()
        .map(|p| p.x)
        .collect();
    assert!(kept.len() >= 2, "{kept:?}");
    let o = goodput().args(search_args(&p, &out)).output().unwrap();
    succeeded(&o, "the resumed goodput search");
    let r = report::read_report(&out).unwrap();
    let c = &r.capacity["three-slots"];
    assert_eq!((c.passing, c.failing), (Some(3.0), Some(4.0)), "{c:?}");
    // The probes before the kill were kept, not measured again.
    for x in kept {
        let p = r.load["three-slots"]
            .points
            .iter()
            .find(|p| p.x == x)
            .unwrap();
        assert_eq!(p.trials[0].index, 0);
    }
    // A finished search is not overwritten without --force.
    let again = goodput().args(search_args(&p, &out)).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
}

#[test]
fn when_even_the_lowest_load_fails_the_answer_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let p = profile(dir.path(), "");
    let out = dir.path().join("s.json");
    // TTFT <= 1 ms: nothing passes; min 2 so the first probe already queues.
    let o = goodput()
        .args(search_args(&p, &out))
        .args(["--slo", "ttft:1", "--min", "2", "--max", "6"])
        .output()
        .unwrap();
    let stdout = succeeded(&o, "goodput search");
    let r = report::read_report(&out).unwrap();
    let c = &r.capacity["three-slots"];
    assert_eq!(
        (c.max_load, c.failing, c.probes),
        (None, Some(2.0), 1),
        "{c:?}"
    );
    assert!(c.note.contains("even the lowest load"), "{c:?}");
    assert!(stdout.contains("No engine serves"), "{stdout}");
}

#[test]
fn bad_search_bounds_are_usage_errors_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let o = |p: &Path, extra: &[&str]| {
        let o = goodput()
            .args(search_args(p, &out))
            .args(extra)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let p = profile(dir.path(), "[search]\nmin = 8\nmax = 4\n");
    let (code, err) = o(&p, &[]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("search.max") && err.contains("below search.min") && err.contains("line"),
        "{err}"
    );
    let p = profile(dir.path(), "[search]\nmin = 1.5\n");
    let (code, err) = o(&p, &[]);
    assert!(
        code == Some(2) && err.contains("search.min") && err.contains("whole number"),
        "{err}"
    );
    let p = profile(dir.path(), "[search]\nmin = 1\nmax = 8\n");
    // Concurrency bounds read as rates: refused, naming the key.
    let (code, err) = o(&p, &["--mode", "rate"]);
    assert!(
        code == Some(2) && err.contains("search.min") && err.contains("rate mode"),
        "{err}"
    );
    let (code, err) = o(&p, &["--attainment", "1.5"]);
    assert!(code == Some(2) && err.contains("--attainment"), "{err}");
    let p = profile(dir.path(), "[search]\nmax_probes = 0\n");
    let (code, err) = o(&p, &[]);
    assert!(
        code == Some(2) && err.contains("search.max_probes"),
        "{err}"
    );
    let p = profile(dir.path(), "[search]\nmxa = 3\n");
    let (code, err) = o(&p, &[]);
    assert!(code == Some(2) && err.contains("mxa"), "{err}");
    assert!(!out.exists(), "no report is written for bad input");
}
