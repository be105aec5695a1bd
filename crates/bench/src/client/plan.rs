//! `goodput-bench client` flags, and the validated plan they become.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

/// Where the simulator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimMode {
    /// A child `goodput sim` process (the client's CPU and memory are its own).
    Child,
    /// A runtime thread in this process (for tests; CPU figures include the simulator).
    InProcess,
}

/// The flags of `goodput-bench client`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// A short run: streams 1,100,1000, 3 s per run, short sweep and rate runs.
    #[arg(long)]
    pub quick: bool,
    /// Concurrent streams of the fidelity runs.
    #[arg(long, value_name = "LIST")]
    pub streams: Option<String>,
    /// Seconds of sends per closed-loop run (default 10; 3 with --quick).
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// ITLs of the fidelity runs, ms (0: as fast as the simulator can emit).
    #[arg(long, value_name = "LIST", default_value = "20,0")]
    pub itl_ms: String,
    /// TTFT of every request, ms.
    #[arg(long, default_value_t = 50.0)]
    pub ttft_ms: f64,
    /// Output tokens per request of the closed-loop runs.
    #[arg(long, default_value_t = 64)]
    pub tokens: u32,
    /// ITL of the capacity sweep, ms.
    #[arg(long, default_value_t = 1.0)]
    pub sweep_itl_ms: f64,
    /// Skip the capacity sweep.
    #[arg(long)]
    pub no_sweep: bool,
    /// Skip the floor runs (the same runs through a minimal raw-socket client).
    #[arg(long)]
    pub no_floor: bool,
    /// Request rates of the open-loop runs, per second (`none` to skip).
    #[arg(long, value_name = "LIST", default_value = "100,1000")]
    pub rates: String,
    /// Runtime threads of the client.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// Runtime threads of the simulator (`goodput sim --threads`).
    #[arg(long, default_value_t = 1)]
    pub sim_threads: usize,
    /// Do not pin the client and the simulator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Where the simulator runs.
    #[arg(long, value_enum, default_value = "child")]
    pub sim: SimMode,
    /// The `goodput` binary that serves `goodput sim` (default: `goodput` beside this
    /// program, as `cargo build --release -p goodput -p goodput-bench` leaves it).
    #[arg(long, value_name = "PATH")]
    pub sim_bin: Option<PathBuf>,
    /// Stream counts held open at once for the memory figures (`none` to skip); a
    /// count the machine does not allow is named and the largest allowed measured.
    #[arg(long, value_name = "LIST", default_value = "1000,10000,100000")]
    pub hold: String,
    /// The simulator's ITL while streams are held, ms (slow streams).
    #[arg(long, default_value_t = 10_000.0)]
    pub hold_itl_ms: f64,
    /// Output tokens each held stream asks for (none ends while measured).
    #[arg(long, default_value_t = 256)]
    pub hold_tokens: u32,
    /// Also write every request's record (JSON Lines; `engine` names the run, `x` its
    /// streams or rate) to this file.
    #[arg(long, value_name = "PATH")]
    pub records: Option<PathBuf>,
}

/// What `goodput-bench client` will run.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    /// Stream counts of the fidelity runs.
    pub streams: Vec<usize>,
    /// ITLs of the fidelity runs, ms.
    pub itl_ms: Vec<f64>,
    /// TTFT, ms.
    pub ttft_ms: f64,
    /// Tokens per closed-loop request.
    pub tokens: u32,
    /// Sends per closed-loop run.
    pub duration: Duration,
    /// Run the minimal client beside every fidelity run with ITL > 0.
    pub floor: bool,
    /// Sweep ITL, ms; `None`: no sweep.
    pub sweep_itl_ms: Option<f64>,
    /// First stream count of the sweep (doubled each step).
    pub sweep_start: usize,
    /// Largest stream count of the sweep.
    pub sweep_max: usize,
    /// Sends per sweep step.
    pub sweep_duration: Duration,
    /// Request rates of the open-loop runs, per second.
    pub rates: Vec<f64>,
    /// Span of each open-loop run.
    pub rate_duration: Duration,
    /// Tokens per open-loop request.
    pub rate_tokens: u32,
    /// Client runtime threads.
    pub client_threads: usize,
    /// Simulator runtime threads.
    pub sim_threads: usize,
    /// Pin client and simulator to separate CPUs.
    pub pin: bool,
    /// Where the simulator runs.
    pub sim: SimMode,
    /// The binary serving `goodput sim`.
    pub sim_bin: PathBuf,
    /// Where to write the records, if anywhere.
    pub records: Option<PathBuf>,
    /// Stream counts held open for the memory figures.
    pub hold: Vec<usize>,
    /// ITL of the held streams, ms.
    pub hold_itl_ms: f64,
    /// Tokens each held stream asks for.
    pub hold_tokens: u32,
}

