//! `goodput fit` and `run --predict` end to end, as a user runs them: measure a
//! simulator configuration that is not a preset, fit it, serve the fitted file as an
//! engine, predict another level, compare.

mod common;

use std::path::Path;

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

#[test]
fn measure_fit_serve_predict_compare() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let truth = d.join("truth.toml");
    std::fs::write(&truth, TRUTH).unwrap();
    let p = d.join("p.toml");
    let engine = format!(
        "[engines.e]\nkind = \"sim\"\nargs = [\"--config\", \"{}\"]\n",
        s(&truth)
    );
    std::fs::write(&p, profile(&engine)).unwrap();
    let measured = d.join("m.json");
    ok(&["run", s(&p), "-o", s(&measured), "--quiet", "--no-html"]);

    let fitted = d.join("engine.toml");
    let out = ok(&["fit", s(&measured), "-o", s(&fitted)]);
    assert!(
        out.contains("per_decode_seq_ms") && out.contains("Residuals per point"),
        "{out}"
    );
    let config = sim::SimConfig::load(&fitted).unwrap();
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
