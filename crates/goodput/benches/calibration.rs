//! How often `compare` is wrong in virtual time (the friendly setting; the
//! calibration where users are, on real clocks against noisy servers, is
//! `bench/calibration.py`): A/A comparisons (the same simulated
//! engine, two seeds of its noise) and known-effect comparisons (every decode
//! cost 10% higher) on the simulator's engine model in virtual time, each a
//! 28-row table (four load levels, seven metrics) at `compare`'s defaults.
//! Prints the false-positive rate per table (target ≤ 5%), the power at 10% on
//! median TPOT (target ≥ 80%) and the time of one comparison. Run with
//!
//! ```sh
//! cargo bench -p goodput --bench calibration
//! GOODPUT_CAL_TABLES=200 GOODPUT_CAL_TRIALS=3   # default: 2 trials cargo bench -p goodput --bench calibration
//! ```

use std::time::Instant;

use goodput::judge::compare::{Direction, Options};
use goodput::model::predict::simulated::{ab, calibration_plan, noisy_engine};

fn env(k: &str, d: u32) -> u32 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn main() {
    let tables = env("GOODPUT_CAL_TABLES", 100);
    let trials = env("GOODPUT_CAL_TRIALS", 2);
    let requests = env("GOODPUT_CAL_REQUESTS", 32);
    let plan = calibration_plan(trials, requests).unwrap_or_else(|e| panic!("{e}"));
    let opts = Options::default();
    let (mut false_tables, mut false_rows, mut rows_seen) = (0u32, 0usize, 0usize);
    let mut compare_s = 0.0;
    for i in 0..tables {
        let seed = u64::from(i);
        let t = Instant::now();
        let c = ab(
            &plan,
            &noisy_engine(2 * seed + 1, 1.0),
            &noisy_engine(2 * seed + 2, 1.0),
            &Options { seed, ..opts },
        );
        compare_s += t.elapsed().as_secs_f64();
        let wrong = c.rows.iter().filter(|r| r.significant).count();
        false_rows += wrong;
        rows_seen += c.rows.len();
        false_tables += u32::from(wrong > 0);
    }
    let effect_tables = (tables / 2).max(1);
    let (mut hit_rows, mut tpot_rows, mut all_levels, mut worse_conclusions) =
        (0usize, 0usize, 0u32, 0u32);
    let mut needed = Vec::new();
    for i in 0..effect_tables {
        let seed = 10_000 + u64::from(i);
        let c = ab(
            &plan,
            &noisy_engine(2 * seed + 1, 1.0),
            &noisy_engine(2 * seed + 2, 1.1),
            &Options { seed, ..opts },
        );
        let tpot: Vec<_> = c
            .rows
            .iter()
            .filter(|r| r.metric == "median TPOT ms")
            .collect();
        let hits = tpot
            .iter()
            .filter(|r| r.direction == Direction::Worse)
            .count();
        hit_rows += hits;
        tpot_rows += tpot.len();
        all_levels += u32::from(hits == tpot.len() && hits > 0);
        worse_conclusions += u32::from(c.conclusion.starts_with("sim (a.json) is better"));
        needed.extend(tpot.iter().filter_map(|r| r.trials_needed));
    }
    let pct = |a: f64, b: f64| 100.0 * a / b.max(1.0);
    println!("| measure | value | target |");
    println!("|---|---|---|");
    println!(
        "| A/A tables with any better/worse row | {:.1}% ({false_tables} of {tables}) | ≤ 5% |",
        pct(f64::from(false_tables), f64::from(tables))
    );
    println!(
        "| A/A rows called better/worse | {:.2}% ({false_rows} of {rows_seen}) | |",
        pct(false_rows as f64, rows_seen as f64)
    );
    println!("| power: median TPOT 10% slower called worse, per load level | {:.1}% ({hit_rows} of {tpot_rows}) | ≥ 80% |", pct(hit_rows as f64, tpot_rows as f64));
    println!(
        "| power: called worse at every load level | {:.1}% ({all_levels} of {effect_tables}) | |",
        pct(f64::from(all_levels), f64::from(effect_tables))
    );
    println!("| conclusion names the faster engine | {:.1}% ({worse_conclusions} of {effect_tables}) | |", pct(f64::from(worse_conclusions), f64::from(effect_tables)));
    if !needed.is_empty() {
        needed.sort_unstable();
        println!(
            "| trials a side to detect 2% (median over missed rows) | {} | |",
            needed[needed.len() / 2]
        );
    }
    println!(
        "| one 28-row comparison | {:.1} ms | |",
        1000.0 * compare_s / f64::from(tables.max(1))
    );
    println!("\n{tables} A/A and {effect_tables} known-effect tables; {trials} trials of {requests} requests a side; defaults: 95%, Holm, --min-effect 2%.");
}
