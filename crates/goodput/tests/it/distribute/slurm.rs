//! `goodput slurm --submit` on a real single-node Slurm cluster
//! (`scripts/slurm-cluster.sh`, from Debian's slurm-wlm and munge): a sweep of
//! simulator engines runs as a job array, the merge job after it, and the merged
//! report holds the whole plan; then a running array is cancelled (`scancel`) and
//! no engine is left. Needs root, `slurmctld`, `slurmd` and `munged`; fails when
//! they are missing unless `GOODPUT_SKIP_SLURM=1` (scripts/test.sh installs them).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::cli::succeeded;
use common::profiles::fixed_sims;
use report::RunStatus;

const VAR: &str = "GOODPUT_SKIP_SLURM";

/// A cluster in a scratch folder, stopped when dropped.
struct Cluster {
    dir: PathBuf,
    conf: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .args(["stop", self.dir.to_str().unwrap()])
            .status();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-cluster.sh")
}

/// Two free TCP ports (for slurmctld and slurmd).
fn free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let b = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// Starts the cluster, or `None` when `GOODPUT_SKIP_SLURM=1`; fails naming what is
/// missing otherwise.
fn cluster(dir: &Path) -> Option<Cluster> {
    if common::require::opted_out(VAR, "this test runs a Slurm cluster") {
        return None;
    }
    for p in ["slurmctld", "slurmd", "sbatch", "munged"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {p}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "this test needs Slurm and munge ({p} is missing): apt-get install -y slurm-wlm munge \
             (scripts/test.sh does), or set {VAR}=1 to skip it"
        );
    }
    let (ctld, slurmd) = free_ports();
    let out = Command::new("bash")
        .arg(script())
        .args(["start", dir.to_str().unwrap()])
        .env("GOODPUT_SLURM_PORT", ctld.to_string())
        .env("GOODPUT_SLURMD_PORT", slurmd.to_string())
        .output()
        .unwrap();
    let c = Cluster {
        dir: dir.to_path_buf(),
        conf: dir.join("slurm.conf").display().to_string(),
    };
    assert!(
        out.status.success(),
        "scripts/slurm-cluster.sh start failed ({}): {}{}\nor set {VAR}=1 to skip this test",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(c)
}

/// Three simulators, two load levels; the test replaces `REQUESTS`.
fn sweep_profile() -> String {
    fixed_sims(
        "slurm-sim",
        "[slo]\nttft_ms = 500\ntpot_ms = 50\n[load]\npoints = [1, 2]\nrequests_per_trial = REQUESTS\ntrials = 1\nrequest_timeout_s = 60\n",
        5,
        &["a", "b", "c"],
    )
}

impl Cluster {
    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("SLURM_CONF", &self.conf)
            .stdin(std::process::Stdio::null());
        c
    }

    /// `goodput slurm PROFILE -o DIR --submit --goodput GOODPUT` with `extra`
    /// flags, its jobs and engines carrying `marker`; what it said (the job ids in
    /// it: [`job_ids`]).
    fn submit(&self, profile: &Path, dir: &Path, marker: &str, extra: &[&str]) -> String {
        let out = self
            .cmd(env!("CARGO_BIN_EXE_goodput"))
            .args([
                "slurm",
                profile.to_str().unwrap(),
                "-o",
                dir.to_str().unwrap(),
                "--submit",
            ])
            .args(["--goodput", env!("CARGO_BIN_EXE_goodput")])
            .args(extra)
            // Slurm passes the submitter's environment on: the jobs and their
            // engines carry the marker.
            .env("GOODPUT_TEST_MARKER", marker)
            .output()
            .unwrap();
        succeeded(&out, "goodput slurm --submit")
    }

    /// Job ids (of `ids`) still in the queue.
    fn queued(&self, ids: &[&str]) -> Vec<String> {
        let out = self
            .cmd("squeue")
            .args(["-h", "-o", "%A %j %T", "-j", &ids.join(",")])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// The ids in `array job 12 (3 tasks), merge job 13 (after it)`.
fn job_ids(text: &str) -> (String, String) {
    let words: Vec<&str> = text.split_whitespace().collect();
    let id = |kind: &str| {
        words
            .windows(3)
            .find(|w| w[0] == kind && w[1] == "job")
            .map(|w| w[2].trim_end_matches(',').to_string())
            .filter(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()))
            .unwrap_or_else(|| panic!("no {kind} job id in {text:?}"))
    };
    (id("array"), id("merge"))
}

/// Waits (at most `limit`) for `done`, polling every 200 ms.
fn wait(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Live processes whose environment holds `GOODPUT_TEST_MARKER=marker`.
fn marked(marker: &str) -> Vec<goodput::drive::engine::process::ProcEntry> {
    common::procs::marked(&format!("GOODPUT_TEST_MARKER={marker}"))
}

fn profile(dir: &Path, requests: u32) -> PathBuf {
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        sweep_profile().replace("REQUESTS", &requests.to_string()),
    )
    .unwrap();
    p
}

