//! Figures of one benchmark run, computed from the request records alone (pure).
//!
//! Percentiles use numpy's default linear interpolation ([`report::stats::quantile_linear`]),
//! as [`goodput::measure::metrics`] does.
//! Errors are measured − configured, in milliseconds: positive means late.

use std::time::Duration;

use goodput::drive::record::RequestRecord;
use report::stats::quantile_linear as quantile;

/// p50, p99 and max of a sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spread {
    /// 50th percentile (the median).
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Largest value.
    pub max: Option<f64>,
    /// Sample size.
    pub n: usize,
}

impl Spread {
    /// The spread of `v` (sorted here).
    pub fn of(mut v: Vec<f64>) -> Spread {
        v.sort_by(f64::total_cmp);
        Spread {
            p50: quantile(&v, 0.5),
            p99: quantile(&v, 0.99),
            max: v.last().copied(),
            n: v.len(),
        }
    }
}

/// What the client process spent during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// CPU time of the client process (user + system) during the run.
    pub cpu: Duration,
    /// Peak RSS during the run minus RSS before it, bytes (0 if it shrank).
    pub rss_delta: u64,
    /// Peak RSS of the client process during the run, bytes.
    pub rss_peak: u64,
    /// The machine's 1-minute load average at the end of the run (`/proc/loadavg`).
    pub load_avg: Option<f64>,
    /// CPU time of the simulator child process during the run (`None`: in-process).
    pub sim_cpu: Option<Duration>,
    /// CPU time the whole machine spent during the run, all processes (`/proc/stat`).
    pub machine_cpu: Option<Duration>,
    /// Wall time of the run.
    pub wall: Duration,
}

impl Usage {
    /// Cores used by the simulator child.
    pub fn sim_cores(&self) -> Option<f64> {
        self.sim_cpu.map(|c| ratio(c, self.wall))
    }

    /// Cores used by everything else on the machine (other processes, the kernel's
    /// own threads): the noise the run was measured under.
    pub fn other_cores(&self) -> Option<f64> {
        let rest = self
            .machine_cpu?
            .saturating_sub(self.cpu + self.sim_cpu.unwrap_or_default());
        Some(ratio(rest, self.wall))
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    if b.is_zero() {
        0.0
    } else {
        a.as_secs_f64() / b.as_secs_f64()
    }
}

/// Figures of one closed-loop fidelity run.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamFigures {
    /// Concurrent streams.
    pub streams: usize,
    /// Configured TTFT, ms.
    pub ttft_ms: f64,
    /// Configured ITL, ms.
    pub itl_ms: f64,
    /// Successful requests.
    pub ok: usize,
    /// Failed requests.
    pub failed: usize,
    /// Most requests in flight at once (sent, not yet done), from the records.
    pub held: usize,
    /// Content chunks received.
    pub chunks: u64,
    /// Output tokens received (`usage.completion_tokens`).
    pub tokens: u64,
    /// First send to last completion, s.
    pub seconds: f64,
    /// Client-added latency per chunk (probe lag), ms.
    pub lag: Spread,
    /// TTFT measured − configured, ms.
    pub ttft_err: Spread,
    /// ITL measured − configured, ms (every gap between content chunks).
    pub itl_err: Spread,
    /// What the client spent.
    pub usage: Usage,
}

