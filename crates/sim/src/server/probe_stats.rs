//! What the timing probe saw, summed up for `goodput sim`'s log at shutdown, so a
//! benchmark can read the simulator's own lateness whichever client drove it
//! (a client that keeps no probe times included): each chunk's lateness (written
//! minus scheduled), the first chunks' alone, and how long requests waited
//! between their arrival and their handler (the time [`super::arrival`] gives
//! back to them).
//!
//! Fixed-size histograms of atomics (5 µs buckets up to 100 ms, and a count
//! above): bounded memory, no lock on the write path.

use std::sync::atomic::{AtomicU64, Ordering};

/// Width of one bucket, ns.
const BUCKET_NS: u64 = 5_000;
/// Buckets: 5 µs x 20,000 = 100 ms.
const BUCKETS: usize = 20_000;

/// Counts of durations in [`BUCKET_NS`] buckets.
pub(crate) struct Histogram {
    buckets: Box<[AtomicU64]>,
    /// Values at or above the last bucket.
    over: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            over: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Counts `ns` (a negative value, early, counts as 0).
    pub fn record(&self, ns: i64) {
        let i = (ns.max(0) as u64 / BUCKET_NS) as usize;
        match self.buckets.get(i) {
            Some(b) => b.fetch_add(1, Ordering::Relaxed),
            None => self.over.fetch_add(1, Ordering::Relaxed),
        };
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The `q`-quantile's bucket upper edge in ms; `None` if empty, infinity if
    /// it lies above the last bucket.
    fn quantile_ms(&self, q: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((n as f64 * q).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= rank {
                return Some(((i as u64 + 1) * BUCKET_NS) as f64 / 1e6);
            }
        }
        Some(f64::INFINITY)
    }

    fn line(&self, name: &str) -> String {
        let q = |q| {
            self.quantile_ms(q)
                .map_or("-".into(), |v| format!("{v:.3}"))
        };
        format!(
            "{name} n={} p50={} p99={} p99.9={} ms",
            self.count(),
            q(0.5),
            q(0.99),
            q(0.999)
        )
    }
}

/// The simulator's probe figures since it started.
pub(crate) struct ProbeStats {
    /// Every probed chunk: written minus scheduled.
    pub chunks: Histogram,
    /// A response's first token chunk: written minus scheduled (arrival + TTFT).
    pub first: Histogram,
    /// Every generation request: handler start minus arrival.
    pub waited: Histogram,
}

impl ProbeStats {
    pub fn new() -> ProbeStats {
        ProbeStats {
            chunks: Histogram::new(),
            first: Histogram::new(),
            waited: Histogram::new(),
        }
    }

    /// One log line, or `None` when no chunk was probed.
    pub fn summary(&self) -> Option<String> {
        (self.chunks.count() > 0).then(|| {
            format!(
                "probe: lateness {}; first chunks {}; arrival to handler {} (quantiles are 5 us bucket edges)",
                self.chunks.line("all chunks"),
                self.first.line(""),
                self.waited.line("")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_bucket_edges_and_bounded() {
        let h = Histogram::new();
        assert_eq!(h.quantile_ms(0.5), None);
        for ns in [-10, 1_000, 7_000, 12_000] {
            h.record(ns);
        }
        h.record(1_000_000_000);
        assert_eq!(h.quantile_ms(0.4), Some(0.005));
        assert_eq!(h.quantile_ms(0.6), Some(0.010));
        assert_eq!(h.quantile_ms(0.8), Some(0.015));
        assert_eq!(h.quantile_ms(1.0), Some(f64::INFINITY));
        let s = ProbeStats::new();
        assert_eq!(s.summary(), None);
        s.chunks.record(3_000);
        assert!(s.summary().unwrap().contains("all chunks n=1 p50=0.005"));
    }
}
