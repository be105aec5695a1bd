//! How faithfully does the simulator keep a fixed schedule under many streams?
//!
//! Starts the server in fixed-schedule probe mode, opens N concurrent streams
//! (default 2000) and reports how far each chunk's actual send time
//! (`goodput_probe_ns`, taken just before the chunk is written) lagged its
//! scheduled time (`goodput_sched_ns`), plus how long chunks took to reach
//! the client, and how many streams were open at once.
//!
//! Run: `cargo bench -p goodput-sim --bench streams`. Environment:
//! `STREAMS` (2000), `TOKENS` per stream (40), `TTFT_MS` (50), `ITL_MS` (100),
//! `RAMP_MS` over which streams start (1000), `SERVER_THREADS` (2),
//! `CLIENT_THREADS` (1).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use goodput_sim::clock::MonoClock;
use goodput_sim::config::ScheduleConfig;
use goodput_sim::SimConfig;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn raise_fd_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a valid, owned rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

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
    error: Option<String>,
}

async fn one_stream(
    client: reqwest::Client,
    url: String,
    tokens: u32,
    mono: MonoClock,
    open: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
) -> StreamResult {
    let mut out = StreamResult::default();
    let body = serde_json::json!({"prompt": "bench", "max_tokens": tokens,
                                  "ignore_eos": true, "stream": true});
    let resp = match client.post(&url).json(&body).send().await {
        Ok(r) => r,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    let now_open = open.fetch_add(1, Ordering::Relaxed) + 1;
    peak.fetch_max(now_open, Ordering::Relaxed);
    let mut stream = resp.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(item) = stream.next().await {
        let received = mono.ns(Instant::now()) as i64;
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
    open.fetch_sub(1, Ordering::Relaxed);
    out
}

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills a valid, owned rusage struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return f64::NAN;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// The 1-minute load average (other work on the machine skews the figures).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn quantile(sorted: &[i64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).floor() as usize;
    sorted[i] as f64 / 1e6
}

fn report(name: &str, mut v: Vec<i64>) {
    v.sort_unstable();
    println!(
        "{name:<30} n={:<8} p50={:.3} ms  p99={:.3} ms  p99.9={:.3} ms  max={:.3} ms",
        v.len(),
        quantile(&v, 0.5),
        quantile(&v, 0.99),
        quantile(&v, 0.999),
        quantile(&v, 1.0)
    );
}

/// Wake-up lateness of one task on the precise timer, 1 ms apart, with nothing
/// else running: what the machine itself allows (VM scheduling, other load).
fn timer_baseline(rt: &tokio::runtime::Runtime) -> Vec<i64> {
    rt.block_on(async {
        let mut lates = Vec::with_capacity(1000);
        let mut deadline = Instant::now() + Duration::from_millis(1);
        for _ in 0..1000 {
            goodput_sim::server::timer::sleep_until(deadline).await;
            lates.push(Instant::now().duration_since(deadline).as_nanos() as i64);
            deadline += Duration::from_millis(1);
        }
        lates
    })
}

fn main() {
    raise_fd_limit();
    let streams: usize = env("STREAMS", 2000);
    let tokens: u32 = env("TOKENS", 40);
    let ttft_ms: f64 = env("TTFT_MS", 50.0);
    let itl_ms: f64 = env("ITL_MS", 100.0);
    let ramp_ms: u64 = env("RAMP_MS", 1000);
    let server_threads: usize = env("SERVER_THREADS", 2);
    let client_threads: usize = env("CLIENT_THREADS", 1);

    let config = SimConfig {
        schedule: Some(ScheduleConfig { ttft_ms, itl_ms }),
        probe: true,
        max_model_len: 65_536,
        ..SimConfig::default()
    };
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(server_threads)
        .thread_name("server")
        .enable_all()
        .build()
        .expect("server runtime");
    let listener = server_rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = server_rt.spawn(goodput_sim::serve(listener, config, async {
        let _ = stop_rx.await;
    }));

    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(client_threads)
        .thread_name("client")
        .enable_all()
        .build()
        .expect("client runtime");
    let url = format!("http://{addr}/v1/completions");
    let mono = MonoClock::new();
    let open = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let baseline = timer_baseline(&server_rt);
    let load_before = load_average();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let results: Vec<StreamResult> = client_rt.block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .tcp_nodelay(true)
            .build()
            .expect("client");
        let mut handles = Vec::with_capacity(streams);
        for i in 0..streams {
            let at = started + Duration::from_millis(ramp_ms * i as u64 / streams.max(1) as u64);
            let (client, url, open, peak) =
                (client.clone(), url.clone(), open.clone(), peak.clone());
            handles.push(tokio::spawn(async move {
                tokio::time::sleep_until(at.into()).await;
                one_stream(client, url, tokens, mono, open, peak).await
            }));
        }
        let mut results = Vec::with_capacity(streams);
        for h in handles {
            results.push(h.await.unwrap_or_default());
        }
        results
    });
    let elapsed = started.elapsed();
    let cpu = cpu_seconds() - cpu_before;
    let load_after = load_average();
    let _ = stop_tx.send(());
    let _ = server_rt.block_on(server);

    let errors: Vec<&String> = results.iter().filter_map(|r| r.error.as_ref()).collect();
    let chunks: usize = results.iter().map(|r| r.send_lag.len()).sum();
    println!(
        "goodput-sim stream fidelity: {streams} streams x {tokens} tokens, TTFT {ttft_ms} ms, \
         ITL {itl_ms} ms, ramp {ramp_ms} ms, server threads {server_threads}, client threads \
         {client_threads}, cores {}",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "held {} streams open at once; {} chunks in {:.1} s ({:.0} chunks/s); {} errors",
        peak.load(Ordering::Relaxed),
        chunks,
        elapsed.as_secs_f64(),
        chunks as f64 / elapsed.as_secs_f64(),
        errors.len()
    );
    println!(
        "CPU {cpu:.1} s (server + client, {:.0} us per chunk); load average {load_before} before, \
         {load_after} after",
        cpu / chunks.max(1) as f64 * 1e6
    );
    if let Some(e) = errors.first() {
        println!("first error: {e}");
    }
    report("timer baseline (1 task, idle)", baseline);
    report(
        "send lag (sent - scheduled)",
        results
            .iter()
            .flat_map(|r| r.send_lag.iter().copied())
            .collect(),
    );
    // Steady state: chunks scheduled after every stream was open (no connection setup).
    let steady_from = mono.ns(started + Duration::from_millis(ramp_ms + 200));
    report(
        "send lag, steady state",
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
    report(
        "delivery (received - sent)",
        results
            .iter()
            .flat_map(|r| r.delivery.iter().copied())
            .collect(),
    );
}
