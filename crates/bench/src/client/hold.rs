//! Memory per open stream: N slow streams (the simulator streaming a token every
//! `--hold-itl-ms`, 10 s by default) held open at once through goodput's load
//! generator and client, and this process's RSS and live heap read while they are
//! open. Each count runs against a fresh simulator, in ascending order; every
//! count's growth is counted from one baseline taken before the first, so memory
//! the allocator kept from a smaller count is counted in a larger one's figure.
//!
//! A count the machine does not allow (file descriptors: one per stream in each
//! process, under `RLIMIT_NOFILE`; ephemeral ports: one per stream to the one
//! simulator address) is not run: the table says which figure is missing and why,
//! and the largest count allowed is measured instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use goodput::define::profile::LoadMode;
use goodput::drive::load::run_trial;
use goodput::stop::Stop;

use super::scenarios::{request, trial, Session};
use crate::heap::live_bytes;
use crate::os::{load_average, rss_bytes};
use crate::sim::{Schedule, SimKind};

/// One count's figures, read while its streams were open.
#[derive(Debug, Clone, PartialEq)]
pub struct HoldFigures {
    /// Streams asked for.
    pub streams: usize,
    /// Requests sent.
    pub sent: u64,
    /// Streams whose first token arrived (read from the records after the stop).
    pub answered: usize,
    /// RSS before the first count's connections were opened, bytes.
    pub rss_before: u64,
    /// RSS with every stream open, bytes.
    pub rss_open: u64,
    /// Live heap before this count's connections were opened, bytes.
    pub heap_before: u64,
    /// Live heap with every stream open, bytes.
    pub heap_open: u64,
    /// The machine's 1-minute load average when the streams were open.
    pub load_avg: Option<f64>,
}

impl HoldFigures {
    /// RSS growth per open stream, bytes.
    pub fn rss_per_stream(&self) -> f64 {
        self.rss_open.saturating_sub(self.rss_before) as f64 / self.streams.max(1) as f64
    }

    /// Live heap growth per open stream, bytes.
    pub fn heap_per_stream(&self) -> f64 {
        self.heap_open.saturating_sub(self.heap_before) as f64 / self.streams.max(1) as f64
    }
}

/// A count, measured or not (with why not).
#[derive(Debug, Clone, PartialEq)]
pub enum HoldRow {
    /// Held and measured.
    Measured(HoldFigures),
    /// Not run on this machine.
    NotMeasured {
        /// Streams asked for.
        streams: usize,
        /// Why, and what was measured instead.
        why: String,
    },
}

/// Descriptors each process keeps beside its streams (listener, logs, pipes,
/// the benchmark's files).
pub const MARGIN: u64 = 128;

/// The ephemeral ports one destination address allows (`ip_local_port_range`).
pub fn ephemeral_ports() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text
        .split_whitespace()
        .filter_map(|v| v.parse::<u64>().ok());
    let (lo, hi) = (it.next()?, it.next()?);
    Some(hi.saturating_sub(lo) + 1)
}

/// The counts to run, in ascending order: each asked count that fits under
/// `fd_limit` and `ports`, a row saying why for each that does not, and then the
/// largest count allowed (rounded down to a thousand) in its place.
pub fn plan(asked: &[usize], fd_limit: u64, ports: Option<u64>) -> (Vec<usize>, Vec<HoldRow>) {
    let by_fds = fd_limit.saturating_sub(MARGIN);
    let most = ports.map_or(by_fds, |p| by_fds.min(p.saturating_sub(MARGIN)));
    let largest = if most >= 1000 {
        most / 1000 * 1000
    } else {
        most
    } as usize;
    let mut sorted = asked.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let (mut run, mut missing) = (Vec::new(), Vec::new());
    for n in sorted {
        if n as u64 <= most {
            run.push(n);
            continue;
        }
        let need = n as u64 + MARGIN;
        let why = if need > fd_limit {
            format!(
                "needs {need} file descriptors in each process (the client's and the \
                 simulator's), and RLIMIT_NOFILE allows {fd_limit} here (the hard limit; \
                 raising it needs CAP_SYS_RESOURCE, which this process lacks)"
            )
        } else {
            format!(
                "needs {n} connections to one address, and this machine has {} ephemeral \
                 ports (net.ipv4.ip_local_port_range)",
                ports.unwrap_or(0)
            )
        };
        missing.push(HoldRow::NotMeasured {
            streams: n,
            why: format!("{why}; {largest} streams measured instead"),
        });
        if largest > 0 && !run.contains(&largest) {
            run.push(largest);
        }
    }
    run.sort_unstable();
    (run, missing)
}