fn list<T: std::str::FromStr>(flag: &str, text: &str) -> anyhow::Result<Vec<T>> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    text.split(',')
        .map(|s| {
            s.trim()
                .replace('_', "")
                .parse::<T>()
                .map_err(|_| anyhow::anyhow!("--{flag}: `{s}` is not a number"))
        })
        .collect()
}

fn seconds(flag: &str, s: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| anyhow::anyhow!("--{flag}: {s} is not a positive number of seconds"))
}

impl BenchPlan {
    /// Validates the flags.
    pub fn from_args(a: &BenchArgs) -> anyhow::Result<BenchPlan> {
        let default_streams = if a.quick {
            "1,100,1000"
        } else {
            "1,100,1000,4000"
        };
        let streams: Vec<usize> = list("streams", a.streams.as_deref().unwrap_or(default_streams))?;
        if streams.contains(&0) {
            anyhow::bail!("--streams: 0 streams");
        }
        let itl_ms: Vec<f64> = list("itl-ms", &a.itl_ms)?;
        let rates: Vec<f64> = list("rates", &a.rates)?;
        if itl_ms
            .iter()
            .chain(&rates)
            .chain([&a.ttft_ms, &a.sweep_itl_ms])
            .any(|v| !v.is_finite() || *v < 0.0)
        {
            anyhow::bail!("ITL, TTFT and rates must be finite and not negative");
        }
        let hold: Vec<usize> = list("hold", &a.hold)?;
        if hold.contains(&0)
            || a.hold_tokens < 2
            || !(a.hold_itl_ms.is_finite() && a.hold_itl_ms >= 1000.0)
        {
            anyhow::bail!("--hold needs counts above 0, --hold-tokens at least 2 and --hold-itl-ms at least 1000");
        }
        if rates.contains(&0.0) {
            anyhow::bail!("--rates: a rate of 0");
        }
        if a.tokens == 0 || a.client_threads == 0 || a.sim_threads == 0 {
            anyhow::bail!("--tokens, --client-threads and --sim-threads must be at least 1");
        }
        let duration = seconds(
            "duration",
            a.duration.unwrap_or(if a.quick { 3.0 } else { 10.0 }),
        )?;
        let sim_bin = match &a.sim_bin {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|e| anyhow::anyhow!("cannot find this program's path: {e}"))?
                .with_file_name("goodput"),
        };
        Ok(BenchPlan {
            streams,
            itl_ms,
            ttft_ms: a.ttft_ms,
            tokens: a.tokens,
            duration,
            floor: !a.no_floor,
            sweep_itl_ms: (!a.no_sweep).then_some(a.sweep_itl_ms),
            sweep_start: if a.quick { 64 } else { 16 },
            sweep_max: if a.quick { 1024 } else { 4096 },
            sweep_duration: duration
                .mul_f64(if a.quick { 1.0 } else { 0.5 })
                .max(Duration::from_secs(2)),
            rates,
            rate_duration: duration,
            rate_tokens: 8,
            client_threads: a.client_threads,
            sim_threads: a.sim_threads,
            pin: !a.no_pin,
            sim: a.sim,
            sim_bin,
            records: a.records.clone(),
            hold,
            hold_itl_ms: a.hold_itl_ms,
            hold_tokens: a.hold_tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn plan(argv: &[&str]) -> anyhow::Result<BenchPlan> {
        let cli = Cli::try_parse_from(std::iter::once("bench").chain(argv.iter().copied()))?;
        BenchPlan::from_args(&cli.args)
    }

    #[test]
    fn defaults_and_quick() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.streams, vec![1, 100, 1000, 4000]);
        assert_eq!(p.itl_ms, vec![20.0, 0.0]);
        assert_eq!(p.rates, vec![100.0, 1000.0]);
        assert_eq!(p.duration, Duration::from_secs(10));
        assert_eq!(p.sweep_itl_ms, Some(1.0));
        assert_eq!(p.hold, vec![1000, 10_000, 100_000]);
        assert!(plan(&["--hold", "none"]).unwrap().hold.is_empty());
        assert!(plan(&["--hold", "0"]).is_err());
        let q = plan(&["--quick", "--rates", "none", "--no-sweep"]).unwrap();
        assert_eq!(q.streams, vec![1, 100, 1000]);
        assert!(q.rates.is_empty() && q.sweep_itl_ms.is_none());
        assert_eq!(q.duration, Duration::from_secs(3));
        let s = plan(&["--streams", "2,4_000", "--duration", "0.5"]).unwrap();
        assert_eq!(s.streams, vec![2, 4000]);
        assert_eq!(s.duration, Duration::from_millis(500));
    }

    #[test]
    fn bad_flags_are_errors() {
        assert!(plan(&["--streams", "0"]).is_err());
        assert!(plan(&["--streams", "x"]).is_err());
        assert!(plan(&["--duration", "0"]).is_err());
        assert!(plan(&["--rates", "0"]).is_err());
        assert!(plan(&["--itl-ms", "-1"]).is_err());
        assert!(plan(&["--tokens", "0"]).is_err());
    }
}
