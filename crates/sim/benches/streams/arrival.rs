//! The `arrival` scenario: when does a request's clock start, while the simulator
//! is writing hundreds of other streams?
//!
//! `STREAMS` background streams (100 and 1,000 by default, `ARRIVAL_STREAMS`) are
//! opened together, so their chunks fall due at the same instants: every ITL the
//! simulator has a burst of writes, as at the end of a closed-loop wave. Then one
//! probe connection (keep-alive, pinned beside the client) sends `PROBES`
//! one-token requests, each at a random moment of the ITL period after the
//! previous answer, and reads the first chunk's `goodput_sched_ns`, which is the
//! request's clock start + TTFT. **Arrival to clock start** = that − TTFT − the
//! probe's CLOCK_MONOTONIC just before its `write` (so it includes loopback's few
//! microseconds). A server that stamps a request when its thread gets to it shows
//! the burst it waited behind here; one that keeps the kernel's receive time does not.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use goodput_stamped::monotonic_ns;

use super::os::pin_thread;
use super::table::quantile;
use super::{client_side, field, one_stream, start_server, Run, StreamResult};

/// What one `arrival` run measured.
pub(crate) struct ArrivalOutcome {
    pub streams: usize,
    /// Background streams open when the probes started.
    pub open: usize,
    /// Arrival to clock start of each probe, ns.
    pub delays: Vec<i64>,
    pub errors: usize,
    pub load: String,
}

/// A small LCG: probe spacing need not be good randomness, only not in phase.
fn next_rand(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// One probe request on `conn`; its arrival-to-clock-start in ns.
fn probe_once(conn: &mut TcpStream, addr: &str, ttft_ns: u64) -> Result<i64, String> {
    let body = r#"{"prompt":"probe","max_tokens":1,"ignore_eos":true,"stream":true}"#;
    let req = format!(
        "POST /v1/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let sent = monotonic_ns();
    conn.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    // Chunked SSE: the body ends with `[DONE]`, then the zero-length chunk.
    loop {
        let n = conn.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("connection closed".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.windows(6).any(|w| w == b"[DONE]") && buf.ends_with(b"0\r\n\r\n") {
            break;
        }
        if buf.len() > 1 << 20 {
            return Err("answer over 1 MiB".into());
        }
    }
    let text = String::from_utf8_lossy(&buf);
    let sched = field(&text, "\"goodput_sched_ns\":").ok_or("no goodput_sched_ns")?;
    Ok(sched as i64 - ttft_ns as i64 - sent as i64)
}

/// Opens `run.streams` background streams, waits until they are open, then
/// sends `probes` requests one after another on one connection.
pub(crate) fn run_arrival(run: Run, probes: usize, cpus: usize) -> ArrivalOutcome {
    let pin = run.pin && cpus >= 2;
    let server = start_server(run, pin.then_some(cpus - 1));
    let (client_rt, shared) = client_side(&run, pin, server.addr);
    let started = Instant::now();
    let handles: Vec<_> = (0..run.streams)
        .map(|i| {
            let at =
                started + Duration::from_millis(run.ramp_ms * i as u64 / run.streams.max(1) as u64);
            let s = shared.clone();
            client_rt.spawn(async move {
                tokio::time::sleep_until(at.into()).await;
                one_stream(s).await
            })
        })
        .collect();
    // Every background stream open (or 10 s more than the ramp).
    let deadline = started + Duration::from_millis(run.ramp_ms) + Duration::from_secs(10);
    while shared.open.load(Ordering::Relaxed) < run.streams && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let open = shared.open.load(Ordering::Relaxed);
    let addr = server.addr.to_string();
    let ttft_ns = (run.ttft_ms * 1e6) as u64;
    let itl_ns = (run.itl_ms * 1e6) as u64;
    let (delays, errors) = std::thread::spawn(move || {
        if pin {
            pin_thread(0);
        }
        let mut delays = Vec::with_capacity(probes);
        let mut errors = 0;
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut conn = match TcpStream::connect(&addr) {
            Ok(c) => c,
            Err(_) => return (delays, probes),
        };
        let _ = conn.set_nodelay(true);
        let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
        for _ in 0..probes {
            std::thread::sleep(Duration::from_nanos(
                (next_rand(&mut rng) * itl_ns as f64) as u64,
            ));
            match probe_once(&mut conn, &addr, ttft_ns) {
                Ok(d) => delays.push(d),
                Err(_) => {
                    errors += 1;
                    match TcpStream::connect(&addr) {
                        Ok(c) => conn = c,
                        Err(_) => break,
                    }
                }
            }
        }
        (delays, errors)
    })
    .join()
    .unwrap_or_default();
    let load = super::os::load_average();
    // The background streams end on their own; the server stops after them.
    let _: Vec<StreamResult> = client_rt.block_on(async {
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap_or_default());
        }
        out
    });
    let _ = server.stop.send(());
    let _ = server.thread.join();
    ArrivalOutcome {
        streams: run.streams,
        open,
        delays,
        errors,
        load,
    }
}

/// One row per background level, as Markdown.
pub(crate) fn arrival_table(run: Run, rows: &[ArrivalOutcome]) -> String {
    let mut out = format!(
        "Arrival to clock start (ms) of one-token probe requests while other streams are written (ITL {} ms, TTFT {} ms):\n\n\
         | streams written | open | probes | errors | p50 ms | p99 ms | max ms | load 1m |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|\n",
        run.itl_ms, run.ttft_ms
    );
    for o in rows {
        let mut v = o.delays.clone();
        v.sort_unstable();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {} |\n",
            o.streams,
            o.open,
            v.len(),
            o.errors,
            quantile(&v, 0.5),
            quantile(&v, 0.99),
            quantile(&v, 1.0),
            o.load
        ));
    }
    out
}
