//! The floor: what a minimal client measures on the same setup.
//!
//! The probe lag is everything between the simulator writing a chunk and the client
//! timestamping it: the simulator's own write, the kernel's loopback delivery (which
//! runs on the simulator's core), waking the client, and the client's work. Only the
//! last part is goodput's. This client does almost nothing: one task per stream on a
//! raw TCP connection, a hand-written HTTP/1.1 request, and per read one timestamp
//! and a byte search for `"goodput_probe_ns":`: no HTTP library, no SSE parser, no
//! JSON. Its lag is the floor of this machine and simulator; goodput's lag minus the
//! floor is what goodput adds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::figures::Spread;
use super::scenarios::StreamRun;
use crate::os::cpu_time;
use crate::sim::{Sim, SimKind};
use goodput::drive::record::now_ns;

const PROBE: &[u8] = b"\"goodput_probe_ns\":";
const DONE: &[u8] = b"data: [DONE]";
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// What the minimal client saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Floor {
    /// Concurrent streams.
    pub streams: usize,
    /// Configured ITL, ms.
    pub itl_ms: f64,
    /// Chunks seen.
    pub chunks: usize,
    /// Probe lag, ms.
    pub lag: Spread,
    /// Cores the minimal client used.
    pub cores: f64,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Every probe in `buf` up to its last newline: the lags at `t`; returns the bytes
/// consumed and whether `[DONE]` was among them.
fn scan(buf: &[u8], t: u64, lags: &mut Vec<i64>) -> (usize, bool) {
    let end = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut rest = &buf[..end];
    while let Some(i) = find(rest, PROBE) {
        rest = &rest[i + PROBE.len()..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if let Some(p) = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|d| d.parse::<u64>().ok())
        {
            lags.push(t as i64 - p as i64);
        }
    }
    (end, find(&buf[..end], DONE).is_some())
}

/// One stream: requests back to back on one connection until `stop`.
async fn stream(
    addr: String,
    request: Arc<Vec<u8>>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<Vec<i64>> {
    let mut conn = TcpStream::connect(&addr).await?;
    conn.set_nodelay(true)?;
    let mut lags = Vec::new();
    let mut buf = Vec::with_capacity(16 << 10);
    let mut tmp = vec![0u8; 16 << 10];
    while !stop.load(Ordering::Relaxed) {
        conn.write_all(&request).await?;
        buf.clear();
        let mut done = false;
        loop {
            let n = conn.read(&mut tmp).await?;
            if n == 0 {
                return Ok(lags);
            }
            let t = now_ns();
            buf.extend_from_slice(&tmp[..n]);
            let ended = buf.ends_with(LAST_CHUNK);
            if !done {
                let (used, saw_done) = scan(&buf, t, &mut lags);
                done = saw_done;
                if !done {
                    buf.drain(..used);
                }
            }
            if done && ended {
                break;
            }
        }
    }
    Ok(lags)
}

/// Runs the minimal client like [`super::scenarios::streams`] runs goodput.
pub async fn run(kind: &SimKind, run: StreamRun) -> anyhow::Result<Floor> {
    let sim = Sim::start(kind, run.schedule)
        .await
        .context("cannot start the simulator")?;
    let addr = sim.base_url.trim_start_matches("http://").to_string();
    let body = format!(
        "{{\"model\":\"goodput-sim\",\"prompt\":\"bench\",\"max_tokens\":{0},\"min_tokens\":{0},\"ignore_eos\":true,\"stream\":true}}",
        run.tokens
    );
    let request = Arc::new(
        format!(
            "POST /v1/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (wall0, cpu0) = (Instant::now(), cpu_time());
    let tasks: Vec<_> = (0..run.streams)
        .map(|_| tokio::spawn(stream(addr.clone(), request.clone(), stop.clone())))
        .collect();
    tokio::time::sleep(run.duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut lags = Vec::new();
    let mut error = None;
    for t in tasks {
        match t.await {
            Ok(Ok(l)) => lags.extend(l),
            Ok(Err(e)) => error = Some(e.to_string()),
            Err(e) => error = Some(e.to_string()),
        }
    }
    let cores =
        cpu_time().saturating_sub(cpu0).as_secs_f64() / wall0.elapsed().as_secs_f64().max(1e-9);
    sim.stop().await;
    if let Some(e) = error {
        anyhow::bail!("a stream of the minimal client failed: {e}");
    }
    Ok(Floor {
        streams: run.streams,
        itl_ms: run.schedule.itl_ms,
        chunks: lags.len(),
        lag: Spread::of(lags.into_iter().map(|l| l as f64 / 1e6).collect()),
        cores,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn scan_reads_whole_lines_only() {
        let mut lags = Vec::new();
        let buf = b"1a\r\ndata: {\"x\":1,\"goodput_probe_ns\":100}\n\n\r\n1a\r\ndata: {\"goodput_probe_ns\":9";
        let (used, done) = scan(buf, 150, &mut lags);
        assert_eq!(lags, vec![50]);
        assert!(!done);
        assert_eq!(&buf[used..], b"data: {\"goodput_probe_ns\":9");
        let (_, done) = scan(b"data: [DONE]\n\n\r\n", 0, &mut lags);
        assert!(done);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_minimal_client_sees_every_chunk() {
        let run = StreamRun {
            streams: 2,
            schedule: crate::sim::Schedule {
                ttft_ms: 1.0,
                itl_ms: 1.0,
            },
            tokens: 4,
            duration: Duration::from_millis(100),
        };
        let f = super::run(&SimKind::InProcess { threads: 1 }, run)
            .await
            .unwrap();
        assert!(f.chunks >= 8 && f.chunks % 4 == 0, "{f:?}");
        assert!(f.lag.p50.unwrap() >= 0.0);
    }
}
