//! `goodput-bench client`: how much the client itself adds to what it measures, and
//! how much load it can drive, against the simulator's fixed schedule.
//!
//! The simulator runs in fixed-schedule probe mode: every request gets exactly the
//! configured TTFT and ITL, and every chunk carries the CLOCK_MONOTONIC time it was
//! written (`goodput_probe_ns`). goodput's load generator drives it, and from the
//! records alone this module reports:
//! - client-added latency per chunk (receipt − probe: the time a chunk spends in the
//!   kernel and in goodput before its timestamp is taken), and TTFT / ITL error
//!   against the schedule, at several stream counts, at a realistic ITL and at the
//!   fastest the simulator can emit (ITL 0);
//! - a capacity sweep: the largest token rate ingested while p99 added latency stays
//!   under 1 ms; CPU time per million tokens; memory per in-flight stream;
//! - open-loop runs: offered versus achieved request rate and the send lag.
//!
//! By default the simulator is a child `goodput sim` process (started and stopped by
//! goodput's own engine handling) pinned to one core and
//! the client is pinned to another, with one runtime thread: the client's CPU time
//! (`getrusage`) and RSS are its own, and "per core" figures mean one core.
//!
//! # Layout
//! - [`plan`]: the flags, and the validated plan they become.
//! - [`scenarios`]: one run each (closed loop or rate), through [`goodput::drive::load`].
//! - [`figures`]: the figures of a run from its records (pure).
//! - [`floor`]: the same runs through a minimal raw-socket client: the lag floor.
//! - [`hold`]: memory per open stream, with slow streams held open at 1k, 10k, 100k.
//! - [`table`]: Markdown tables.

pub mod figures;
pub mod floor;
pub mod hold;
pub mod plan;
pub mod scenarios;
pub mod table;

use std::io::Write as _;
use std::time::Duration;

use anyhow::Context as _;

pub use plan::{BenchArgs, BenchPlan, SimMode};

use crate::os;
use crate::sim::{Schedule, SimKind};
use figures::StreamFigures;
use scenarios::{RateRun, StreamRun};
use table::SweepStep;

/// Runs `goodput-bench client`; prints the tables to stdout, progress to stderr.
/// Builds the client's runtime itself, on the (pinned) calling thread's CPUs.
pub fn run(args: BenchArgs) -> anyhow::Result<i32> {
    let plan = BenchPlan::from_args(&args)?;
    let host = goodput::measure::environment::host();
    let most_held = plan.hold.iter().max().copied().unwrap_or(0) as u64;
    let fd_limit = os::raise_fd_limit(most_held + hold::MARGIN);
    let cpus = os::allowed_cpus();
    let (client_cpus, sim_cpus) = if plan.pin && cpus.len() > plan.client_threads {
        let (a, b) = cpus.split_at(plan.client_threads);
        (a.to_vec(), b.to_vec())
    } else {
        (Vec::new(), Vec::new())
    };
    if !client_cpus.is_empty() {
        os::pin_current_thread(&client_cpus);
    }
    let kind = match plan.sim {
        SimMode::Child => SimKind::Child {
            bin: plan.sim_bin.clone(),
            cpus: sim_cpus.clone(),
            threads: plan.sim_threads,
        },
        SimMode::InProcess => SimKind::InProcess {
            threads: plan.sim_threads,
        },
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(plan.client_threads)
        .enable_all()
        .build()?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}",
        header(&plan, &host, fd_limit, &client_cpus, &sim_cpus)
    )?;
    out.flush()?;
    drop(out);
    let code = rt.block_on(run_all(&plan, &kind, fd_limit))?;
    Ok(code)
}