impl StreamFigures {
    /// Computes the figures of a run from its records.
    pub fn from_records(
        streams: usize,
        ttft_ms: f64,
        itl_ms: f64,
        records: &[RequestRecord],
        usage: Usage,
    ) -> StreamFigures {
        let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.ok()).collect();
        let mut lag = Vec::new();
        let mut ttft = Vec::with_capacity(ok.len());
        let mut itl = Vec::new();
        for r in &ok {
            lag.extend(
                r.chunks
                    .iter()
                    .filter_map(|c| c.lag)
                    .map(|l| l as f64 / 1e6),
            );
            if let Some(first) = r.chunks.first() {
                ttft.push((first.t as f64 - r.sent as f64) / 1e6 - ttft_ms);
            }
            itl.extend(
                r.chunks
                    .windows(2)
                    .map(|w| (w[1].t as f64 - w[0].t as f64) / 1e6 - itl_ms),
            );
        }
        let first = records.iter().map(|r| r.sent).min().unwrap_or(0);
        let last = records.iter().filter_map(|r| r.done).max().unwrap_or(first);
        StreamFigures {
            streams,
            ttft_ms,
            itl_ms,
            ok: ok.len(),
            failed: records.len() - ok.len(),
            held: most_in_flight(records),
            chunks: ok.iter().map(|r| r.chunks.len() as u64).sum(),
            tokens: ok
                .iter()
                .map(|r| r.completion_tokens.unwrap_or(r.chunks.len() as u64))
                .sum(),
            seconds: last.saturating_sub(first) as f64 / 1e9,
            lag: Spread::of(lag),
            ttft_err: Spread::of(ttft),
            itl_err: Spread::of(itl),
            usage,
        }
    }

    /// Chunks received per second.
    pub fn chunks_per_s(&self) -> f64 {
        per_s(self.chunks as f64, self.seconds)
    }

    /// Tokens received per second.
    pub fn tokens_per_s(&self) -> f64 {
        per_s(self.tokens as f64, self.seconds)
    }

    /// Client CPU seconds per million tokens.
    pub fn cpu_s_per_mtok(&self) -> Option<f64> {
        (self.tokens > 0).then(|| self.usage.cpu.as_secs_f64() / self.tokens as f64 * 1e6)
    }

    /// Tokens per second one core could ingest at this cost (1 / CPU time per token).
    pub fn tokens_per_core_s(&self) -> Option<f64> {
        let cpu = self.usage.cpu.as_secs_f64();
        (cpu > 0.0 && self.tokens > 0).then(|| self.tokens as f64 / cpu)
    }

    /// Share of one core the client used.
    pub fn cores(&self) -> f64 {
        per_s(self.usage.cpu.as_secs_f64(), self.seconds)
    }

    /// RSS growth per in-flight stream, KiB.
    pub fn kib_per_stream(&self) -> f64 {
        self.usage.rss_delta as f64 / 1024.0 / self.streams.max(1) as f64
    }
}

/// Most requests in flight at once: a sweep over sends (+1) and ends (−1), an end
/// before a send at the same instant. A record without an end counts to the last.
fn most_in_flight(records: &[RequestRecord]) -> usize {
    let mut events: Vec<(u64, i32)> = Vec::with_capacity(records.len() * 2);
    for r in records {
        events.push((r.sent, 1));
        events.push((r.done.unwrap_or(u64::MAX), -1));
    }
    events.sort_unstable();
    let (mut now, mut most) = (0i64, 0i64);
    for (_, d) in events {
        now += i64::from(d);
        most = most.max(now);
    }
    most as usize
}

fn per_s(n: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n / seconds
    } else {
        0.0
    }
}

/// Figures of one open-loop (rate) run.
#[derive(Debug, Clone, PartialEq)]
pub struct RateFigures {
    /// Requests per second asked for.
    pub target_rps: f64,
    /// Requests in the plan.
    pub planned: usize,
    /// Requests sent.
    pub sent: usize,
    /// Successful requests.
    pub ok: usize,
    /// Planned requests / span of the planned send times.
    pub offered_rps: f64,
    /// Sent requests / span of the actual send times.
    pub achieved_rps: f64,
    /// Successful requests / (first send to last completion).
    pub completed_rps: f64,
    /// sent − scheduled, ms.
    pub send_lag: Spread,
    /// What the client spent.
    pub usage: Usage,
}

