//! Where a response's tokens come from: one source per choice (the model's
//! driver, or a fixed schedule), merged.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::driver::{Command, Delivery};
use super::timer;
use super::ScheduleStats;
use crate::model::RequestId;

/// Tells the driver to drop a request when its response body goes away.
pub(crate) struct CancelGuard {
    pub id: RequestId,
    pub commands: mpsc::UnboundedSender<Command>,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        // Harmless if the request already finished; ignored if the driver is gone.
        let _ = self.commands.send(Command::Cancel { id: self.id });
    }
}

/// Counts a fixed-schedule request as running while its body lives.
pub(crate) struct InFlight(pub Arc<ScheduleStats>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0
            .running
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Where a request's tokens come from.
pub(crate) enum Source {
    /// The model's driver task.
    Model {
        rx: mpsc::Receiver<Delivery>,
        _guard: CancelGuard,
    },
    /// Fixed schedule: first token at `first_at`, then one every `itl`.
    Schedule {
        next: u64,
        total: Option<u64>,
        first_at: Instant,
        itl: Duration,
        stats: Arc<ScheduleStats>,
        _inflight: InFlight,
        /// The wait for the next token, once started.
        sleep: Option<timer::Sleep>,
    },
}

impl Source {
    /// The next delivery when it is due; `None` at the end.
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        match self {
            Source::Model { rx, .. } => rx.poll_recv(cx),
            Source::Schedule {
                next,
                total,
                first_at,
                itl,
                stats,
                sleep,
                ..
            } => {
                if total.is_some_and(|t| *next >= t) {
                    return Poll::Ready(None);
                }
                // Kept across polls (and a dropped `now_or_never`): one timer
                // registration per token.
                let wait = sleep.get_or_insert_with(|| {
                    let offset = itl.saturating_mul(u32::try_from(*next).unwrap_or(u32::MAX));
                    timer::sleep_until(first_at.checked_add(offset).unwrap_or(*first_at))
                });
                ready!(Pin::new(&mut *wait).poll(cx));
                let at = wait.deadline();
                *sleep = None;
                *next += 1;
                stats
                    .generation_tokens
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Poll::Ready(Some(Delivery {
                    tokens: 1,
                    finished: total.is_some_and(|t| *next >= t),
                    scheduled: at,
                }))
            }
        }
    }
}

/// What one choice's source yields: a delivery, or its end.
pub(super) type SourceItem = (usize, Option<Delivery>);

/// Every choice's source, merged: each yields its deliveries, then `(index,
/// None)` once at its end; `None` when all have ended. Polled in turn from the
/// one after the last that yielded, so choices due together go in index order
/// and none is starved.
pub(super) struct Sources {
    list: Vec<Option<Source>>,
    start: usize,
}

impl Sources {
    pub(super) fn new(sources: Vec<Source>) -> Sources {
        Sources {
            list: sources.into_iter().map(Some).collect(),
            start: 0,
        }
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<SourceItem>> {
        let n = self.list.len();
        let mut live = false;
        for k in 0..n {
            let i = (self.start + k) % n;
            let Some(source) = &mut self.list[i] else {
                continue;
            };
            live = true;
            match source.poll_next(cx) {
                Poll::Ready(Some(d)) => {
                    self.start = (i + 1) % n;
                    return Poll::Ready(Some((i, Some(d))));
                }
                Poll::Ready(None) => {
                    self.list[i] = None;
                    return Poll::Ready(Some((i, None)));
                }
                Poll::Pending => {}
            }
        }
        if live {
            Poll::Pending
        } else {
            Poll::Ready(None)
        }
    }

    pub(super) async fn next(&mut self) -> Option<SourceItem> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    /// A fixed schedule already due (first token in the past): every poll is ready.
    fn due_schedule(tokens: u64, stats: &Arc<ScheduleStats>) -> Source {
        let past = Instant::now() - Duration::from_secs(1);
        stats
            .running
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Source::Schedule {
            next: 0,
            total: Some(tokens),
            first_at: past,
            itl: Duration::from_millis(1),
            stats: stats.clone(),
            _inflight: InFlight(stats.clone()),
            sleep: None,
        }
    }

    /// Choices due together are merged in turn (index order), each ends once
    /// with `(index, None)`, then the whole ends; the scheduled times are the
    /// schedule's.
    #[test]
    fn sources_take_turns_and_end_once() {
        let stats = Arc::new(ScheduleStats::default());
        let mut sources = Sources::new(vec![due_schedule(2, &stats), due_schedule(1, &stats)]);
        let mut seen = Vec::new();
        let mut scheduled = Vec::new();
        while let Some((i, d)) = sources.next().now_or_never().expect("due: ready at once") {
            seen.push((i, d.map(|d| d.finished)));
            scheduled.extend(d.map(|d| d.scheduled));
        }
        assert_eq!(
            seen,
            [
                (0, Some(false)),
                (1, Some(true)),
                (0, Some(true)),
                (1, None),
                (0, None)
            ]
        );
        assert_eq!(scheduled[0] + Duration::from_millis(1), scheduled[2]);
        assert_eq!(
            stats
                .generation_tokens
                .load(std::sync::atomic::Ordering::Relaxed),
            3
        );
        drop(sources);
        assert_eq!(stats.running.load(std::sync::atomic::Ordering::Relaxed), 0);
    }
}