fn header(
    plan: &BenchPlan,
    host: &report::HostInfo,
    fd_limit: u64,
    client_cpus: &[usize],
    sim_cpus: &[usize],
) -> String {
    let commit = goodput::measure::environment::GIT_COMMIT
        .filter(|c| !c.is_empty())
        .unwrap_or("unknown");
    let pinned = |c: &[usize]| {
        if c.is_empty() {
            "not pinned".to_string()
        } else {
            format!("pinned to CPU {c:?}")
        }
    };
    let sim = match plan.sim {
        SimMode::Child => format!(
            "child `goodput sim --threads {}` process, {}",
            plan.sim_threads,
            pinned(sim_cpus)
        ),
        SimMode::InProcess => format!("in this process ({} runtime thread(s))", plan.sim_threads),
    };
    format!(
        "# goodput-bench client\n\n\
         - date: {}\n\
         - machine: {}, {} CPUs, {} MiB, {}, kernel {}\n\
         - goodput {} ({commit}); open-file limit {fd_limit}; load average at start {}\n\
         - client: goodput's load generator and client, {} runtime thread(s), {}\n\
         - simulator: {sim}; fixed schedule, TTFT {} ms, probe on\n\
         - each closed-loop run: {} s of sends, {} tokens per request, connections opened by a warm-up round first",
        goodput::dates::utc_now_minute(),
        host.cpu_model.as_deref().unwrap_or("unknown CPU"),
        host.cpus.unwrap_or(0),
        host.memory_mib.unwrap_or(0),
        host.os.as_deref().unwrap_or("unknown OS"),
        host.kernel.as_deref().unwrap_or("?"),
        env!("CARGO_PKG_VERSION"),
        std::fs::read_to_string("/proc/loadavg").map_or_else(|_| "unknown".into(), |l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")),
        plan.client_threads,
        pinned(client_cpus),
        plan.ttft_ms,
        plan.duration.as_secs_f64(),
        plan.tokens,
    )
}

fn progress(msg: &str) {
    eprintln!("goodput-bench client: {msg}");
}

fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(())
}

/// What the runs leave: their records (to the `--records` file, or nowhere) and
/// how many fidelity and rate runs failed.
struct Kept {
    records: Option<goodput::drive::record::RecordsFile>,
    failed_runs: usize,
}

impl Kept {
    /// Starts the `--records` file afresh, if there is one.
    fn open(plan: &BenchPlan) -> anyhow::Result<Kept> {
        let records = match &plan.records {
            Some(path) => {
                // A file left by an earlier run is replaced; one not there is fine.
                let _ = std::fs::remove_file(path);
                let file = goodput::drive::record::RecordsFile::open(path)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                Some(file)
            }
            None => None,
        };
        Ok(Kept {
            records,
            failed_runs: 0,
        })
    }

    fn keep(&mut self, records: &[goodput::drive::record::RequestRecord]) -> anyhow::Result<()> {
        if let Some(f) = self.records.as_mut() {
            f.append(records)
                .with_context(|| format!("cannot write {}", f.path().display()))?;
        }
        Ok(())
    }

    /// The figures of a run whose records are kept; a failed run (`what failed:
    /// ...` on stderr) is counted and gives `None`.
    fn figures<F>(
        &mut self,
        run: anyhow::Result<(F, Vec<goodput::drive::record::RequestRecord>)>,
        what: &str,
    ) -> anyhow::Result<Option<F>> {
        match run {
            Ok((figures, records)) => {
                self.keep(&records)?;
                Ok(Some(figures))
            }
            Err(e) => {
                self.failed_runs += 1;
                progress(&format!("{what} failed: {e:#}"));
                Ok(None)
            }
        }
    }
}

/// A closed-loop run of the plan's TTFT and tokens.
fn stream_run(plan: &BenchPlan, streams: usize, itl_ms: f64, duration: Duration) -> StreamRun {
    StreamRun {
        streams,
        schedule: Schedule {
            ttft_ms: plan.ttft_ms,
            itl_ms,
        },
        tokens: plan.tokens,
        duration,
    }
}

/// Every section the plan asks for, in order; exit code 3 when a fidelity or
/// rate run failed.
async fn run_all(plan: &BenchPlan, kind: &SimKind, fd_limit: u64) -> anyhow::Result<i32> {
    let mut kept = Kept::open(plan)?;
    // First, while nothing else has grown the heap (a later run would reuse it).
    hold_runs(plan, kind, fd_limit, &mut kept).await?;
    let fidelity = fidelity_runs(plan, kind, &mut kept).await?;
    print(&format!(
        "\n## Fidelity (closed loop; ms; lag = client receipt − server write per chunk; errors = measured − configured)\n\n{}",
        table::streams(&fidelity)
    ))?;
    print(&summary(&fidelity))?;
    if plan.floor {
        floor_runs(plan, kind, &fidelity).await?;
    }
    if let Some(itl_ms) = plan.sweep_itl_ms {
        capacity(plan, kind, itl_ms, &mut kept).await?;
    }
    rate_runs(plan, kind, &mut kept).await?;
    Ok(if kept.failed_runs > 0 { 3 } else { 0 })
}

