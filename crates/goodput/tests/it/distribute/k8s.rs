//! `goodput k8s` writes an Indexed Job (one completion index per shard) and a merge
//! Job that validate against the Kubernetes schema (`kubernetes-validate --strict`,
//! from PyPI, run offline; scripts/test.sh installs it and sets
//! `GOODPUT_KUBERNETES_VALIDATE`). Fails when the validator is missing unless
//! `GOODPUT_SKIP_K8S=1`. No cluster runs them here: README says so.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::cli::goodput_output;
use common::profiles::fixed_sims;

const VAR: &str = "GOODPUT_SKIP_K8S";

/// Two simulators, two load levels.
fn sweep_profile() -> String {
    fixed_sims(
        "k8s-sim",
        "[slo]\nttft_ms = 500\n[load]\npoints = [1, 4]\nrequests_per_trial = 4\n",
        5,
        &["a", "b"],
    )
}

/// The validator, or `None` when `GOODPUT_SKIP_K8S=1`.
fn validator() -> Option<String> {
    if common::require::opted_out(VAR, "this test runs kubernetes-validate") {
        return None;
    }
    let v = std::env::var("GOODPUT_KUBERNETES_VALIDATE")
        .unwrap_or_else(|_| "kubernetes-validate".into());
    let runs = Command::new(&v)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        runs,
        "this test needs kubernetes-validate ({v} does not run): pip install kubernetes-validate==1.37.0 \
         and point GOODPUT_KUBERNETES_VALIDATE at it (scripts/test.sh does), or set {VAR}=1 to skip it"
    );
    Some(v)
}

fn validate(v: &str, file: &Path) -> String {
    let out = Command::new(v).arg("--strict").arg(file).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{}: {text}\n{}",
        file.display(),
        std::fs::read_to_string(file).unwrap()
    );
    text
}

#[test]
fn manifests_validate_against_the_kubernetes_schema() {
    let Some(v) = validator() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(&p, sweep_profile()).unwrap();
    let out_dir = dir.path().join("k8s");
    let out = goodput_output(&[
        "k8s",
        p.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--shards",
        "3",
        "--image",
        "registry.example/goodput:1",
        "--namespace",
        "bench",
        "--requests",
        "8",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = out_dir.join("goodput-job.yaml");
    let merge = out_dir.join("goodput-merge.yaml");
    let checked = validate(&v, &job);
    assert!(
        checked.contains("configmap/goodput-profile") && checked.contains("job/goodput"),
        "{checked}"
    );
    validate(&v, &merge);
    let text = std::fs::read_to_string(&job).unwrap();
    for want in [
        "completionMode: \"Indexed\"",
        "completions: 3",
        "--shard \\\"$JOB_COMPLETION_INDEX/3\\\"",
        "--requests 8",
        "nvidia.com/gpu: 1",
        "claimName: \"goodput-results\"",
        "namespace: \"bench\"",
    ] {
        assert!(text.contains(want), "{want} not in\n{text}");
    }
    // The profile travels in the ConfigMap as written.
    assert!(
        text.contains(&serde_json::to_string(&sweep_profile()).unwrap()),
        "{text}"
    );
    let m = std::fs::read_to_string(&merge).unwrap();
    assert!(
        m.contains("goodput merge") && m.contains("/results/shard-2/report.json"),
        "{m}"
    );
    // Only the merged run is recorded, in a store on the results volume.
    assert!(m.contains("--force --store /results/store.sqlite"), "{m}");

    // A broken manifest fails the validator: the check can fail.
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, text.replace("completionMode", "completionMood")).unwrap();
    let out = Command::new(&v)
        .arg("--strict")
        .arg(&broken)
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn bad_names_and_too_many_shards_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(&p, sweep_profile()).unwrap();
    let o = dir.path().join("k");
    let run = |extra: &[&str]| {
        let mut a = vec!["k8s", p.to_str().unwrap(), "-o", o.to_str().unwrap()];
        a.extend(extra);
        goodput_output(&a)
    };
    let out = run(&["--name", "Not_A_Name"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--name"));
    let out = run(&["--shards", "5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 4 shards"));
}
