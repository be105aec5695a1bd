//! `cargo bench -p goodput --bench sharegpt`: what a ShareGPT workload costs at
//! start-up. Reads the file as `into_plan` does (streamed, first two turns of each
//! conversation kept, SHA-256 on the way) `GOODPUT_BENCH_READS` times (default 4)
//! and prints each read's wall time, the pairs kept and the process's peak RSS.
//! The file: `GOODPUT_SHAREGPT`, else the package's copy under ~/.cache/goodput
//! (what `scripts/test.sh` installs).

use std::time::Instant;

use goodput::define::requests::sharegpt::{default_path, Params, ShareGptWorkload};

/// Peak resident set of this process, MB (`VmHWM` in /proc/self/status).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let path = match default_path() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("no ShareGPT file: {e}");
            std::process::exit(1);
        }
    };
    let reads: usize = std::env::var("GOODPUT_BENCH_READS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    println!(
        "file: {} ({:.0} MB); build: {}",
        path.display(),
        bytes as f64 / 1e6,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    println!("| read | seconds | pairs kept | entries |");
    println!("|---:|---:|---:|---:|");
    for i in 1..=reads {
        let start = Instant::now();
        match ShareGptWorkload::read(&path, Params::default(), None) {
            Ok(w) => println!(
                "| {i} | {:.2} | {} | {} |",
                start.elapsed().as_secs_f64(),
                w.pairs.len(),
                w.entries
            ),
            Err(e) => {
                eprintln!("reading failed: {e}");
                std::process::exit(1);
            }
        }
    }
    match peak_rss_mb() {
        Some(mb) => println!("peak RSS: {mb:.0} MB"),
        None => println!("peak RSS: unknown (no /proc/self/status)"),
    }
}