/// Memory per open stream at each `--hold` count the machine allows (the others
/// named, with why); prints its table unless the plan holds none.
async fn hold_runs(
    plan: &BenchPlan,
    kind: &SimKind,
    fd_limit: u64,
    kept: &mut Kept,
) -> anyhow::Result<()> {
    if plan.hold.is_empty() {
        return Ok(());
    }
    let (counts, missing) = hold::plan(&plan.hold, fd_limit, hold::ephemeral_ports());
    let mut rows = missing;
    let rss_before = os::rss_bytes();
    for n in counts {
        progress(&format!(
            "hold: {n} streams open at ITL {} ms",
            plan.hold_itl_ms
        ));
        let shape = (plan.hold_itl_ms, plan.hold_tokens);
        match hold::hold(kind, n, shape, rss_before).await {
            Ok(f) => rows.push(hold::HoldRow::Measured(f)),
            Err(e) => {
                kept.failed_runs += 1;
                progress(&format!("hold {n} failed: {e:#}"));
            }
        }
    }
    print(&format!(
        "\n## Memory per open stream ({} tokens asked per stream, the simulator streaming one every {} ms; RSS of this process read while every stream is open, minus its RSS before the first count; live heap minus before the count's connections were opened)\n\n{}",
        plan.hold_tokens,
        plan.hold_itl_ms,
        table::hold(&rows)
    ))
}

/// The closed-loop runs, every stream count at every ITL; a failed one is
/// counted in `kept` and left out.
async fn fidelity_runs(
    plan: &BenchPlan,
    kind: &SimKind,
    kept: &mut Kept,
) -> anyhow::Result<Vec<StreamFigures>> {
    let mut fidelity = Vec::new();
    for &streams in &plan.streams {
        for &itl_ms in &plan.itl_ms {
            progress(&format!(
                "{streams} streams, ITL {itl_ms} ms, {} s",
                plan.duration.as_secs_f64()
            ));
            let run = stream_run(plan, streams, itl_ms, plan.duration);
            let what = format!("{streams} streams, ITL {itl_ms} ms");
            if let Some(f) = kept.figures(scenarios::streams(kind, run).await, &what)? {
                fidelity.push(f);
            }
        }
    }
    Ok(fidelity)
}

/// The fidelity runs with ITL > 0 again through the raw-socket client; prints
/// their table.
async fn floor_runs(
    plan: &BenchPlan,
    kind: &SimKind,
    fidelity: &[StreamFigures],
) -> anyhow::Result<()> {
    let mut floors = Vec::new();
    for f in fidelity.iter().filter(|f| f.itl_ms > 0.0) {
        progress(&format!(
            "floor: {} streams, ITL {} ms",
            f.streams, f.itl_ms
        ));
        let run = stream_run(plan, f.streams, f.itl_ms, plan.duration);
        match floor::run(kind, run).await {
            Ok(fl) => floors.push((fl, f.clone())),
            Err(e) => progress(&format!("floor run failed: {e:#}")),
        }
    }
    print(&format!(
        "\n## Floor (the same runs through a minimal raw-socket client: no HTTP library, no SSE or JSON parsing; ms)\n\n{}",
        table::floor(&floors)
    ))
}

/// The capacity sweep at `itl_ms`: its table and the largest passing rate.
async fn capacity(
    plan: &BenchPlan,
    kind: &SimKind,
    itl_ms: f64,
    kept: &mut Kept,
) -> anyhow::Result<()> {
    let steps = sweep(plan, kind, itl_ms, kept).await?;
    print(&format!(
        "\n## Capacity sweep (ITL {itl_ms} ms, {} tokens per request; doubling streams until goodput adds 1 ms or more to the floor's p99 lag, a request fails, or the simulator cannot emit 80 % of the offered rate)\n\n{}",
        plan.tokens,
        table::sweep(&steps)
    ))?;
    let best = steps
        .iter()
        .filter(|s| s.verdict == PASS)
        .map(|s| &s.figures)
        .max_by(|a, b| a.tokens_per_s().total_cmp(&b.tokens_per_s()));
    match best {
        Some(f) => print(&format!(
            "\nLargest rate at which goodput added less than 1 ms to the p99 lag: {} chunks/s, {} tokens/s ({} streams at ITL {} ms), client at {:.2} cores.",
            table::count(f.chunks_per_s()),
            table::count(f.tokens_per_s()),
            f.streams,
            f.itl_ms,
            f.cores()
        )),
        None => print("\nNo sweep step kept the added p99 lag under 1 ms."),
    }
}

