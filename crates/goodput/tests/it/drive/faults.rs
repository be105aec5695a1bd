//! Hostile and broken servers: the simulator's fault injection drives goodput, and
//! the report names each fault with the right error kind, counted per point, while
//! the run goes on.

use crate::common;

use common::cli::{contains, goodput, PredicateBooleanExt, Scratch};

/// (fault spec, error kind goodput must report)
const FAULTS: &[(&str, &str)] = &[
    ("drop_after=3", "reset"),
    ("stall_after=2", "stall"),
    ("status=500", "http_500"),
    ("status=429", "http_429"),
    ("malformed", "malformed"),
    ("no_choices", "malformed"),
    ("bad_usage", "bad_usage"),
    ("endless", "overlong"),
    ("not_sse", "not_sse"),
];

#[test]
fn every_injected_fault_is_reported_as_its_error_kind() {
    let dir = Scratch::new();
    let mut profile = String::from(
        r#"
name = "faults"
[slo]
ttft_ms = 500
tpot_ms = 50
[load]
points = [2]
requests_per_trial = 3
trials = 1
request_timeout_s = 3
stall_timeout_s = 1
[workload]
input_tokens = 8
output_tokens = 6
"#,
    );
    for (i, (spec, _)) in FAULTS.iter().enumerate() {
        let cfg = dir.write(
            &format!("f{i}.toml"),
            &format!("[schedule]\nttft_ms = 10\nitl_ms = 5\n\n[[faults]]\nspec = \"{spec}\"\n"),
        );
        profile.push_str(&format!(
            "\n[engines.f{i}]\nkind = \"sim\"\nargs = [\"--config\", \"{}\"]\n",
            cfg.display()
        ));
    }
    // Nothing succeeded, and the exit status says so.
    dir.run(&profile, &["--quiet"]).assert().code(4);
    let r = dir.report();
    for (i, (spec, kind)) in FAULTS.iter().enumerate() {
        let e = &r.load[&format!("f{i}")];
        assert!(
            e.error.is_none(),
            "{spec}: the engine itself is fine: {:?}",
            e.error
        );
        let p = &e.points[0];
        assert_eq!(
            p.errors.get(*kind),
            Some(&3),
            "{spec}: errors {:?}",
            p.errors
        );
        assert_eq!(p.failed, Some(vec![3]), "{spec}");
        assert_eq!(p.completed, vec![0], "{spec}");
        assert_eq!(
            p.status,
            Some(report::RunStatus::Complete),
            "{spec}: the trial ran"
        );
    }
    // `show` names them.
    goodput()
        .args(["show", &dir.arg("r.json")])
        .assert()
        .stdout(contains("http_429").and(contains("stall")));
}
