//! `goodput k8s`: the same shards as a Kubernetes Indexed Job. One completion index
//! per shard (`JOB_COMPLETION_INDEX` is the shard), the profile in a ConfigMap,
//! results on a volume claim every pod mounts; the merge is a second Job to apply
//! once the first has finished (Kubernetes has no dependency between Jobs):
//!
//! ```sh
//! kubectl apply -f goodput-job.yaml
//! kubectl wait --for=condition=complete --timeout=24h job/NAME
//! kubectl apply -f goodput-merge.yaml
//! ```

use std::path::PathBuf;

use anyhow::Context;
use serde_json::{json, Value};

use super::{absolute, sh, yaml::to_yaml};
use crate::define::plan::Plan;
use crate::define::profile::Overrides;
use crate::UsageError;

/// The Indexed Job (with its ConfigMap).
pub const JOB_FILE: &str = "goodput-job.yaml";
/// The merge Job.
pub const MERGE_FILE: &str = "goodput-merge.yaml";

/// What `goodput k8s` was asked to write.
#[derive(Debug, Clone, PartialEq)]
pub struct K8sOptions {
    /// The profile TOML (copied into a ConfigMap).
    pub profile: PathBuf,
    /// Folder to write the manifests into.
    pub output: PathBuf,
    /// Container image with goodput (and the engines) installed.
    pub image: String,
    /// Name of the Job (and prefix of the ConfigMap and merge Job).
    pub name: String,
    /// Namespace.
    pub namespace: Option<String>,
    /// PersistentVolumeClaim (ReadWriteMany) the pods write their reports to.
    pub results_claim: String,
    /// GPUs per pod (`nvidia.com/gpu`); 0 for none.
    pub gpus_per_pod: u32,
    /// Number of shards (default: one per engine).
    pub shards: Option<u32>,
    /// The `goodput run` options every shard gets.
    pub sweep: Overrides,
    /// The `goodput merge` flags that record the merged run in the results store
    /// (`--store`, `--tag`, or `--no-store`); a shard is never recorded.
    pub merge_record: Vec<String>,
}

/// Runs `goodput k8s`.
/// `plan` is the sweep of `args.profile` with `args.sweep`.
pub fn command(args: &K8sOptions, plan: &Plan) -> anyhow::Result<i32> {
    let profile = absolute(&args.profile)?;
    let shards = super::shards(plan, args.shards)?;
    let text = std::fs::read_to_string(&profile)
        .with_context(|| format!("cannot read {}", profile.display()))?;
    let (job, merge) = manifests(args, &text, shards)?;
    let dir = &args.output;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (name, docs) in [(JOB_FILE, &job), (MERGE_FILE, &merge)] {
        let p = dir.join(name);
        std::fs::write(&p, documents(docs))
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    eprintln!(
        "wrote {} (an Indexed Job of {shards} pods: {} engine(s) of `{}`) and {} in {}",
        JOB_FILE,
        plan.engines.len(),
        plan.name,
        MERGE_FILE,
        dir.display()
    );
    eprintln!(
        "run with: kubectl apply -f {j} && kubectl wait --for=condition=complete --timeout=24h job/{n} && kubectl apply -f {m}",
        j = sh(&dir.join(JOB_FILE).display().to_string()),
        n = args.name,
        m = sh(&dir.join(MERGE_FILE).display().to_string()),
    );
    Ok(0)
}

/// Manifests as a YAML stream.
fn documents(docs: &[Value]) -> String {
    docs.iter()
        .map(|d| format!("---\n{}", to_yaml(d)))
        .collect()
}

/// A DNS-1123 name: lower-case letters, digits and `-`, at most 52 characters
/// (room for the `-merge` and `-profile` suffixes within 63).
fn check_name(name: &str) -> Result<(), UsageError> {
    let ok = !name.is_empty()
        && name.len() <= 52
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(UsageError(format!(
            "--name {name:?}: a Kubernetes name is lower-case letters, digits and `-`, at most 52 here"
        )))
    }
}

/// The Indexed Job's documents (ConfigMap, Job) and the merge Job's.
pub fn manifests(
    args: &K8sOptions,
    profile_text: &str,
    shards: u32,
) -> Result<(Vec<Value>, Vec<Value>), UsageError> {
    check_name(&args.name)?;
    let name = &args.name;
    let mut resources = json!({});
    if args.gpus_per_pod > 0 {
        resources = json!({"limits": {"nvidia.com/gpu": args.gpus_per_pod}});
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(args, format!("{name}-profile")),
        "data": {"profile.toml": profile_text}
    });
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(args, name.clone()),
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": shards,
            // A failed pod runs again and resumes its shard's report.
            "backoffLimit": shards.saturating_mul(2),
            "template": {
                "metadata": {"labels": {"goodput/sweep": name}},
                "spec": pod(args, shard_script(args, shards), resources)
            }
        }
    });
    let merge_job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta(args, format!("{name}-merge")),
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"goodput/sweep": name}},
                "spec": pod(args, merge_script(args, shards), json!({}))
            }
        }
    });
    Ok((vec![config, job], vec![merge_job]))
}

/// A document's `metadata`: its name, the sweep's labels, the namespace if given.
fn meta(args: &K8sOptions, n: String) -> Value {
    let mut m = json!({"name": n, "labels": {"app.kubernetes.io/name": "goodput", "goodput/sweep": args.name}});
    if let Some(ns) = &args.namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// What each pod of the Indexed Job runs: its shard, into its own report.
fn shard_script(args: &K8sOptions, shards: u32) -> String {
    let flags: String = args
        .sweep
        .argv()
        .iter()
        .map(|a| format!(" {}", sh(a)))
        .collect();
    format!(
        "exec goodput run /etc/goodput/profile.toml --shard \"$JOB_COMPLETION_INDEX/{shards}\" \
         -o \"/results/shard-$JOB_COMPLETION_INDEX/report.json\"{flags}"
    )
}

/// What the merge pod runs: a merge of the shard reports that exist.
fn merge_script(args: &K8sOptions, shards: u32) -> String {
    let reports: String = (0..shards)
        .map(|i| format!(" /results/shard-{i}/report.json"))
        .collect();
    format!(
        "shards=''; for f in{reports}; do [ -e \"$f\" ] && shards=\"$shards $f\"; done; \
         exec goodput merge $shards -o /results/report.json --force{record}",
        record = args
            .merge_record
            .iter()
            .map(|a| format!(" {}", sh(a)))
            .collect::<String>()
    )
}

/// A pod running `script` in goodput's image, the profile and the results volume
/// mounted.
fn pod(args: &K8sOptions, script: String, resources: Value) -> Value {
    json!({
        "restartPolicy": "Never",
        // SIGTERM, then goodput stops its engines within this.
        "terminationGracePeriodSeconds": 60,
        "containers": [{
            "name": "goodput",
            "image": args.image,
            "command": ["/bin/sh", "-c", script],
            "resources": resources,
            "volumeMounts": [
                {"name": "profile", "mountPath": "/etc/goodput", "readOnly": true},
                {"name": "results", "mountPath": "/results"}
            ]
        }],
        "volumes": [
            {"name": "profile", "configMap": {"name": format!("{}-profile", args.name)}},
            {"name": "results", "persistentVolumeClaim": {"claimName": args.results_claim}}
        ]
    })
}
