//! The bounded queue between the run and the exporter, and the thread that
//! exports its spans in batches.
//!
//! The run pushes a trial's spans after the trial and never waits: a full queue
//! drops the span and counts it (the SDK's batch processor only logs that count,
//! and the report must carry it). The exporter runs on a thread of its own with
//! a one-thread tokio runtime, so that encoding and sending spans never takes a
//! worker of the runtime that times the next trial's requests. The exporter is
//! any [`SpanExporter`]: OTLP/HTTP in a run, a fake in tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use tokio::sync::{mpsc, oneshot};

/// What became of the spans so far.
#[derive(Debug, Default)]
pub struct Counts {
    /// Spans pushed (queued or dropped).
    pub spans: AtomicU64,
    /// Accepted by the exporter.
    pub exported: AtomicU64,
    /// Dropped because the queue was full.
    pub dropped: AtomicU64,
    /// In batches the exporter failed.
    pub failed: AtomicU64,
    /// The first failure, as the exporter said it.
    pub first_error: Mutex<Option<String>>,
}

impl Counts {
    fn failed_with(&self, n: u64, why: String) {
        self.failed.fetch_add(n, Ordering::Relaxed);
        let mut first = self.first_error.lock().unwrap_or_else(|e| e.into_inner());
        first.get_or_insert(why);
    }
}

/// The queue's sending end, with the export thread behind it.
pub struct Queue {
    tx: Option<mpsc::Sender<SpanData>>,
    counts: Arc<Counts>,
    done: Option<oneshot::Receiver<()>>,
}

