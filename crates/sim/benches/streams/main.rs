//! How many streams can the simulator keep on schedule, on one core?
//!
//! Starts the server in fixed-schedule probe mode in this process, on a thread of
//! its own with a single-threaded runtime (`SERVER_THREADS=1`, the default), pinned
//! with its timer thread to one CPU, and drives it from a reqwest client on another
//! CPU. Per chunk it reads **emission lag** = `goodput_probe_ns` (taken just before
//! the chunk is written) − `goodput_sched_ns` (request arrival + TTFT + i × ITL).
//!
//! Four scenarios, each printed with the target it checks:
//! - `fidelity`: 2,000 streams at 50 tokens/s each (ITL 20 ms): p99 emission lag in
//!   steady state (every stream open) under 1 ms.
//! - `hold`: 10,000 concurrent streams (ITL 100 ms): none fails, all are open at
//!   once, and none waits for its connection (a full listen backlog makes a
//!   connection wait for a 1 s SYN retransmit): response headers within 500 ms.
//! - `floor`: the `fidelity` load served by a raw responder instead of the simulator
//!   (same thread, timer and TCP path, chunks of the same shape; no HTTP framework,
//!   no JSON, no model): the CPU per chunk and the lag this machine allows, so the
//!   simulator's own share of each is the difference.
//! - `capacity`: 1,000 streams at ITL 1 ms: chunks per second, and the simulator's
//!   CPU per chunk, hence the chunks/s one core sustains.
//! - `arrival`: arrival to clock start of probe requests sent while 100 and 1,000
//!   other streams are being written (`ARRIVAL_STREAMS`, `PROBES`); see [`arrival`].
//!
//! Run: `cargo bench -p goodput-sim --bench streams` (all five), or
//! `SCENARIOS=fidelity,hold`. A custom run: `STREAMS=500 ITL_MS=20 TOKENS=200
//! cargo bench -p goodput-sim --bench streams` (also `TTFT_MS`, `RAMP_MS`,
//! `SERVER_THREADS`, `CLIENT_THREADS`; `NO_PIN=1` to leave threads unpinned; `FLOOR=1`
//! for the floor responder).
//! Method and past figures: `crates/sim/BENCH.md`. Modules: [`os`] (environment,
//! pinning, CPU time), [`floor`] (the floor responder), [`table`] (the figures),
//! [`arrival`] (the `arrival` scenario).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use goodput_sim::config::ScheduleConfig;
use goodput_sim::SimConfig;
use goodput_stamped::MonoClock;

mod arrival;
mod floor;
mod os;
mod table;

use floor::floor_serve;
use os::{env, load_average, pin_thread, raise_fd_limit, threads_cpu_seconds};
use table::{results_table, spread, verdict};

