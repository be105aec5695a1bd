//! `goodput slurm`: a sweep as a Slurm job array (one task per shard) and a merge
//! job that waits for it (`--dependency=afterany`), written into a folder on a file
//! system every node shares; with `--submit`, submitted through `sbatch`; with
//! `--status DIR`, where each shard stands.
//!
//! Cancelling (`scancel`) reaches goodput as SIGTERM (the task's script `exec`s
//! it): it stops sending, keeps what finished and stops its engines, well within
//! Slurm's `KillWait` (30 s by default) before the SIGKILL.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::{absolute, goodput_exe, sh};
use crate::define::plan::Plan;
use crate::define::profile::Overrides;
use crate::UsageError;

/// The array job's script, in the job folder.
pub const ARRAY_SCRIPT: &str = "goodput-array.sbatch";
/// The merge job's script.
pub const MERGE_SCRIPT: &str = "goodput-merge.sbatch";
/// What `goodput slurm` wrote and submitted, for `--status`.
pub const JOB_FILE: &str = "goodput-slurm.json";

/// What `goodput slurm` was asked to write (and submit).
#[derive(Debug, Clone, PartialEq)]
pub struct SlurmOptions {
    /// The profile TOML.
    pub profile: PathBuf,
    /// Folder for the job scripts, shard reports, logs and the merged report; it
    /// must be on a file system every node sees.
    pub output: PathBuf,
    /// Partition (`#SBATCH --partition`).
    pub partition: Option<String>,
    /// GPUs per task (`#SBATCH --gpus-per-task`).
    pub gpus_per_task: Option<u32>,
    /// Time limit per task, e.g. `04:00:00` (`#SBATCH --time`).
    pub time: Option<String>,
    /// Account to charge (`#SBATCH --account`).
    pub account: Option<String>,
    /// More directives for both jobs, e.g. `#SBATCH --qos=high`.
    pub extra: Vec<String>,
    /// The goodput binary the jobs run (default: this one).
    pub goodput: Option<PathBuf>,
    /// Submit both jobs with `sbatch` and print their ids.
    pub submit: bool,
    /// Number of shards (default: one per engine).
    pub shards: Option<u32>,
    /// The `goodput run` options every shard gets.
    pub sweep: Overrides,
    /// The `goodput merge` flags that record the merged run in the results store
    /// (`--store`, `--tag`, or `--no-store`); a shard is never recorded.
    pub merge_record: Vec<String>,
}

/// What `goodput slurm` wrote (and submitted), kept in the job folder.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobFile {
    /// The profile, absolute.
    pub profile: PathBuf,
    /// The shards of the array.
    pub shards: u32,
    /// The array job's id, once submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_job: Option<String>,
    /// The merge job's id, once submitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_job: Option<String>,
}

/// The shard report of shard `i` in the job folder.
pub fn shard_report(dir: &Path, i: u32) -> PathBuf {
    dir.join(format!("shard-{i}")).join("report.json")
}

/// Runs `goodput slurm --status DIR`.
pub fn status_command(dir: &Path) -> anyhow::Result<i32> {
    print!("{}", status(dir)?);
    Ok(0)
}

/// Runs `goodput slurm`: `plan` is the sweep of `args.profile` with `args.sweep`.
pub fn command(args: &SlurmOptions, plan: &Plan) -> anyhow::Result<i32> {
    let profile = absolute(&args.profile)?;
    let shards = super::shards(plan, args.shards)?;
    let dir = absolute(&args.output)?;
    let scripts = scripts(args, &profile, shards, &dir)?;
    for i in 0..shards {
        let d = dir.join(format!("shard-{i}"));
        std::fs::create_dir_all(&d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let write = |name: &str, text: &str| -> anyhow::Result<()> {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))
    };
    write(ARRAY_SCRIPT, &scripts.array)?;
    write(MERGE_SCRIPT, &scripts.merge)?;
    let mut job = JobFile {
        profile,
        shards,
        array_job: None,
        merge_job: None,
    };
    write(JOB_FILE, &serde_json::to_string_pretty(&job)?)?;
    eprintln!(
        "wrote {} ({} tasks: {} engine(s) of `{}`) and {} in {}",
        ARRAY_SCRIPT,
        shards,
        plan.engines.len(),
        plan.name,
        MERGE_SCRIPT,
        dir.display()
    );
    if !args.submit {
        eprintln!(
            "submit with: cd {d} && id=$(sbatch --parsable {ARRAY_SCRIPT}) && sbatch --dependency=afterany:$id {MERGE_SCRIPT}",
            d = sh(&dir.display().to_string())
        );
        return Ok(0);
    }
    let array = sbatch(&dir, &[ARRAY_SCRIPT])?;
    let merge = sbatch(
        &dir,
        &[&format!("--dependency=afterany:{array}"), MERGE_SCRIPT],
    )?;
    job.array_job = Some(array.clone());
    job.merge_job = Some(merge.clone());
    write(JOB_FILE, &serde_json::to_string_pretty(&job)?)?;
    println!("array job {array} ({shards} tasks), merge job {merge} (after it)");
    println!("watch: squeue -j {array},{merge}   (sacct -j {array} where accounting is on)");
    println!(
        "status: goodput slurm --status {}",
        sh(&dir.display().to_string())
    );
    println!("cancel: scancel {array} {merge}");
    Ok(0)
}

