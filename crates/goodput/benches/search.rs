//! The capacity search against a dense grid, on the simulator's presets.
//!
//! For each preset: `goodput search` (concurrency 1..=MAX) and a grid sweep of
//! every concurrency 1..=MAX, both through the same runner, same profile (the
//! built-in quick profile's SLO and workload), same trials per point. The grid's
//! knee is the last load before its first failing one. Prints a Markdown table:
//! knees and trials. Run with
//!
//! ```sh
//! cargo bench -p goodput --bench search            # MAX = 16, 16 requests per trial
//! GOODPUT_BENCH_MAX=32 GOODPUT_BENCH_REQUESTS=32 cargo bench -p goodput --bench search
//! ```
//!
//! With `GOODPUT_BENCH_COVERAGE=N` it measures instead how often the capacity's
//! interval covers another run's capacity: N rate-mode searches of one noisy
//! engine in virtual time (`goodput::model::predict::coverage`), seeds 1..=N, and
//! the share of ordered pairs whose interval holds the other's estimate.

use goodput::define::options::RunOptions;
use goodput::define::plan::Plan;
use goodput::define::profile::{Overrides, Profile, SearchSpec};
use goodput::render::point::point_meets;
use goodput::sweep::run;

const PRESETS: &[&str] = &["vllm-fast-b", "vllm-ngram", "vllm-no-async", "default"];

fn profile(max: u32) -> String {
    let exe = env!("CARGO_BIN_EXE_goodput");
    let mut text = String::from(
        "name = \"search-bench\"\n[slo]\nttft_ms = 100\ntpot_ms = 10\n\
         [load]\nmode = \"concurrency\"\npoints = [1]\nrequests_per_trial = 8\ntrials = 1\n\
         warmup_requests = 1\nrequest_timeout_s = 120\nseed = 1\n\
         [workload]\ninput_tokens = 800\noutput_tokens = 64\n[telemetry]\nsource = \"none\"\n",
    );
    text.push_str(&format!("[search]\nmax = {max}\n"));
    for p in PRESETS {
        text.push_str(&format!(
            "[engines.{p}]\nkind = \"command\"\ncommand = [\"{exe}\", \"sim\", \"--preset\", \"{p}\", \"--port\", \"{{port}}\", \"--time-scale\", \"10\", \"--no-thermal\"]\n"
        ));
    }
    text
}

fn plan(text: &str, engine: &str, requests: u32, search: bool, max: u32) -> Plan {
    let ov = Overrides {
        engines: vec![engine.to_string()],
        requests: Some(requests),
        concurrency: (!search).then(|| (1..=max).map(f64::from).collect()),
        search: search.then(SearchSpec::default),
        ..Default::default()
    };
    Profile::parse(text, "bench")
        .and_then(|p| p.into_plan("bench", &ov))
        .unwrap_or_else(|e| panic!("{e}"))
}

async fn measure(plan: &Plan, out: std::path::PathBuf) -> report::Report {
    let opts = RunOptions::fresh_and_silent(out);
    run(plan, &opts).await.expect("run").0
}

fn main() {
    let env = |k: &str, d: u32| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let coverage = env("GOODPUT_BENCH_COVERAGE", 0);
    if coverage > 0 {
        return measure_coverage(u64::from(coverage));
    }
    let max = env("GOODPUT_BENCH_MAX", 16);
    let requests = env("GOODPUT_BENCH_REQUESTS", 16);
    let text = profile(max);
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    println!("concurrency 1..={max}, {requests} requests per trial, SLO TTFT <= 100 ms, TPOT <= 10 ms for 90% of requests (quick profile, --time-scale 10)\n");
    println!(
        "| preset | knee: search | knee: grid | trials: search | trials: grid | search / grid |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for p in PRESETS {
        let s = rt.block_on(measure(
            &plan(&text, p, requests, true, max),
            dir.path().join(format!("{p}-search.json")),
        ));
        let g = rt.block_on(measure(
            &plan(&text, p, requests, false, max),
            dir.path().join(format!("{p}-grid.json")),
        ));
        let cap = &s.capacity[*p];
        let grid_points = &g.load[*p].points;
        let first_fail = grid_points
            .iter()
            .find(|pt| point_meets(&g, pt) != Some(true));
        let grid_knee = match first_fail {
            Some(f) => grid_points.iter().rfind(|pt| pt.x < f.x).map(|pt| pt.x),
            None => grid_points.last().map(|pt| pt.x),
        };
        let grid_trials: usize = grid_points.iter().map(|pt| pt.trials.len()).sum();
        let show = |v: Option<f64>| v.map_or("none".to_string(), |v| format!("{v}"));
        println!(
            "| {p} | {} | {} | {} | {grid_trials} | {:.0}% |",
            show(cap.max_load),
            show(grid_knee),
            cap.trials,
            100.0 * cap.trials as f64 / grid_trials.max(1) as f64
        );
    }
}

/// Repeated rate-mode searches of one noisy engine, and their pairwise coverage.
fn measure_coverage(runs: u64) {
    use goodput::model::predict::coverage::{engine, pairwise, plan};
    println!("| seed | passing | capacity | 95% interval | probes | trials |");
    println!("|---:|---:|---:|---|---:|---:|");
    let mut intervals = Vec::new();
    for seed in 1..=runs {
        let p =
            plan("rate", (0.1, 16.0), (1500.0, 80.0), 32, seed).unwrap_or_else(|e| panic!("{e}"));
        let Some(c) = goodput::model::predict::coverage::search(&p, &engine(seed)) else {
            println!("| {seed} | no answer | | | | |");
            continue;
        };
        let show = |v: Option<f64>| v.map_or("none".to_string(), |v| format!("{v:.3}"));
        match c.interval {
            Some(i) => {
                println!(
                    "| {seed} | {} | {:.3} | {:.3}–{:.3} | {} | {} |",
                    show(c.passing),
                    i.estimate,
                    i.low,
                    i.high,
                    c.probes,
                    c.trials
                );
                intervals.push(i);
            }
            None => println!(
                "| {seed} | {} | none | | {} | {} |",
                show(c.passing),
                c.probes,
                c.trials
            ),
        }
    }
    let (hits, pairs) = pairwise(&intervals);
    println!(
        "\nintervals holding another run's capacity: {hits} of {pairs} ordered pairs ({:.0}%; about 83% expected of a 95% interval)",
        100.0 * hits as f64 / pairs.max(1) as f64
    );
}