/// The open-loop runs (ITL 20 ms); a failed one is counted in `kept`.
/// Prints their table unless none succeeded.
async fn rate_runs(plan: &BenchPlan, kind: &SimKind, kept: &mut Kept) -> anyhow::Result<()> {
    let mut rates = Vec::new();
    for (i, &rps) in plan.rates.iter().enumerate() {
        progress(&format!(
            "rate {rps} req/s, {} s",
            plan.rate_duration.as_secs_f64()
        ));
        let run = RateRun {
            rps,
            schedule: Schedule {
                ttft_ms: plan.ttft_ms,
                itl_ms: 20.0,
            },
            tokens: plan.rate_tokens,
            duration: plan.rate_duration,
            seed: 42 + i as u64,
        };
        if let Some(f) = kept.figures(scenarios::rate(kind, run).await, &format!("rate {rps}"))? {
            rates.push(f);
        }
    }
    if rates.is_empty() {
        return Ok(());
    }
    print(&format!(
        "\n## Open loop (Poisson arrivals; TTFT {} ms, ITL 20 ms, {} tokens per request; send lag = sent − scheduled, ms)\n\n{}",
        plan.ttft_ms,
        plan.rate_tokens,
        table::rates(&rates)
    ))
}

const PASS: &str = "added p99 < 1 ms";

/// Doubles the streams at `itl_ms` until p99 lag reaches 1 ms, requests fail, or the
/// simulator cannot emit what is asked (achieved < 80 % of offered).
async fn sweep(
    plan: &BenchPlan,
    kind: &SimKind,
    itl_ms: f64,
    kept: &mut Kept,
) -> anyhow::Result<Vec<SweepStep>> {
    let mut steps = Vec::new();
    let mut streams = plan.sweep_start;
    while streams <= plan.sweep_max {
        let run = stream_run(plan, streams, itl_ms, plan.sweep_duration);
        progress(&format!("sweep: {streams} streams, ITL {itl_ms} ms"));
        let figures = match scenarios::streams(kind, run).await {
            Ok((f, r)) => {
                kept.keep(&r)?;
                f
            }
            Err(e) => {
                progress(&format!("sweep step failed: {e:#}"));
                break;
            }
        };
        let floor = match floor::run(kind, run).await {
            Ok(fl) => fl,
            Err(e) => {
                progress(&format!("sweep floor failed: {e:#}"));
                break;
            }
        };
        let request_s = (plan.ttft_ms + itl_ms * f64::from(plan.tokens)) / 1e3;
        let offered = streams as f64 * f64::from(plan.tokens) / request_s;
        let added = figures.lag.p99.zip(floor.lag.p99).map(|(g, f)| g - f);
        let verdict = if figures.failed > 0 {
            "requests failed"
        } else if figures.tokens_per_s() < 0.8 * offered {
            "sim saturated"
        } else if added.is_none_or(|a| a >= 1.0) {
            "added p99 ≥ 1 ms"
        } else {
            PASS
        };
        steps.push(SweepStep {
            figures,
            floor,
            offered,
            verdict,
        });
        if verdict != PASS {
            break;
        }
        streams *= 2;
    }
    Ok(steps)
}

fn summary(runs: &[StreamFigures]) -> String {
    let mut lines = Vec::new();
    if let Some(best) = runs
        .iter()
        .filter_map(|f| f.tokens_per_core_s().map(|t| (t, f)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
    {
        lines.push(format!(
            "- ingest cost: {:.2} CPU s per million tokens at best ({} streams, ITL {} ms): {} tokens/s per core",
            best.1.cpu_s_per_mtok().unwrap_or(f64::NAN),
            best.1.streams,
            best.1.itl_ms,
            table::count(best.0)
        ));
    }
    if let Some(big) = runs.iter().max_by_key(|f| f.streams) {
        lines.push(format!(
            "- memory: {:.1} KiB of RSS per in-flight stream at {} streams (peak RSS − RSS before the run)",
            big.kib_per_stream(),
            big.streams
        ));
    }
    if lines.is_empty() {
        String::new()
    } else {
        format!("\n{}", lines.join("\n"))
    }
}
