//! `goodput fit` and `run --predict` end to end, as a user runs them: measure a
//! simulator configuration that is not a preset, fit it, serve the fitted file as an
//! engine, predict another level, compare.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli::goodput_output;

const TRUTH: &str = r#"
step_fixed_ms = 20.0
per_prefill_token_ms = 0.1
per_decode_seq_ms = 2.0
per_kv_token_ms = 0.0
sched_cpu_ms = 0.0
time_scale = 4.0
"#;

fn profile(engine: &str) -> String {
    format!(
        r#"name = "fit-e2e"
[slo]
ttft_ms = 1000
tpot_ms = 100
[load]
points = [1, 4]
requests_per_trial = 8
trials = 1
warmup_requests = 1
request_timeout_s = 60
[workload]
input_tokens = 64
output_tokens = 16
[telemetry]
source = "none"
{engine}"#
    )
}

fn ok(args: &[&str]) -> String {
    let o = goodput_output(args);
    assert!(
        o.status.success(),
        "goodput {args:?}: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// What [`measure_and_fit`] leaves in its folder, and `goodput fit`'s output.
struct Fitted {
    profile: PathBuf,
    measured: PathBuf,
    fitted: PathBuf,
    out: String,
}

/// Serves `truth` (a simulator config) as engine `e` of [`profile`], measures it
/// with `goodput run`, and fits the measurement with `goodput fit`, in `d`.
fn measure_and_fit(d: &Path, truth: &str) -> Fitted {
    let config = d.join("truth.toml");
    std::fs::write(&config, truth).unwrap();
    let profile_path = d.join("p.toml");
    let engine = format!(
        "[engines.e]\nkind = \"sim\"\nargs = [\"--config\", \"{}\"]\n",
        s(&config)
    );
    std::fs::write(&profile_path, profile(&engine)).unwrap();
    let measured = d.join("m.json");
    ok(&[
        "run",
        s(&profile_path),
        "-o",
        s(&measured),
        "--quiet",
        "--no-html",
    ]);
    let fitted = d.join("engine.toml");
    let out = ok(&["fit", s(&measured), "-o", s(&fitted)]);
    Fitted {
        profile: profile_path,
        measured,
        fitted,
        out,
    }
}

#[test]
fn measure_fit_serve_predict_compare() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Fitted {
        profile: p,
        measured,
        fitted,
        out,
    } = measure_and_fit(d, TRUTH);
    assert!(
        out.contains("per_decode_seq_ms") && out.contains("Residuals per point"),
        "{out}"
    );
    // The engine stated its batch limit (the simulator's /version): known, not fitted.
    let env = report::read_report(&measured).unwrap().environment.unwrap();
    let limit = &env.engines["e"].limits["max_num_seqs"];
    assert_eq!((limit.value, limit.source.as_str()), (256, "sim /version"));
    assert!(out.contains("known: sim /version"), "{out}");
    let config = goodput_sim::SimConfig::load(&fitted).unwrap();
    // Costs in wall-clock ms: the truth's divided by its time scale (4), loosely
    // (a real run on a shared machine).
    assert!((config.step_fixed_ms - 5.0).abs() < 2.0, "{config:?}");
    assert!(std::fs::read_to_string(&fitted)
        .unwrap()
        .contains("# fitted from: "));
    // Not overwritten without --force.
    let o = goodput_output(&["fit", s(&measured), "-o", s(&fitted)]);
    assert_eq!(o.status.code(), Some(2));

    // The fitted file is an ordinary engine.
    let served = d.join("served.json");
    let p2 = d.join("p2.toml");
    let engine2 = format!(
        "[engines.e]\nkind = \"sim\"\nargs = [\"--config\", \"{}\"]\n",
        s(&fitted)
    );
    std::fs::write(&p2, profile(&engine2)).unwrap();
    ok(&[
        "run",
        s(&p2),
        "-o",
        s(&served),
        "--concurrency",
        "1",
        "--requests",
        "4",
        "--quiet",
        "--no-html",
    ]);
    assert_eq!(
        report::read_report(&served).unwrap().load["e"].points[0].completed,
        vec![4]
    );

    // Predict the measured levels, in virtual time; the report says it is predicted.
    let predicted = d.join("pred.json");
    let shown = ok(&[
        "run",
        s(&p),
        "--predict",
        s(&fitted),
        "-o",
        s(&predicted),
        "--quiet",
    ]);
    assert!(shown.contains("PREDICTED, not measured"), "{shown}");
    assert!(shown.contains("PREDICTED, with 90% intervals"), "{shown}");
    let r = report::read_report(&predicted).unwrap();
    let pr = r.run.as_ref().unwrap().predicted.as_ref().unwrap();
    assert!(
        pr.fitted_from.as_deref().unwrap().contains("m.json"),
        "{pr:?}"
    );
    let m = report::read_report(&measured).unwrap();
    for (mp, pp) in m.load["e"].points.iter().zip(&r.load["e"].points) {
        let (a, b) = (
            mp.median_tpot_ms.median.unwrap(),
            pp.median_tpot_ms.median.unwrap(),
        );
        assert!(
            (b / a - 1.0).abs() < 0.5,
            "x={}: TPOT measured {a} predicted {b}",
            mp.x
        );
    }
    let cmp = ok(&["compare", s(&measured), s(&predicted)]);
    assert!(
        cmp.contains("is PREDICTED") && cmp.contains("median TTFT ms"),
        "{cmp}"
    );
    assert!(ok(&["show", s(&predicted)]).starts_with("Verdict: PREDICTED"));

    // Bad input: an engine the report does not have.
    let o = goodput_output(&[
        "fit",
        s(&measured),
        "--engine",
        "nope",
        "-o",
        s(&d.join("x.toml")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no engine `nope` (engines: e)"));
}

/// An engine of 3 slots: up to x = 3 every request streams at once (TTFT about a
/// step); from x = 4 on, a quarter of the requests wait a whole request for a slot,
/// far past the TTFT bound (the engine of `tests/it/runs/search.rs`).
const SLOTS: &str = common::search::THREE_SLOTS;

/// The search tests' profile, measured at x = 2 and 4, searched over 1 to 8.
fn search_profile(engines: &str) -> String {
    common::search::profile(
        "fit-search",
        "[2, 4]",
        "[search]\nmin = 1\nmax = 8\n",
        engines,
    )
}

#[test]
fn search_predict_confirms_the_fitted_knee_with_two_real_probes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let truth = d.join("slots.toml");
    std::fs::write(&truth, SLOTS).unwrap();
    let engine = format!(
        "[engines.e]\nkind = \"sim\"\nargs = [\"--config\", \"{}\"]\n",
        s(&truth)
    );
    let p = d.join("p.toml");
    std::fs::write(&p, search_profile(&engine)).unwrap();
    // Measure x = 2 and 4 (the profile's points), fit: the batch cap shows at x = 4.
    let measured = d.join("m.json");
    ok(&["run", s(&p), "-o", s(&measured), "--quiet", "--no-html"]);
    let fitted = d.join("e.toml");
    ok(&["fit", s(&measured), "-o", s(&fitted)]);
    assert_eq!(
        goodput_sim::SimConfig::load(&fitted).unwrap().max_num_seqs,
        3
    );

    let out = d.join("s.json");
    let shown = ok(&[
        "search",
        s(&p),
        "--predict",
        s(&fitted),
        "-o",
        s(&out),
        "--quiet",
        "--no-html",
    ]);
    // The model's search, in virtual time, beside the real report.
    let pred = report::read_report(&d.join("s.predicted.json")).unwrap();
    let c = &pred.capacity["e"];
    assert_eq!((c.max_load, c.failing), (Some(3.0), Some(4.0)), "{c:?}");
    assert!(c.trials > 2, "{c:?}");
    // Then the two deciding probes on the real engine, and the trials saved.
    let real = report::read_report(&out).unwrap();
    let xs: Vec<f64> = real.load["e"].points.iter().map(|p| p.x).collect();
    assert_eq!(xs, vec![3.0, 4.0]);
    let saved = format!(
        "confirmed on the real engine with 2 trials, {} fewer than the {} a blind search took on the model",
        c.trials - 2,
        c.trials
    );
    assert!(
        shown.contains("predicted knee 3") && shown.contains(&saved),
        "{shown}"
    );
    let notices = &real.run.as_ref().unwrap().notices;
    assert!(
        notices.iter().any(|n| n.text.contains(&saved)),
        "{notices:?}"
    );
}

#[test]
fn search_predict_with_several_engines_says_to_confirm_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cfg = d.join("slots.toml");
    std::fs::write(&cfg, SLOTS).unwrap();
    let engines = format!(
        "[engines.a]\nkind = \"sim\"\nargs = [\"--config\", \"{0}\"]\n[engines.b]\nkind = \"sim\"\nargs = [\"--config\", \"{0}\"]\n",
        s(&cfg)
    );
    let p = d.join("p.toml");
    std::fs::write(&p, search_profile(&engines)).unwrap();
    let out = d.join("s.json");
    let o = goodput_output(&[
        "search",
        s(&p),
        "--predict",
        s(&cfg),
        "-o",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("2 engines (a, b)") && err.contains("--engine NAME --predict NAME.toml"),
        "{err}"
    );
    assert!(!out.exists());
}

/// A served engine whose requests spend 200 ms (50 ms on the wall clock at time
/// scale 4) in its front-end before the engine schedules them.
const FRONTEND: &str = r#"
step_fixed_ms = 20.0
per_prefill_token_ms = 0.1
per_decode_seq_ms = 2.0
per_kv_token_ms = 0.0
sched_cpu_ms = 0.0
frontend_ms = 200.0
time_scale = 4.0
"#;

#[test]
fn a_served_front_end_time_is_fitted_and_written() {
    let dir = tempfile::tempdir().unwrap();
    let Fitted { fitted, out, .. } = measure_and_fit(dir.path(), FRONTEND);
    assert!(out.contains("frontend_ms"), "{out}");
    let config = goodput_sim::SimConfig::load(&fitted).unwrap();
    // 50 ms on the wall clock, loosely: a shared machine's HTTP round trips add to
    // it, and the search's resolution is a few ms.
    assert!(
        config.frontend_ms > 25.0 && config.frontend_ms < 100.0,
        "frontend_ms {}\n{out}",
        config.frontend_ms
    );
}