impl Queue {
    /// Starts the export thread: at most `max_queue` spans wait, at most
    /// `max_batch` go in one export, and one export may take `timeout`.
    pub fn start<E: SpanExporter + 'static>(
        exporter: E,
        max_queue: usize,
        max_batch: usize,
        timeout: Duration,
    ) -> std::io::Result<Queue> {
        let (tx, rx) = mpsc::channel(max_queue.max(1));
        let (done_tx, done) = oneshot::channel();
        let counts = Arc::new(Counts::default());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let c = counts.clone();
        std::thread::Builder::new()
            .name("goodput-otel".into())
            .spawn(move || {
                rt.block_on(export_loop(exporter, rx, max_batch.max(1), timeout, &c));
                let _ = done_tx.send(());
            })?;
        Ok(Queue {
            tx: Some(tx),
            counts,
            done: Some(done),
        })
    }

    /// Queues `span`, or drops and counts it when the queue is full.
    pub fn push(&self, span: SpanData) {
        self.counts.spans.fetch_add(1, Ordering::Relaxed);
        let queued = self.tx.as_ref().is_some_and(|tx| tx.try_send(span).is_ok());
        if !queued {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Closes the queue and waits, at most `wait`, for the spans in it to be
    /// exported; those still queued then are counted as failed.
    pub async fn close(&mut self, wait: Duration) {
        drop(self.tx.take());
        let Some(done) = self.done.take() else {
            return;
        };
        if tokio::time::timeout(wait, done).await.is_err() {
            let c = &self.counts;
            let settled = c.exported.load(Ordering::Relaxed)
                + c.dropped.load(Ordering::Relaxed)
                + c.failed.load(Ordering::Relaxed);
            let left = c.spans.load(Ordering::Relaxed).saturating_sub(settled);
            c.failed_with(
                left,
                format!(
                    "the export did not end within {} s of the run",
                    wait.as_secs()
                ),
            );
        }
    }
}

/// Takes what is queued (up to `max_batch` spans, not waiting for more: a trial's
/// spans arrive together) and exports it, until the queue is closed and empty.
async fn export_loop<E: SpanExporter>(
    mut exporter: E,
    mut rx: mpsc::Receiver<SpanData>,
    max_batch: usize,
    timeout: Duration,
    counts: &Counts,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = Vec::with_capacity(max_batch.min(rx.len() + 1));
        batch.push(first);
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(s) => batch.push(s),
                Err(_) => break,
            }
        }
        let n = batch.len() as u64;
        // The exporter's HTTP client has the timeout too; this bounds any exporter.
        let guard = timeout + Duration::from_secs(1);
        match tokio::time::timeout(guard, exporter.export(batch)).await {
            Ok(Ok(())) => {
                counts.exported.fetch_add(n, Ordering::Relaxed);
            }
            Ok(Err(e)) => counts.failed_with(n, e.to_string()),
            Err(_) => counts.failed_with(n, format!("no answer within {} ms", guard.as_millis())),
        }
    }
    let _ = exporter.shutdown();
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};

    /// A fake exporter: waits for `gate` before its first export, then keeps
    /// the names it was given, or fails every export.
    #[derive(Debug)]
    struct Fake {
        gate: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
        got: Arc<Mutex<Vec<String>>>,
        fail: bool,
    }

    impl SpanExporter for Fake {
        async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
            let gate = self.gate.lock().unwrap().take();
            if let Some(g) = gate {
                let _ = tokio::task::spawn_blocking(move || g.recv()).await;
            }
            if self.fail {
                return Err(OTelSdkError::InternalFailure("refused".into()));
            }
            let mut got = self.got.lock().unwrap();
            got.extend(batch.into_iter().map(|s| s.name.into_owned()));
            Ok(())
        }
    }

    fn span(name: &str) -> SpanData {
        let rec = crate::drive::record::RequestRecord::new(name, 1.0, 0, 0, 0);
        let slo = report::Slo::default();
        let t = super::super::span::TrialSpans {
            started_unix_s: 1.0,
            engine: None,
            slo: &slo,
        };
        let ids = opentelemetry_sdk::trace::RandomIdGenerator::default();
        let mut s = super::super::span::request_span(&rec, &t, &ids, &super::super::span::scope())
            .expect("a span");
        s.name = name.to_string().into();
        s
    }

    fn load(c: &Counts) -> [u64; 4] {
        [&c.spans, &c.exported, &c.dropped, &c.failed].map(|a| a.load(Ordering::Relaxed))
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_what_does_not_fit() {
        let (open, gate) = std::sync::mpsc::channel();
        let got = Arc::new(Mutex::new(Vec::new()));
        let fake = Fake {
            gate: Mutex::new(Some(gate)),
            got: got.clone(),
            fail: false,
        };
        let mut q = Queue::start(fake, 2, 1, Duration::from_secs(5)).unwrap();
        // The first span is taken into an export held at the gate; two more fill
        // the queue of two; the other five find it full.
        q.push(span("s0"));
        for _ in 0..5000 {
            if q.tx.as_ref().unwrap().capacity() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for i in 1..8 {
            q.push(span(&format!("s{i}")));
        }
        open.send(()).unwrap();
        q.close(Duration::from_secs(10)).await;
        assert_eq!(load(q.counts()), [8, 3, 5, 0]);
        assert_eq!(*got.lock().unwrap(), ["s0", "s1", "s2"]);
    }

    #[tokio::test]
    async fn failed_exports_are_counted_with_the_first_reason() {
        let fake = Fake {
            gate: Mutex::new(None),
            got: Arc::new(Mutex::new(Vec::new())),
            fail: true,
        };
        let mut q = Queue::start(fake, 16, 4, Duration::from_secs(5)).unwrap();
        for i in 0..6 {
            q.push(span(&format!("s{i}")));
        }
        q.close(Duration::from_secs(10)).await;
        assert_eq!(load(q.counts()), [6, 0, 0, 6]);
        let why = q.counts().first_error.lock().unwrap().clone().unwrap();
        assert!(why.contains("refused"), "{why}");
    }

    #[tokio::test]
    async fn spans_still_queued_when_the_wait_ends_are_counted_as_failed() {
        let (_open, gate) = std::sync::mpsc::channel();
        let fake = Fake {
            gate: Mutex::new(Some(gate)),
            got: Arc::new(Mutex::new(Vec::new())),
            fail: false,
        };
        let mut q = Queue::start(fake, 16, 4, Duration::from_secs(60)).unwrap();
        for i in 0..3 {
            q.push(span(&format!("s{i}")));
        }
        q.close(Duration::from_millis(200)).await;
        assert_eq!(load(q.counts()), [3, 0, 0, 3]);
        // Pushed after the close: dropped, never queued.
        q.push(span("late"));
        assert_eq!(load(q.counts()), [4, 0, 1, 3]);
    }
}
