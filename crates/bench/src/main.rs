//! `goodput-bench`: goodput's own benchmarks, kept out of the binary users install
//! (as ripgrep keeps its benchsuite beside the tool).
//!
//! - `goodput-bench client`: how much goodput's load generator and client add to
//!   what they measure, and how much load they drive, against the simulator's fixed
//!   schedule with the timing probe (`docs/bench.md`).
//!
//! The simulator's own capacity is `cargo bench -p goodput-sim --bench streams`; the
//! side-by-side with GuideLLM and AIPerf is `bench/peers.py`.
//!
//! # Layout
//! - [`client`]: the client-fidelity benchmark (plan, runs, figures, floor, tables).
//! - [`sim`]: the simulator under the benchmark, as a child `goodput sim` or in-process.
//! - [`os`]: CPU time, RSS, file-descriptor limit, CPU affinity.
//! - [`heap`]: the allocator, counting live heap bytes.

mod client;
mod heap;
mod os;
mod sim;

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;

/// goodput's own benchmarks; each prints its figures as Markdown.
#[derive(Debug, Parser)]
#[command(name = "goodput-bench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure the client itself against the simulator's fixed schedule: added latency,
    /// TTFT/ITL error, capacity, send lag.
    Client(client::BenchArgs),
}

fn main() {
    let cli = Cli::parse();
    goodput::drive::engine::install_cleanup_hooks();
    let result = match cli.command {
        Command::Client(args) => client::run(args),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    };
    std::process::exit(code);
}
