//! One load level shared by two clients (`run --load-shard I/2`, two processes
//! started by the test, meeting at a start barrier) against one simulator, merged
//! by `goodput merge` into one point whose figures are a single client's at the
//! same total load: the same completed count, every request index once, median
//! TTFT and TPOT and throughput close. Mixed, duplicate and missing load shards
//! are refused, and more clients than concurrency is a usage error naming both.

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::cli::{goodput_child, goodput_output, text, Scratch};
use common::load_share::{profile, same_point, start_sim};
use report::Report;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Waits for a child, at most `limit`; kills it past that.
fn wait(mut child: Child, limit: Duration, what: &str) {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "{what}: {st:?}");
            return;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ok(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
}

/// Runs the profile once as one client and once as two load shards, merges the
/// shards; returns (single, merged, merged records' indexes, the scratch folder).
fn single_and_merged(load: &str) -> (Report, Report, Vec<u32>, Scratch) {
    let sim = start_sim();
    let dir = Scratch::new();
    let p = dir.write("p.toml", &profile(&sim.url, load));
    let single = dir.path("single.json");
    ok(
        &goodput_output(&["run", s(&p), "-o", s(&single), "--quiet", "--no-html"]),
        "single client",
    );
    let barrier = dir.path("barrier");
    let children: Vec<Child> = (0..2)
        .map(|i| {
            goodput_child()
                .args(["run", s(&p), "--quiet", "--no-html"])
                .args(["--load-shard", &format!("{i}/2")])
                .args(["--load-barrier", s(&barrier)])
                .args(["-o", s(&dir.path(&format!("client{i}/report.json")))])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        wait(c, Duration::from_secs(120), &format!("load shard {i}/2"));
    }
    let merged = dir.path("merged.json");
    let out = goodput_output(&[
        "merge",
        s(&dir.path("client1/report.json")),
        s(&dir.path("client0/report.json")),
        "-o",
        s(&merged),
        "--no-html",
    ]);
    ok(&out, "merge");
    let records = std::fs::read_to_string(merged.with_extension("requests.jsonl")).unwrap();
    let indexes = records
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["index"]
                .as_u64()
                .unwrap() as u32
        })
        .collect();
    let r = |p: &Path| report::read_report(p).unwrap();
    (r(&single), r(&merged), indexes, dir)
}

#[test]
fn two_clients_at_concurrency_8_read_like_one() {
    let (single, merged, mut idx, dir) = single_and_merged("points = [8]");
    same_point(&single, &merged);
    idx.sort_unstable();
    assert_eq!(idx, (0..48).collect::<Vec<u32>>(), "every request once");
    let c0 = report::read_report(&dir.path("client0/report.json")).unwrap();
    let slice = c0.run.as_ref().unwrap().load_shard.clone().unwrap();
    assert_eq!((slice.index, slice.count), (0, 2));
    assert_eq!(c0.load["one"].points[0].completed, vec![24]);
    // The pooled trials' energy is client 0's GPU energy (and its note).
    let e = merged.load["one"].points[0]
        .energy
        .as_ref()
        .expect("energy");
    let e0 = c0.load["one"].points[0].energy.as_ref().unwrap();
    assert_eq!((&e.mean_power_w, &e.note), (&e0.mean_power_w, &e0.note));

    // Refused: a client twice, a client missing, a whole run among load shards.
    let c0p = dir.path("client0/report.json");
    let c1p = dir.path("client1/report.json");
    let single_p = dir.path("single.json");
    let merge = |files: &[&Path]| {
        let mut args = vec!["merge"];
        args.extend(files.iter().map(|f| s(f)));
        let o = dir.path("bad.json");
        args.extend(["-o", s(&o), "--no-html", "--force"]);
        let out = goodput_output(&args);
        assert!(!out.status.success(), "{files:?} merged");
        text(&out.stderr)
    };
    let twice = merge(&[&c0p, &c0p, &c1p]);
    assert!(twice.contains("given twice"), "{twice}");
    let missing = merge(&[&c0p]);
    assert!(missing.contains("1/2 missing"), "{missing}");
    let mixed = merge(&[&c0p, &single_p]);
    assert!(mixed.contains("not a load shard report"), "{mixed}");
}

#[test]
fn two_clients_at_rate_40_read_like_one() {
    let (single, merged, idx, _dir) = single_and_merged("mode = \"rate\"\npoints = [40]");
    same_point(&single, &merged);
    assert_eq!(idx.len(), 48);
}

#[test]
fn more_clients_than_concurrency_is_a_usage_error_naming_both() {
    let dir = Scratch::new();
    let p = dir.write("p.toml", &profile("http://127.0.0.1:9", "points = [2, 8]"));
    let out = goodput_output(&[
        "run",
        s(&p),
        "--load-shard",
        "0/3",
        "-o",
        s(&dir.path("r.json")),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("concurrency 2") && err.contains("3 clients"),
        "{err}"
    );
}
