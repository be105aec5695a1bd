//! The simulator as a user starts it (`goodput sim ... --port 0`, its start-up
//! lines kept), and load shards (`run --load-shard I/N`) against one: the profile, and the check that a merged point reads like a
//! single client's at the same total load (tests/it/distribute/load_shard.rs, tests/it/distribute/slurm.rs).

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use report::Report;

use super::cli::goodput_child;

/// The simulator, started as a user starts it (`goodput sim --port 0`); killed by
/// its id when dropped.
pub struct Sim {
    child: Child,
    pub url: String,
    /// The start-up lines it printed, up to the one that says where it listens.
    pub banner: Vec<String>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `fixed` preset.
pub fn start_sim() -> Sim {
    start_sim_with(&["--preset", "fixed"])
}

/// `goodput sim ARGS --port 0`.
pub fn start_sim_with(args: &[&str]) -> Sim {
    let mut child = goodput_child()
        .arg("sim")
        .args(args)
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("goodput sim starts");
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut url = None;
    let mut banner = Vec::new();
    for line in out.lines().take(20) {
        let line = line.unwrap();
        banner.push(line.clone());
        if let Some(rest) = line.split("listening on ").nth(1) {
            url = rest.split_whitespace().next().map(str::to_string);
            break;
        }
    }
    let url = url.unwrap_or_else(|| panic!("the simulator says where it listens: {banner:?}"));
    Sim { child, url, banner }
}

pub fn profile(url: &str, load: &str) -> String {
    format!(
        r#"
name = "load-shard"
[slo]
ttft_ms = 2000
tpot_ms = 200
[load]
{load}
requests_per_trial = 48
trials = 1
request_timeout_s = 30
[workload]
input_tokens = 32
output_tokens = 16
[engines.one]
url = "{url}"
"#
    )
}

fn close(a: Option<f64>, b: Option<f64>, rel: f64, abs: f64, what: &str) {
    let (a, b) = (a.expect(what), b.expect(what));
    assert!(
        (a - b).abs() <= abs + rel * a.abs().max(b.abs()),
        "{what}: single {a}, merged {b}"
    );
}

/// Same completed count; medians within 25% (+2 ms), throughput within 30%: the
/// simulator's figures depend on the batch, which the split leaves the same, and
/// the tolerance covers scheduling jitter of two processes on a loaded machine.
pub fn same_point(single: &Report, merged: &Report) {
    let a = &single.load["one"].points[0];
    let b = &merged.load["one"].points[0];
    assert_eq!(a.x, b.x);
    assert_eq!(a.completed, b.completed);
    assert_eq!(b.completed, vec![48]);
    close(
        a.median_ttft_ms.median,
        b.median_ttft_ms.median,
        0.25,
        2.0,
        "median TTFT",
    );
    close(
        a.median_tpot_ms.median,
        b.median_tpot_ms.median,
        0.25,
        2.0,
        "median TPOT",
    );
    close(
        a.output_throughput.median,
        b.output_throughput.median,
        0.3,
        0.0,
        "throughput",
    );
    let run = merged.run.as_ref().unwrap();
    assert!(run.load_shard.is_none());
    assert_eq!(run.merged.as_ref().unwrap().shards.len(), 2);
    assert_eq!(run.fingerprints, single.run.as_ref().unwrap().fingerprints);
}