/// Runs `sbatch --parsable ARGS` in `dir`; returns the job id.
fn sbatch(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .current_dir(dir)
        .output()
        .context("cannot run sbatch (is Slurm installed, and this a submit host?)")?;
    if !out.status.success() {
        anyhow::bail!(
            "sbatch {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    // `--parsable` prints `id` or `id;cluster`.
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        anyhow::bail!("sbatch printed no job id: {text:?}");
    }
    Ok(id)
}

/// The two job scripts.
pub struct Scripts {
    /// The array job: one task per shard.
    pub array: String,
    /// The merge job.
    pub merge: String,
}

/// Writes the job scripts of `shards` shards of `profile` into `dir` (all paths
/// absolute).
pub fn scripts(
    args: &SlurmOptions,
    profile: &Path,
    shards: u32,
    dir: &Path,
) -> anyhow::Result<Scripts> {
    let exe = sh(&goodput_exe(&args.goodput)?.display().to_string());
    // `#SBATCH` lines are not read by a shell: the folder goes there unquoted.
    let plain = dir.display().to_string();
    if plain
        .chars()
        .any(|c| c.is_whitespace() || "'\"$\\%".contains(c))
    {
        return Err(UsageError(format!(
            "-o {plain:?}: Slurm's #SBATCH --output cannot take a folder with spaces, quotes, `$`, `\\` or `%`; choose another"
        ))
        .into());
    }
    let d = |p: &str| sh(&dir.join(p).display().to_string());
    let directives = directives(args)?;
    let flags: Vec<String> = args.sweep.argv().iter().map(|a| sh(a)).collect();
    // The job name, plain (an `#SBATCH` line is not read by a shell).
    let name: String = profile
        .file_stem()
        .map_or_else(|| "sweep".into(), |s| s.to_string_lossy().into_owned())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let shard_log = format!("{plain}/shard-%a/slurm.out");
    let merge_log = format!("{plain}/merge.out");
    let flags: String = flags.iter().map(|f| format!(" {f}")).collect();
    let array = format!(
        "#!/bin/bash\n\
         # Written by `goodput slurm`: one array task per shard of {profile}.\n\
         #SBATCH --job-name={job}\n\
         #SBATCH --array=0-{last}\n\
         #SBATCH --ntasks=1\n\
         #SBATCH --output={out}\n\
         {directives}\
         # Each task is one shard: its engines start on this node; its report is\n\
         # durable after every trial, and running the task again resumes it.\n\
         # exec: scancel's SIGTERM reaches goodput, which stops its engines.\n\
         i=$SLURM_ARRAY_TASK_ID\n\
         exec {exe} run {p} --shard \"$i/{shards}\" -o {dir}/shard-$i/report.json{flags}\n",
        profile = profile.display(),
        job = format_args!("goodput-{name}"),
        last = shards - 1,
        out = shard_log,
        p = sh(&profile.display().to_string()),
        dir = sh(&dir.display().to_string()),
    );
    let reports: String = (0..shards)
        .map(|i| format!(" {}", sh(&shard_report(dir, i).display().to_string())))
        .collect();
    let merge = format!(
        "#!/bin/bash\n\
         # Written by `goodput slurm`: merges the shards of {profile} once the array\n\
         # has ended (submitted with --dependency=afterany:<array job>). Shards whose\n\
         # report is missing are listed as missing; the merge is then partial (exit 3).\n\
         #SBATCH --job-name={job}\n\
         #SBATCH --ntasks=1\n\
         #SBATCH --output={out}\n\
         {directives}\
         shards=()\n\
         for f in{reports}; do [ -e \"$f\" ] && shards+=(\"$f\"); done\n\
         exec {exe} merge \"${{shards[@]}}\" -o {merged} --force{record}\n",
        profile = profile.display(),
        job = format_args!("goodput-{name}-merge"),
        out = merge_log,
        merged = d("report.json"),
        record = args
            .merge_record
            .iter()
            .map(|a| format!(" {}", sh(a)))
            .collect::<String>(),
    );
    Ok(Scripts { array, merge })
}

/// The optional `#SBATCH` lines, each checked.
fn directives(args: &SlurmOptions) -> Result<String, UsageError> {
    let word = |flag: &str, v: &str| {
        if v.is_empty()
            || v.chars()
                .any(|c| c.is_whitespace() || c == '#' || c == '\'')
        {
            Err(UsageError(format!("--{flag} {v:?}: give one word")))
        } else {
            Ok(format!("#SBATCH --{flag}={v}\n"))
        }
    };
    let mut out = String::new();
    if let Some(p) = &args.partition {
        out += &word("partition", p)?;
    }
    if let Some(g) = args.gpus_per_task {
        out += &format!("#SBATCH --gpus-per-task={g}\n");
    }
    if let Some(t) = &args.time {
        if t.is_empty()
            || !t
                .chars()
                .all(|c| c.is_ascii_digit() || c == ':' || c == '-')
        {
            return Err(UsageError(format!(
                "--time {t:?}: write HH:MM:SS (or D-HH:MM:SS, or minutes)"
            )));
        }
        out += &format!("#SBATCH --time={t}\n");
    }
    if let Some(a) = &args.account {
        out += &word("account", a)?;
    }
    for e in &args.extra {
        if !e.starts_with("#SBATCH ") || e.contains('\n') {
            return Err(UsageError(format!(
                "--extra {e:?}: give one line that starts with `#SBATCH `"
            )));
        }
        out += e;
        out.push('\n');
    }
    Ok(out)
}

/// One shard's state for `--status`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardStatus {
    /// The shard.
    pub index: u32,
    /// `done`, `running`, `pending`, `failed`, `partial` or `not started`.
    pub state: String,
    /// The node it ran on.
    pub node: Option<String>,
    /// The last line of its log (`shard-I/slurm.out`).
    pub last_line: Option<String>,
}