impl RateFigures {
    /// Computes the figures of a rate run from its plan and records.
    pub fn from_records(
        target_rps: f64,
        offsets: &[u64],
        records: &[RequestRecord],
        usage: Usage,
    ) -> RateFigures {
        let span = |v: &[u64]| match (v.iter().min(), v.iter().max()) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => 0.0,
        };
        let sent: Vec<u64> = records.iter().map(|r| r.sent).collect();
        let ok = records.iter().filter(|r| r.ok()).count();
        let first = sent.iter().min().copied().unwrap_or(0);
        let last_done = records.iter().filter_map(|r| r.done).max().unwrap_or(first);
        let gaps = |n: usize, s: f64| if n > 1 { per_s((n - 1) as f64, s) } else { 0.0 };
        RateFigures {
            target_rps,
            planned: offsets.len(),
            sent: records.len(),
            ok,
            offered_rps: gaps(offsets.len(), span(offsets)),
            achieved_rps: gaps(sent.len(), span(&sent)),
            completed_rps: per_s(ok as f64, last_done.saturating_sub(first) as f64 / 1e9),
            send_lag: Spread::of(
                records
                    .iter()
                    .map(|r| (r.sent as f64 - r.scheduled as f64) / 1e6)
                    .collect(),
            ),
            usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput::drive::record::Chunk;

    fn rec(sent: u64, chunks: &[(u64, i64)]) -> RequestRecord {
        let mut r = RequestRecord::new("sim", 1.0, 0, 0, sent);
        r.sent = sent;
        r.chunks = chunks
            .iter()
            .map(|&(t, lag)| Chunk {
                t,
                len: 1,
                reasoning: 0,
                lag: Some(lag),
                bound: None,
            })
            .collect();
        r.done = chunks.last().map(|c| c.0);
        r.completion_tokens = Some(chunks.len() as u64);
        r
    }

    #[test]
    fn errors_are_measured_minus_configured() {
        // TTFT 50 ms, ITL 20 ms; the first chunk 1 ms late, gaps of 20 and 21 ms.
        let ms = 1_000_000;
        let r = rec(
            10 * ms,
            &[(61 * ms, 100_000), (81 * ms, 200_000), (102 * ms, 300_000)],
        );
        let f = StreamFigures::from_records(
            1,
            50.0,
            20.0,
            &[r],
            Usage {
                cpu: Duration::from_millis(3),
                rss_delta: 2048,
                rss_peak: 4096,
                load_avg: Some(0.5),
                sim_cpu: Some(Duration::from_millis(2)),
                machine_cpu: Some(Duration::from_millis(6)),
                wall: Duration::from_millis(10),
            },
        );
        assert_eq!(
            (f.ok, f.failed, f.held, f.chunks, f.tokens),
            (1, 0, 1, 3, 3)
        );
        assert_eq!(f.ttft_err.p50, Some(1.0));
        assert_eq!(f.itl_err.p50, Some(0.5));
        assert_eq!(f.itl_err.max, Some(1.0));
        assert_eq!(f.lag.p50, Some(0.2));
        assert_eq!(f.lag.max, Some(0.3));
        assert!((f.seconds - 0.092).abs() < 1e-12);
        assert_eq!(f.cpu_s_per_mtok(), Some(1000.0));
        assert_eq!(f.tokens_per_core_s(), Some(1000.0));
        assert_eq!(f.kib_per_stream(), 2.0);
        assert_eq!(f.usage.sim_cores(), Some(0.2));
        assert!((f.usage.other_cores().unwrap() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn in_flight_counts_overlaps_only() {
        let ms = 1_000_000;
        // [0, 10], [5, 15], [15, 20]: two at once; the third starts as the second ends.
        let records = [
            rec(0, &[(10 * ms, 0)]),
            rec(5 * ms, &[(15 * ms, 0)]),
            rec(15 * ms, &[(20 * ms, 0)]),
        ];
        assert_eq!(most_in_flight(&records), 2);
        assert_eq!(most_in_flight(&[]), 0);
    }

    #[test]
    fn rate_figures_compare_plan_and_sends() {
        let ms = 1_000_000;
        let offsets = vec![0, 10 * ms, 20 * ms];
        let mut records: Vec<RequestRecord> = offsets
            .iter()
            .map(|&o| rec(o, &[(o + 5 * ms, 0)]))
            .collect();
        records[2].sent += 2 * ms;
        let f = RateFigures::from_records(100.0, &offsets, &records, Usage::default());
        assert_eq!((f.planned, f.sent, f.ok), (3, 3, 3));
        assert!((f.offered_rps - 100.0).abs() < 1e-9);
        assert!((f.achieved_rps - 2.0 / 0.022).abs() < 1e-9);
        assert_eq!(f.send_lag.max, Some(2.0));
        assert_eq!(f.send_lag.p50, Some(0.0));
    }
}
