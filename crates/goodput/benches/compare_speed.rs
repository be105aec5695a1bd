//! The cost of one `compare`: a report of three engines at ten load levels (three
//! trials of 32 requests each), with its requests, compared within itself (two
//! candidates against the first: 140 rows, each a Welch t test over the trials'
//! stored figures, then Holm and TOST over the table). Target: well under a second.
//! Run with
//!
//! ```sh
//! cargo bench -p goodput --bench compare_speed
//! ```

use std::time::Instant;

use goodput::define::profile::{Overrides, Profile};
use goodput::judge::compare::{compare, Input, Options};
use goodput::model::predict::simulated::noisy_engine;

fn main() {
    let mut text = String::from(
        "name = \"speed\"\n[slo]\nttft_ms = 200\ntpot_ms = 25\n[load]\nmode = \"concurrency\"\n\
         points = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nrequests_per_trial = 32\ntrials = 3\n\
         warmup_requests = 0\nseed = 1\n[workload]\ninput_tokens = 512\noutput_tokens = 64\n",
    );
    for e in ["a", "b", "c"] {
        text.push_str(&format!(
            "[engines.{e}]\nkind = \"sim\"\npreset = \"vllm-fast-b\"\n"
        ));
    }
    let plan = Profile::parse(&text, "speed")
        .and_then(|p| p.into_plan("speed", &Overrides::default()))
        .unwrap_or_else(|e| panic!("{e}"));
    let (sweep, records) = goodput::model::predict::predict_sweep(&plan, &noisy_engine(1, 1.0));
    let input = Input::with_records("speed.json", sweep.report(&plan), &records);
    let runs = 5;
    // Wall time, and the process's CPU time beside it: on a shared machine the
    // wall time is the machine's as much as compare's, the CPU time is compare's.
    let cpu = || {
        nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
            .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9)
            .unwrap_or(f64::NAN)
    };
    let (mut best, mut best_cpu) = (f64::INFINITY, f64::INFINITY);
    let mut rows = 0;
    for _ in 0..runs {
        let (t, c0) = (Instant::now(), cpu());
        let c = compare(std::slice::from_ref(&input), &Options::default());
        best = best.min(t.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(cpu() - c0);
        rows = c.rows.len();
    }
    println!(
        "compare, 3 engines x 10 load levels ({rows} rows, {} requests): best of {runs} {:.0} ms wall, {:.0} ms CPU (target: well under 1000 ms)",
        records.len(),
        best * 1000.0,
        best_cpu * 1000.0
    );
}