/// Holds `streams` open at once (ITL `itl_ms`, `tokens` per request, so none
/// ends while measured) and reads the memory while they are; RSS growth is
/// counted from `rss_before`, taken before the first count ran.
pub async fn hold(
    kind: &SimKind,
    streams: usize,
    (itl_ms, tokens): (f64, u32),
    rss_before: u64,
) -> anyhow::Result<HoldFigures> {
    let schedule = Schedule {
        ttft_ms: 50.0,
        itl_ms,
    };
    let session = Session::start(kind, schedule, streams).await?;
    let result = held(&session, streams, itl_ms, tokens).await;
    let result = result.map(|f| HoldFigures { rss_before, ..f });
    session.stop().await;
    result
}

async fn held(
    session: &Session,
    streams: usize,
    itl_ms: f64,
    tokens: u32,
) -> anyhow::Result<HoldFigures> {
    // The plan (one body, shared) is made before the baseline: it is the
    // workload's, not the open streams'.
    let mut t = trial(
        "hold",
        streams as f64,
        LoadMode::Concurrency,
        Vec::new(),
        vec![request(tokens); streams],
    );
    t.grace = Duration::ZERO;
    let sent = Arc::new(AtomicU64::new(0));
    t.sent = Some(sent.clone());
    let (rss_before, heap_before) = (rss_bytes(), live_bytes());
    session.warm_up(streams).await?;
    let stop = Stop::unset();
    let (client, target) = session.client_and_target();
    let trial = {
        let stop = stop.clone();
        tokio::spawn(async move { run_trial(client, target, t, &stop, Box::new(|_| {})).await })
    };
    // Every request sent, then their first tokens (TTFT 50 ms; the simulator
    // answers thousands of new requests in a second or two): the RSS is read once
    // it stops growing, before the second tokens are due.
    let begun = Instant::now();
    while sent.load(Ordering::Relaxed) < streams as u64
        && begun.elapsed() < Duration::from_secs(120)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sent_at = Instant::now();
    let due = Duration::from_secs_f64(itl_ms / 1e3 * 0.8);
    let mut last = rss_bytes();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = rss_bytes();
        let steady = now.abs_diff(last) * 200 < now.max(1);
        last = now;
        if steady || sent_at.elapsed() >= due {
            break;
        }
    }
    let (rss_open, heap_open, load_avg) = (rss_bytes(), live_bytes(), load_average());
    stop.set();
    let records = trial.await?;
    let answered = records.iter().filter(|r| !r.chunks.is_empty()).count();
    Ok(HoldFigures {
        streams,
        sent: sent.load(Ordering::Relaxed),
        answered,
        rss_before,
        rss_open,
        heap_before,
        heap_open,
        load_avg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_machine_cannot_hold_are_named_and_replaced_by_the_largest_it_can() {
        let (run, missing) = plan(&[100_000, 1000, 10_000], 20_000, Some(28_232));
        assert_eq!(run, vec![1000, 10_000, 19_000]);
        assert_eq!(missing.len(), 1);
        let HoldRow::NotMeasured { streams, why } = &missing[0] else {
            panic!("{missing:?}");
        };
        assert_eq!(*streams, 100_000);
        assert!(
            why.contains("100128 file descriptors")
                && why.contains("19000 streams measured instead"),
            "{why}"
        );
        // Ports, not descriptors, bound it.
        let (run, missing) = plan(&[50_000], 1_000_000, Some(28_232));
        assert_eq!(run, vec![28_000]);
        assert!(
            matches!(&missing[0], HoldRow::NotMeasured { why, .. } if why.contains("ephemeral"))
        );
        // Everything fits.
        let (run, missing) = plan(&[10, 5], 1024, None);
        assert_eq!((run, missing.len()), (vec![5, 10], 0));
    }

    /// Streams are held open, measured, and stopped (not left to finish: 2 s
    /// between tokens).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streams_are_held_measured_and_stopped() {
        let sim = SimKind::InProcess { threads: 1 };
        let f = hold(&sim, 3, (2000.0, 8), 0).await.unwrap();
        assert_eq!((f.streams, f.sent), (3, 3));
        assert!(f.answered <= 3);
        assert!(f.rss_open > 0 && f.rss_per_stream() > 0.0);
    }

    #[test]
    fn per_stream_figures_divide_the_growth() {
        let f = HoldFigures {
            streams: 1000,
            sent: 1000,
            answered: 1000,
            rss_before: 10 << 20,
            rss_open: (10 << 20) + 4_096_000,
            heap_before: 0,
            heap_open: 2_048_000,
            load_avg: None,
        };
        assert_eq!(f.rss_per_stream(), 4096.0);
        assert_eq!(f.heap_per_stream(), 2048.0);
    }
}
