//! What a run says and writes for vLLM's users: the one header line on where
//! goodput measures differently, and `--save-result`'s vLLM-format file, which
//! never takes the place of a file goodput must not overwrite.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use report::Report;

use super::{CommonArgs, PeerArgs};
use crate::define::options::Execution;
use crate::define::plan::Plan;
use crate::export::vllm::{self as vllm_write, VllmResultOptions};

/// Prints, once, where goodput measures differently from `vllm bench serve`, when
/// the run was asked for in vLLM's terms (a `--url`, or any of its spellings).
pub(super) fn header(plan: &Plan, flags: &CommonArgs) {
    let peer = &flags.peer;
    if flags.quiet || !(peer.target_url().is_some() || peer.uses_vllm_spellings()) {
        return;
    }
    let ttft = if flags.ttft_includes_connect {
        "TTFT includes connection set-up, as vLLM's does (--ttft-includes-connect)"
    } else {
        "TTFT runs from the request's write on an open connection to the kernel's receive time of the first token (vLLM's includes connection set-up and stamps both ends in its own thread; --ttft-includes-connect to count set-up)"
    };
    let warm = match plan.warmup_requests {
        0 => "no warm-up requests (--num-warmups 0)".to_string(),
        n => format!("{n} unmeasured warm-up request(s) before each trial (vLLM: none unless --num-warmups; --num-warmups 0 to match)"),
    };
    eprintln!("note: goodput measures differently from `vllm bench serve`: {ttft}; {warm}; every request is kept (REPORT.requests.jsonl).");
}

/// `--save-result`'s options from the flags.
fn result_options(peer: &PeerArgs) -> anyhow::Result<VllmResultOptions> {
    let v = &peer.vllm;
    let list = |s: &Option<String>, default: &str| -> Vec<String> {
        s.as_deref()
            .unwrap_or(default)
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()
    };
    let mut percentiles = Vec::new();
    for p in list(&v.metric_percentiles, "99") {
        match p.parse::<f64>() {
            Ok(x) if (0.0..=100.0).contains(&x) => percentiles.push(x),
            _ => {
                return Err(crate::UsageError(format!(
                    "--metric-percentiles: `{p}` is not a percentile in 0..=100"
                ))
                .into())
            }
        }
    }
    Ok(VllmResultOptions {
        metrics: list(&v.percentile_metrics, "ttft,tpot,itl"),
        percentiles,
        dir: v.result_dir.clone(),
        filename: v.result_filename.clone(),
    })
}

/// Before the run: `--save-result`'s files (where a sweep's engines and load
/// levels name them in advance; a search's are checked when written) may be
/// written, by [`check_free`]'s rules.
pub(super) fn check_save_result(
    plan: &Plan,
    exec: &Execution,
    peer: &PeerArgs,
) -> anyhow::Result<()> {
    if !peer.vllm.save_result || plan.search.is_some() {
        return Ok(());
    }
    let points: Vec<(&str, f64)> = plan
        .engines
        .keys()
        .flat_map(|e| plan.points.iter().map(move |&x| (e.as_str(), x)))
        .collect();
    let targets = vllm_write::paths(&exec.output, &result_options(peer)?, &points);
    check_free(&targets, exec)
}

/// `--save-result`: the vLLM-format file(s) beside the report, once [`check_free`]
/// allows each.
pub(super) fn save_result(
    report: &Report,
    exec: &Execution,
    peer: &PeerArgs,
) -> anyhow::Result<()> {
    if !peer.vllm.save_result {
        return Ok(());
    }
    let opts = result_options(peer)?;
    let targets = vllm_write::paths(&exec.output, &opts, &vllm_write::points(report));
    check_free(&targets, exec).map_err(|e| {
        anyhow::Error::from(crate::UsageError(format!(
            "{e} (the report is written: {})",
            exec.output.display()
        )))
    })?;
    for path in vllm_write::write(report, &exec.output, &opts)? {
        eprintln!("vLLM-format result: {}", path.display());
    }
    Ok(())
}

/// A vLLM-format result never takes the place of this run's own files (its report,
/// requests file, HTML page or lock: refused even with `--force`), nor of anything
/// but a vLLM-format result goodput wrote unless `--force`, nor of what is not a
/// regular file. The same rules as `-o` (`sweep::output`).
fn check_free(targets: &[PathBuf], exec: &Execution) -> anyhow::Result<()> {
    let output = &exec.output;
    let mut own = vec![
        (output.clone(), "report"),
        (crate::drive::record::records_path(output), "requests file"),
        (crate::sweep::lock::lock_path(output), "lock file"),
    ];
    if exec.html {
        own.push((output.with_extension("html"), "HTML page"));
    }
    let refuse = |text: String| -> anyhow::Result<()> { Err(crate::UsageError(text).into()) };
    for path in targets {
        if let Some((_, what)) = own.iter().find(|(p, _)| same_file(path, p)) {
            return refuse(format!(
                "--save-result would write its vLLM-format result to {}, this run's own {what}: choose another --result-filename or --result-dir",
                path.display()
            ));
        }
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if !meta.is_file() {
            return refuse(format!(
                "--save-result: {} is not a regular file: choose another --result-filename or --result-dir",
                path.display()
            ));
        }
        if !exec.force && !vllm_write::written_by_goodput(path) {
            return refuse(format!(
                "--save-result: {} exists and is not a vLLM-format result goodput wrote; goodput does not overwrite it without being asked: choose another --result-filename or --result-dir, or pass --force",
                path.display()
            ));
        }
    }
    Ok(())
}

/// Whether two paths name one file: the same file when both exist (links
/// followed), else the same name in the same folder.
fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return x.dev() == y.dev() && x.ino() == y.ino();
    }
    let place = |p: &Path| -> Option<PathBuf> {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
        let parent = parent.unwrap_or(Path::new("."));
        let parent = std::fs::canonicalize(parent)
            .or_else(|_| std::path::absolute(parent))
            .ok()?;
        Some(parent.join(p.file_name()?))
    };
    matches!((place(a), place(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::same_file;

    #[test]
    fn one_file_by_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let around = sub.join("..").join("a.json");
        assert!(same_file(&a, &around), "not written yet: the same place");
        std::fs::write(&a, "x").unwrap();
        assert!(same_file(&a, &around));
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        assert!(same_file(&a, &link));
        assert!(!same_file(&a, &dir.path().join("b.json")));
    }
}