#[test]
fn a_sweep_runs_as_a_slurm_array_and_merges_and_scancel_leaves_no_engine() {
    let scratch = tempfile::tempdir().unwrap();
    let Some(cluster) = cluster(&scratch.path().join("cluster")) else {
        return;
    };

    // A sweep of 3 engines x 2 levels in 4 shards, merged after the array.
    let jobs = scratch.path().join("sweep");
    let p = profile(scratch.path(), 3);
    let marker = format!("slurm-sweep-{}", std::process::id());
    let text = cluster.submit(&p, &jobs, &marker, &["--shards", "4"]);
    let (array, merge) = job_ids(&text);
    let (array, merge) = (array.as_str(), merge.as_str());
    assert!(
        text.contains("(4 tasks)") && text.contains("squeue -j"),
        "{text}"
    );
    wait(
        Duration::from_secs(240),
        "the array and the merge job",
        || cluster.queued(&[array, merge]).is_empty(),
    );
    let merged = jobs.join("report.json");
    let merge_log = std::fs::read_to_string(jobs.join("merge.out")).unwrap_or_default();
    let m = report::read_report(&merged).unwrap_or_else(|e| panic!("{e}\nmerge.out:\n{merge_log}"));
    let run = m.run.as_ref().unwrap();
    assert_eq!(
        run.status,
        RunStatus::Complete,
        "{:?}\n{merge_log}",
        run.reason
    );
    // Against the plan: its fingerprints, every engine and level, every request.
    let plan = goodput::define::profile::Profile::load(&p)
        .unwrap()
        .into_plan("p", &Default::default())
        .unwrap();
    assert_eq!(run.fingerprints, plan.fingerprints());
    assert_eq!(m.load.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    for (name, e) in &m.load {
        assert_eq!(
            e.points.iter().map(|p| p.x).collect::<Vec<_>>(),
            plan.points,
            "{name}"
        );
        for pt in &e.points {
            assert_eq!(pt.completed, [3], "{name} x={}", pt.x);
        }
    }
    let info = run.merged.as_ref().unwrap();
    assert_eq!(info.count, 4);
    assert!(info.missing.is_empty());
    let records =
        goodput::drive::record::read_records(&goodput::drive::record::records_path(&merged))
            .unwrap();
    assert_eq!(records.len(), 3 * 2 * 3);
    // --status: every shard done, on this node.
    let status = cluster
        .cmd(env!("CARGO_BIN_EXE_goodput"))
        .args(["slurm", "--status", jobs.to_str().unwrap()])
        .output()
        .unwrap();
    let st = String::from_utf8_lossy(&status.stdout);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(st.matches(" done ").count(), 4, "{st}");
    assert!(st.contains(host.trim()), "{st}");
    assert!(
        marked(&marker).is_empty(),
        "left behind: {:?}",
        marked(&marker)
    );

    // A long sweep, cancelled while its engines run.
    let jobs = scratch.path().join("cancelled");
    let p = profile(scratch.path(), 5000);
    let marker = format!("slurm-cancel-{}", std::process::id());
    let (array, merge) = job_ids(&cluster.submit(&p, &jobs, &marker, &["--time", "00:10:00"]));
    wait(Duration::from_secs(120), "running engines", || {
        marked(&marker)
            .iter()
            .any(|p| p.cmdline().iter().any(|a| a == "sim"))
    });
    // Once a trial is under way (its report lists the engine).
    wait(Duration::from_secs(60), "a shard report", || {
        (0..3).any(|i| jobs.join(format!("shard-{i}/report.json")).exists())
    });
    let out = cluster
        .cmd("scancel")
        .args([&array, &merge])
        .output()
        .unwrap();
    succeeded(&out, "scancel");
    wait(
        Duration::from_secs(60),
        "every engine to exit after scancel",
        || marked(&marker).is_empty(),
    );
    wait(
        Duration::from_secs(30),
        "the cancelled jobs to leave the queue",
        || cluster.queued(&[&array, &merge]).is_empty(),
    );
    // A shard that was running says it was stopped by the signal, and kept its data.
    let stopped: Vec<report::Report> = (0..3)
        .filter_map(|i| report::read_report(&jobs.join(format!("shard-{i}/report.json"))).ok())
        .collect();
    assert!(!stopped.is_empty());
    for r in &stopped {
        let run = r.run.as_ref().unwrap();
        assert_eq!(run.status, RunStatus::Partial, "{:?}", run.reason);
        assert!(
            run.reason.as_deref().unwrap_or("").contains("SIGTERM"),
            "{:?}",
            run.reason
        );
    }
    drop(cluster);
}

#[test]
fn job_scripts_carry_the_directives_and_bad_ones_are_usage_errors() {
    let scratch = tempfile::tempdir().unwrap();
    let p = profile(scratch.path(), 3);
    let jobs = scratch.path().join("jobs");
    let out = common::cli::goodput_output(&[
        "slurm",
        p.to_str().unwrap(),
        "-o",
        jobs.to_str().unwrap(),
        "--partition",
        "gpu",
        "--gpus-per-task",
        "1",
        "--time",
        "04:00:00",
        "--account",
        "lab",
        "--extra",
        "#SBATCH --qos=high",
        "--concurrency",
        "1,8",
        "--store",
        "/shared/goodput.sqlite",
        "--tag",
        "nightly",
    ]);
    succeeded(&out, "goodput slurm");
    let array = std::fs::read_to_string(jobs.join("goodput-array.sbatch")).unwrap();
    for want in [
        "#SBATCH --array=0-2\n",
        "/jobs/shard-%a/slurm.out\n",
        "#SBATCH --partition=gpu\n",
        "#SBATCH --gpus-per-task=1\n",
        "#SBATCH --time=04:00:00\n",
        "#SBATCH --account=lab\n",
        "#SBATCH --qos=high\n",
        "--shard \"$i/3\"",
        "--concurrency '1,8'",
        "exec ",
    ] {
        assert!(array.contains(want), "{want:?} not in\n{array}");
    }
    let merge = std::fs::read_to_string(jobs.join("goodput-merge.sbatch")).unwrap();
    assert!(
        merge.contains(" merge ") && merge.contains("shard-2/report.json"),
        "{merge}"
    );
    assert!(
        merge.contains(" --force --store /shared/goodput.sqlite --tag nightly\n"),
        "the merge records the run where asked: {merge}"
    );
    for script in ["goodput-array.sbatch", "goodput-merge.sbatch"] {
        let syntax = Command::new("bash")
            .arg("-n")
            .arg(jobs.join(script))
            .output()
            .unwrap();
        succeeded(&syntax, &format!("bash -n {script}"));
    }
    // Slurm cannot create the log folders: they are there before submission.
    assert!(jobs.join("shard-2").is_dir());
    // Not submitted: --status says no shard started.
    let st = common::cli::goodput_output(&["slurm", "--status", jobs.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&st.stdout)
            .matches("not started")
            .count(),
        3
    );

    for (flag, value, why) in [
        ("--time", "4 hours", "HH:MM:SS"),
        ("--extra", "--qos=high", "#SBATCH "),
        ("--partition", "a b", "one word"),
        ("--shards", "7", "at most 6 shards"),
    ] {
        let out = common::cli::goodput_output(&[
            "slurm",
            p.to_str().unwrap(),
            "-o",
            jobs.to_str().unwrap(),
            flag,
            value,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(why), "{flag} {value}: {err}");
    }
}

/// Two tasks of one job step (`srun -n 2 goodput run --load-shard
/// $SLURM_PROCID/$SLURM_NTASKS`) share one load level against one simulator and
/// meet at a start barrier in the shared folder; merged, the point reads like a
/// single client's at the same total load.
#[test]
fn two_tasks_of_one_job_step_share_a_load_level_and_merge_into_one_point() {
    use common::load_share::{profile, same_point, start_sim};
    let scratch = tempfile::tempdir().unwrap();
    let Some(cluster) = cluster(&scratch.path().join("cluster")) else {
        return;
    };
    let sim = start_sim();
    let dir = scratch.path().join("load");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("p.toml");
    std::fs::write(&p, profile(&sim.url, "points = [8]")).unwrap();
    let exe = env!("CARGO_BIN_EXE_goodput");
    let single = dir.join("single.json");
    let out = cluster
        .cmd(exe)
        .args(["run", p.to_str().unwrap(), "-o", single.to_str().unwrap()])
        .args(["--quiet", "--no-html"])
        .output()
        .unwrap();
    succeeded(&out, "goodput");
    let d = dir.to_str().unwrap();
    let task = format!(
        "exec {exe} run {d}/p.toml --quiet --no-html \
         --load-shard $SLURM_PROCID/$SLURM_NTASKS --load-barrier {d}/barrier \
         -o {d}/client$SLURM_PROCID/report.json"
    );
    let out = cluster
        .cmd("timeout")
        .args([
            "180", "srun", "-n", "2", "--time", "00:05:00", "bash", "-c", &task,
        ])
        .output()
        .unwrap();
    succeeded(&out, "srun -n 2");
    let merged = dir.join("merged.json");
    let out = cluster
        .cmd(exe)
        .args(["merge", &format!("{d}/client0/report.json")])
        .args([
            &format!("{d}/client1/report.json"),
            "-o",
            merged.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    succeeded(&out, "goodput");
    let r = |p: &Path| report::read_report(p).unwrap();
    same_point(&r(&single), &r(&merged));
}