/// The integer after `"key":` in a chunk.
fn field(data: &str, key: &str) -> Option<u64> {
    let start = data.find(key)? + key.len();
    let rest = &data[start..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[derive(Default)]
struct StreamResult {
    /// Server send time minus scheduled time, ns (negative: early).
    send_lag: Vec<i64>,
    /// Scheduled time of each chunk, CLOCK_MONOTONIC ns.
    scheduled: Vec<u64>,
    /// Client receive time minus server send time, ns.
    delivery: Vec<i64>,
    /// Request start to response headers, ns (connect, send, the server's handling).
    headers_ns: u64,
    error: Option<String>,
}

struct Shared {
    client: reqwest::Client,
    url: String,
    tokens: u32,
    mono: MonoClock,
    open: AtomicUsize,
    peak: AtomicUsize,
}

async fn one_stream(s: Arc<Shared>) -> StreamResult {
    let mut out = StreamResult::default();
    let body = serde_json::json!({"prompt": "bench", "max_tokens": s.tokens,
                                  "ignore_eos": true, "stream": true});
    let asked = Instant::now();
    let resp = match s.client.post(&s.url).json(&body).send().await {
        Ok(r) => r,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    out.headers_ns = asked.elapsed().as_nanos() as u64;
    let now_open = s.open.fetch_add(1, Ordering::Relaxed) + 1;
    s.peak.fetch_max(now_open, Ordering::Relaxed);
    let mut body = resp.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(item) = body.next().await {
        let received = s.mono.ns(Instant::now()) as i64;
        let bytes = match item {
            Ok(b) => b,
            Err(e) => {
                out.error = Some(e.to_string());
                break;
            }
        };
        buf.extend_from_slice(&bytes);
        let mut start = 0;
        while let Some(pos) = buf[start..].windows(2).position(|w| w == b"\n\n") {
            let event = std::str::from_utf8(&buf[start..start + pos]).unwrap_or("");
            if let (Some(sent), Some(sched)) = (
                field(event, "\"goodput_probe_ns\":"),
                field(event, "\"goodput_sched_ns\":"),
            ) {
                out.send_lag.push(sent as i64 - sched as i64);
                out.scheduled.push(sched);
                out.delivery.push(received - sent as i64);
            }
            start += pos + 2;
        }
        buf.drain(..start);
    }
    s.open.fetch_sub(1, Ordering::Relaxed);
    out
}

/// One run's shape.
#[derive(Debug, Clone, Copy)]
struct Run {
    streams: usize,
    tokens: u32,
    ttft_ms: f64,
    itl_ms: f64,
    ramp_ms: u64,
    server_threads: usize,
    client_threads: usize,
    pin: bool,
    /// Serve with the raw floor responder ([`floor_serve`]) instead of the simulator.
    floor: bool,
}

/// What one run measured.
struct Outcome {
    peak: usize,
    errors: usize,
    first_error: Option<String>,
    chunks: usize,
    seconds: f64,
    server_cpu_s: f64,
    steady_p99_ms: f64,
    header_stalls: usize,
    max_headers_ms: f64,
    /// The 1-minute load average at the end of the run.
    load: String,
}

/// A simulator on a thread of its own; its threads are named `sim-server`.
struct Server {
    addr: std::net::SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

fn start_server(run: Run, cpu: Option<usize>) -> Server {
    let config = SimConfig {
        schedule: Some(ScheduleConfig {
            ttft_ms: run.ttft_ms,
            itl_ms: run.itl_ms,
        }),
        probe: true,
        max_model_len: 65_536,
        ..SimConfig::default()
    };
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("sim-server".into())
        .spawn(move || {
            if let Some(cpu) = cpu {
                pin_thread(cpu);
            }
            // As `goodput sim` does before serving.
            goodput_sim::warm_allocator();
            let rt = if run.server_threads == 1 {
                // As `goodput sim --threads 1` builds it.
                tokio::runtime::Builder::new_current_thread()
                    .on_thread_park(goodput_sim::server::timer::before_park)
                    .enable_all()
                    .build()
            } else {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(run.server_threads)
                    .thread_name("sim-server-w")
                    .enable_all()
                    .build()
            }
            .expect("server runtime");
            rt.block_on(async move {
                // On one thread the server's sleeps use this thread's local timer;
                // with more, the shared timer thread, started by the first sleep
                // (the baseline's, on this CPU, or this one), inheriting its pin.
                goodput_sim::server::timer::sleep(Duration::from_micros(10)).await;
                let listener = goodput_sim::listen(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
                    .expect("listen");
                addr_tx.send(listener.local_addr().expect("addr")).ok();
                if run.floor {
                    floor_serve(listener, run, stop_rx).await;
                    return;
                }
                let _ = goodput_sim::serve(listener, config, async {
                    let _ = stop_rx.await;
                })
                .await;
            });
        })
        .expect("server thread");
    let addr = addr_rx.recv().expect("server address");
    Server { addr, stop, thread }
}

/// The client side of a run: its runtime (pinned to CPU 0 when `pin`) and the
/// state its streams share, aimed at the server at `addr`.
pub(crate) fn client_side(
    run: &Run,
    pin: bool,
    addr: std::net::SocketAddr,
) -> (tokio::runtime::Runtime, Arc<Shared>) {
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(run.client_threads)
        .thread_name("client")
        .on_thread_start(move || {
            if pin {
                pin_thread(0);
            }
        })
        .enable_all()
        .build()
        .expect("client runtime");
    let shared = Arc::new(Shared {
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .tcp_nodelay(true)
            .build()
            .expect("client"),
        url: format!("http://{addr}/v1/completions"),
        tokens: run.tokens,
        mono: MonoClock::new(),
        open: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
    });
    (client_rt, shared)
}

fn run_once(run: Run) -> Outcome {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = run.pin && cpus >= 2;
    let server = start_server(run, pin.then_some(cpus - 1));
    let (client_rt, shared) = client_side(&run, pin, server.addr);
    let server_threads = ["sim-server", "goodput-sim-tim"];
    let cpu_before = threads_cpu_seconds(&server_threads);
    let started = Instant::now();
    let results: Vec<StreamResult> = client_rt.block_on(async {
        let mut handles = Vec::with_capacity(run.streams);
        for i in 0..run.streams {
            let at =
                started + Duration::from_millis(run.ramp_ms * i as u64 / run.streams.max(1) as u64);
            let s = shared.clone();
            handles.push(tokio::spawn(async move {
                tokio::time::sleep_until(at.into()).await;
                one_stream(s).await
            }));
        }
        let mut results = Vec::with_capacity(run.streams);
        for h in handles {
            results.push(h.await.unwrap_or_default());
        }
        results
    });
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu_s = threads_cpu_seconds(&server_threads) - cpu_before;
    let _ = server.stop.send(());
    let _ = server.thread.join();
    outcome(run, &shared, &results, started, seconds, server_cpu_s)
}

/// Prints what one run measured and returns it.
fn outcome(
    run: Run,
    shared: &Shared,
    results: &[StreamResult],
    started: Instant,
    seconds: f64,
    server_cpu_s: f64,
) -> Outcome {
    let errors: Vec<&String> = results.iter().filter_map(|r| r.error.as_ref()).collect();
    let chunks: usize = results.iter().map(|r| r.send_lag.len()).sum();
    println!(
        "  held {} streams open at once; {chunks} chunks in {seconds:.1} s ({:.0} chunks/s); {} errors",
        shared.peak.load(Ordering::Relaxed),
        chunks as f64 / seconds,
        errors.len()
    );
    println!(
        "  simulator CPU {server_cpu_s:.2} s ({:.2} of a core, {:.1} us per chunk)",
        server_cpu_s / seconds,
        server_cpu_s / chunks.max(1) as f64 * 1e6
    );
    spread(
        "emission lag, all",
        results
            .iter()
            .flat_map(|r| r.send_lag.iter().copied())
            .collect(),
    );
    // Steady state: chunks scheduled after every stream was open (no connection setup).
    let steady_from = shared
        .mono
        .ns(started + Duration::from_millis(run.ramp_ms + 200));
    let steady_p99_ms = spread(
        "emission lag, steady state",
        results
            .iter()
            .flat_map(|r| {
                r.send_lag
                    .iter()
                    .zip(&r.scheduled)
                    .filter(|(_, &s)| s >= steady_from)
                    .map(|(&l, _)| l)
            })
            .collect(),
    );
    spread(
        "delivery (received - sent)",
        results
            .iter()
            .flat_map(|r| r.delivery.iter().copied())
            .collect(),
    );
    let headers: Vec<i64> = results
        .iter()
        .filter(|r| r.error.is_none())
        .map(|r| r.headers_ns as i64)
        .collect();
    let header_stalls = headers.iter().filter(|&&h| h > 500_000_000).count();
    let max_headers_ms = headers.iter().copied().max().unwrap_or(0) as f64 / 1e6;
    spread("request to headers", headers);
    Outcome {
        peak: shared.peak.load(Ordering::Relaxed),
        errors: errors.len(),
        first_error: errors.first().map(|e| e.to_string()),
        chunks,
        seconds,
        server_cpu_s,
        steady_p99_ms,
        header_stalls,
        max_headers_ms,
        load: load_average(),
    }
}

/// Wake-up lateness of one task on the precise timer, 1 ms apart, with nothing
/// else running, on the simulator's CPU: what the machine itself allows (VM
/// scheduling, other load).
fn timer_baseline(cpu: Option<usize>) -> Vec<i64> {
    std::thread::spawn(move || {
        if let Some(cpu) = cpu {
            pin_thread(cpu);
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .on_thread_park(goodput_sim::server::timer::before_park)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            // The simulator's timer path on one thread (its local timer).
            goodput_sim::server::timer::install_local();
            let mut lates = Vec::with_capacity(1000);
            let mut deadline = Instant::now() + Duration::from_millis(1);
            for _ in 0..1000 {
                goodput_sim::server::timer::sleep_until(deadline).await;
                lates.push(Instant::now().duration_since(deadline).as_nanos() as i64);
                deadline += Duration::from_millis(1);
            }
            lates
        })
    })
    .join()
    .unwrap_or_default()
}

fn main() {
    raise_fd_limit();
    // The process's first clock read is slow; not inside a calibration.
    let _ = goodput_stamped::monotonic_ns();
    let base = Run {
        streams: 2000,
        tokens: 100,
        ttft_ms: 50.0,
        itl_ms: 20.0,
        ramp_ms: 1000,
        server_threads: env("SERVER_THREADS", 1),
        client_threads: env("CLIENT_THREADS", 1),
        pin: std::env::var_os("NO_PIN").is_none(),
        floor: false,
    };
    println!(
        "goodput-sim stream benchmark: {} CPUs, simulator on {} runtime thread(s){}, client on {} thread(s); load average {} at start",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        base.server_threads,
        if base.pin { " pinned to the last CPU (with the shared timer thread when it has more than one), client to CPU 0" } else { "" },
        base.client_threads,
        load_average()
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let baseline = timer_baseline((base.pin && cpus >= 2).then_some(cpus - 1));
    spread("timer baseline (1 idle task)", baseline);
    let custom = ["STREAMS", "TOKENS", "TTFT_MS", "ITL_MS", "RAMP_MS"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    if custom {
        let run = Run {
            streams: env("STREAMS", base.streams),
            tokens: env("TOKENS", base.tokens),
            ttft_ms: env("TTFT_MS", base.ttft_ms),
            itl_ms: env("ITL_MS", base.itl_ms),
            ramp_ms: env("RAMP_MS", base.ramp_ms),
            floor: std::env::var_os("FLOOR").is_some(),
            ..base
        };
        println!("\ncustom: {run:?}");
        let o = run_once(run);
        if let Some(e) = &o.first_error {
            println!("  first error: {e}");
        }
        println!("\n## Results\n\n{}", results_table(&[("custom", run, &o)]));
        return;
    }
    let scenarios: String = env(
        "SCENARIOS",
        "fidelity,floor,hold,capacity,arrival".to_string(),
    );
    let mut summary = Vec::new();
    let mut outcomes = Vec::new();
    let mut arrival_report = None;
    for name in scenarios.split(',').map(str::trim) {
        if name == "arrival" {
            arrival_report = Some(arrival_scenario(base, cpus));
            continue;
        }
        let run = match name {
            "fidelity" => base,
            "floor" => Run {
                floor: true,
                ..base
            },
            "hold" => Run {
                streams: 10_000,
                tokens: 40,
                itl_ms: 100.0,
                ramp_ms: 2000,
                ..base
            },
            "capacity" => Run {
                streams: 1000,
                tokens: 200,
                itl_ms: 1.0,
                ramp_ms: 500,
                ..base
            },
            other => {
                eprintln!("unknown scenario `{other}` (fidelity, floor, hold, capacity, arrival)");
                std::process::exit(2);
            }
        };
        println!(
            "\n{name}: {} streams x {} tokens, TTFT {} ms, ITL {} ms, started over {} ms",
            run.streams, run.tokens, run.ttft_ms, run.itl_ms, run.ramp_ms
        );
        let o = run_once(run);
        if let Some(e) = &o.first_error {
            println!("  first error: {e}");
        }
        summary.push(match name {
            "fidelity" => format!(
                "- {} streams at {:.0} tokens/s each, p99 emission lag < 1 ms (steady state): {} (p99 {:.3} ms, {} errors)",
                run.streams,
                1000.0 / run.itl_ms,
                verdict(o.steady_p99_ms < 1.0 && o.errors == 0),
                o.steady_p99_ms,
                o.errors
            ),
            "floor" => format!(
                "- the floor (a raw responder on the same core, timer and TCP path, same chunks): {:.1} us of CPU per chunk, p99 emission lag {:.3} ms at {} streams x {:.0} tokens/s: what this machine allows",
                o.server_cpu_s / o.chunks.max(1) as f64 * 1e6,
                o.steady_p99_ms,
                run.streams,
                1000.0 / run.itl_ms
            ),
            "hold" => format!(
                "- {} concurrent streams, no failed request, no connect stall (headers within 500 ms): {} (held {} at once, {} errors, {} stalls, slowest headers {:.0} ms)",
                run.streams,
                verdict(o.errors == 0 && o.peak == run.streams && o.header_stalls == 0),
                o.peak,
                o.errors,
                o.header_stalls,
                o.max_headers_ms
            ),
            _ => format!(
                "- one simulator core: {:.1} us of CPU per chunk, so ~{:.0} chunks/s per core ({:.0} chunks/s measured at {:.2} of a core)",
                o.server_cpu_s / o.chunks.max(1) as f64 * 1e6,
                o.chunks as f64 / o.server_cpu_s.max(1e-9),
                o.chunks as f64 / o.seconds,
                o.server_cpu_s / o.seconds
            ),
        });
        outcomes.push((name, run, o));
    }
    println!("\nTargets (load average {} at the end):", load_average());
    for line in summary {
        println!("{line}");
    }
    let rows: Vec<(&str, Run, &Outcome)> = outcomes.iter().map(|(n, r, o)| (*n, *r, o)).collect();
    if !rows.is_empty() {
        println!("\n## Results\n\n{}", results_table(&rows));
    }
    if let Some(report) = arrival_report {
        println!("\n## Arrival\n\n{report}");
    }
}

/// The `arrival` scenario at each background level; its table.
fn arrival_scenario(base: Run, cpus: usize) -> String {
    let probes: usize = env("PROBES", 200);
    let levels: String = env("ARRIVAL_STREAMS", "100,1000".to_string());
    let run = Run {
        ttft_ms: env("TTFT_MS", 50.0),
        itl_ms: env("ITL_MS", 40.0),
        ramp_ms: 200,
        ..base
    };
    // Long enough to outlast the probes (each waits TTFT and up to one ITL).
    let busy_ms = run.ramp_ms as f64 + 2000.0 + probes as f64 * (run.ttft_ms + run.itl_ms);
    let tokens = (busy_ms / run.itl_ms).ceil() as u32;
    let mut rows = Vec::new();
    for streams in levels.split(',').filter_map(|s| s.trim().parse().ok()) {
        let run = Run {
            streams,
            tokens,
            ..run
        };
        println!(
            "\narrival: {probes} probes while {streams} streams x {tokens} tokens are written, TTFT {} ms, ITL {} ms",
            run.ttft_ms, run.itl_ms
        );
        let o = arrival::run_arrival(run, probes, cpus);
        spread("arrival to clock start", o.delays.clone());
        rows.push(o);
    }
    arrival::arrival_table(run, &rows)
}