/// Where each shard of the job folder `dir` stands, as a table.
pub fn status(dir: &Path) -> anyhow::Result<String> {
    let job_path = dir.join(JOB_FILE);
    let job: JobFile =
        serde_json::from_str(&std::fs::read_to_string(&job_path).with_context(|| {
            format!(
                "cannot read {} (written by `goodput slurm`)",
                job_path.display()
            )
        })?)
        .with_context(|| format!("{} is not a goodput slurm job file", job_path.display()))?;
    let queue = job.array_job.as_deref().map(squeue).unwrap_or_default();
    let rows: Vec<ShardStatus> = (0..job.shards)
        .map(|i| shard_status(dir, i, &queue))
        .collect();
    let mut out = format!(
        "{} shards of {}{}\n",
        job.shards,
        job.profile.display(),
        job.array_job
            .as_ref()
            .map_or(String::new(), |a| format!(" (array job {a})"))
    );
    for r in &rows {
        out += &format!(
            "  shard {:>3}  {:<11}  {:<16}  {}\n",
            r.index,
            r.state,
            r.node.as_deref().unwrap_or("-"),
            r.last_line.as_deref().unwrap_or("")
        );
    }
    let merged = dir.join("report.json");
    if merged.exists() {
        out += &format!("merged: {}\n", merged.display());
    }
    Ok(out)
}

/// `squeue` for the array's tasks: task index -> (state, node).
fn squeue(array: &str) -> std::collections::HashMap<u32, (String, String)> {
    let out = Command::new("squeue")
        .args(["-h", "-r", "-j", array, "-o", "%K|%T|%N"])
        .output();
    let Some(out) = out.ok().filter(|o| o.status.success()) else {
        return Default::default();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split('|');
            let i = f.next()?.trim().parse().ok()?;
            Some((
                i,
                (f.next()?.to_string(), f.next().unwrap_or("").to_string()),
            ))
        })
        .collect()
}

fn shard_status(
    dir: &Path,
    i: u32,
    queue: &std::collections::HashMap<u32, (String, String)>,
) -> ShardStatus {
    let report = report::read_report(&shard_report(dir, i)).ok();
    let run = report.as_ref().and_then(|r| r.run.as_ref());
    let node = report
        .as_ref()
        .and_then(|r| r.environment.as_ref())
        .and_then(|e| e.host.as_ref())
        .and_then(|h| h.hostname.clone());
    let queued = queue.get(&i);
    let state = match (queued, run.map(|r| r.status)) {
        (Some((s, _)), _) if s == "PENDING" => "pending",
        (Some(_), _) => "running",
        (None, Some(report::RunStatus::Complete)) => "done",
        (None, Some(report::RunStatus::Partial)) => "partial",
        // A report still `running` with no task in the queue: the task died.
        (None, Some(report::RunStatus::Running)) => "failed",
        (None, None) if dir.join(format!("shard-{i}/slurm.out")).exists() => "failed",
        (None, None) => "not started",
    };
    ShardStatus {
        index: i,
        state: state.to_string(),
        node: node.or_else(|| queued.map(|q| q.1.clone()).filter(|n| !n.is_empty())),
        last_line: last_line(&dir.join(format!("shard-{i}/slurm.out"))),
    }
}

/// The last non-empty line of a log (read from its last 4 KiB), at most 120
/// characters.
fn last_line(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(4096))).ok()?;
    let mut tail = Vec::new();
    f.take(4096).read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    Some(crate::redact::cut_chars(line, 120))
}
