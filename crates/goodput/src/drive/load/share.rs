//! One load level shared by `N` clients (`goodput run --load-shard I/N`): each
//! runs every trial of the plan with its share of the load, and `goodput merge`
//! pools their records into one point ([`crate::distribute::shard::load_merge`]).
//!
//! The split is a pure function of `(x, I, N)`: concurrency `x` as `x / N`, one
//! more for the first `x % N` clients; rate `x` as `x / N` each, with arrival gaps
//! drawn from a seed of their own per client (the superposition of `N` Poisson
//! streams of rate `x / N` is Poisson of rate `x`; of Gamma streams it is less
//! bursty than one Gamma stream). A trial's requests (the same list one client
//! would send) are cut into `N` runs of consecutive indexes split the same way,
//! and each client keeps the indexes, so merged records never collide.
//!
//! A common start: with `--load-barrier DIR` (a folder every client sees, e.g.
//! on the shared file system), each client writes `DIR/<trial>.ready.<I>` before a
//! trial; client 0, once all `N` are there, writes `DIR/<trial>.start` holding a
//! wall-clock instant (`CLOCK_REALTIME`, Unix seconds) a little ahead, and every
//! client sleeps until that instant by its own clock. Clocks are thus compared
//! per node through the wall clock (NTP keeps nodes within about a millisecond);
//! records keep each client's own monotonic times from its trial start.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::define::plan::Plan;
use crate::define::profile::LoadMode;
use crate::UsageError;

/// How long a client waits at the barrier for the others before it starts alone.
pub const BARRIER_TIMEOUT: Duration = Duration::from_secs(600);
/// How far ahead of the last arrival client 0 sets the common start.
const START_LEAD: Duration = Duration::from_millis(250);

/// `(first, len)` of client `i`'s part of `total` things split among `n`: as even
/// as integers allow, the remainder to the lowest indexes; the parts are
/// consecutive and sum to `total`.
pub fn split(total: u64, i: u32, n: u32) -> (u64, u64) {
    let (i, n) = (u64::from(i), u64::from(n.max(1)));
    let (base, rem) = (total / n, total % n);
    (i * base + i.min(rem), base + u64::from(i < rem))
}

/// Client `i`'s share of load level `x`.
pub fn share(mode: LoadMode, x: f64, i: u32, n: u32) -> Result<f64, UsageError> {
    match mode {
        LoadMode::Concurrency => {
            let c = x.round().max(0.0) as u64;
            if c < u64::from(n) {
                return Err(UsageError(format!(
                    "--load-shard {i}/{n}: concurrency {c} cannot be split among {n} clients \
                     (each needs at least one request in flight); use at most {c} load shards"
                )));
            }
            Ok(split(c, i, n).1 as f64)
        }
        LoadMode::Rate => Ok(x / f64::from(n)),
        LoadMode::Trace => Err(UsageError(format!(
            "--load-shard {i}/{n}: a trace's own send times cannot be split between clients yet"
        ))),
    }
}

/// Checks that every load level and trial of `plan` can be split among `n`.
pub fn check(plan: &Plan, i: u32, n: u32) -> Result<(), UsageError> {
    if plan.search.is_some() {
        return Err(UsageError(format!(
            "--load-shard {i}/{n}: a capacity search picks its load levels as it goes, \
             so its clients could not agree on them; give fixed levels instead"
        )));
    }
    if plan.requests_per_trial < n {
        return Err(UsageError(format!(
            "--load-shard {i}/{n}: {} requests per trial cannot be split among {n} clients",
            plan.requests_per_trial
        )));
    }
    for &x in &plan.points {
        share(plan.mode, x, i, n)?;
    }
    Ok(())
}

/// The seed of client `i`'s arrival gaps (client 0 of 1 keeps the plan's seed).
pub fn arrival_seed(seed: u64, i: u32, n: u32) -> u64 {
    if n <= 1 {
        seed
    } else {
        seed ^ (u64::from(i) + 1).rotate_right(8)
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Why a client gave up waiting at the load barrier (its trial then starts alone).
#[derive(Debug, thiserror::Error)]
pub enum BarrierError {
    /// The shared folder could not be written or read.
    #[error("load barrier {}: {error}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// Client 0 could not write the start instant.
    #[error("load barrier {}: {error}", path.display())]
    Write {
        /// The start file.
        path: PathBuf,
        /// Why.
        error: report::ReportError,
    },
    /// Client 0 waited [`BARRIER_TIMEOUT`] and not every client arrived.
    #[error("load barrier {0}: not every client arrived")]
    Missing(String),
    /// Client 0 wrote no start instant within [`BARRIER_TIMEOUT`].
    #[error("load barrier {0}: client 0 set no start")]
    NoStart(String),
}

/// Waits at the barrier `key` (one trial) until the common start instant; returns
/// how long it waited, or why it gave up (the trial then starts alone).
pub async fn barrier(dir: &Path, key: &str, i: u32, n: u32) -> Result<Duration, BarrierError> {
    let began = std::time::Instant::now();
    let io = |error: std::io::Error, p: &Path| BarrierError::Io {
        path: p.to_path_buf(),
        error,
    };
    std::fs::create_dir_all(dir).map_err(|e| io(e, dir))?;
    let ready = |k: u32| dir.join(format!("{key}.ready.{k}"));
    let start = dir.join(format!("{key}.start"));
    std::fs::write(ready(i), b"").map_err(|e| io(e, &ready(i)))?;
    let poll = Duration::from_millis(5);
    if i == 0 {
        while !(0..n).all(|k| ready(k).exists()) {
            if began.elapsed() > BARRIER_TIMEOUT {
                return Err(BarrierError::Missing(key.into()));
            }
            tokio::time::sleep(poll).await;
        }
        let at = unix_now() + START_LEAD.as_secs_f64();
        crate::redact::write_file(&start, &format!("{at:.6}\n")).map_err(|error| {
            BarrierError::Write {
                path: start.clone(),
                error,
            }
        })?;
    }
    let at: f64 = loop {
        if let Some(at) = std::fs::read_to_string(&start)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break at;
        }
        if began.elapsed() > BARRIER_TIMEOUT {
            return Err(BarrierError::NoStart(key.into()));
        }
        tokio::time::sleep(poll).await;
    };
    let ahead = at - unix_now();
    if ahead > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(ahead.min(60.0))).await;
    }
    Ok(began.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sum_to_the_whole_in_consecutive_runs() {
        for total in [1u64, 2, 3, 7, 10, 64, 1000] {
            for n in 1..=7u32.min(total as u32) {
                let parts: Vec<(u64, u64)> = (0..n).map(|i| split(total, i, n)).collect();
                assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), total);
                assert!(parts.iter().all(|p| p.1 >= 1), "{total}/{n}: {parts:?}");
                for w in parts.windows(2) {
                    assert_eq!(w[0].0 + w[0].1, w[1].0, "{total}/{n}: {parts:?}");
                    assert!(w[0].1 >= w[1].1, "remainder goes to the lowest: {parts:?}");
                }
            }
        }
        assert_eq!(split(10, 0, 3), (0, 4));
        assert_eq!(split(10, 2, 3), (7, 3));
    }

    #[test]
    fn concurrency_shares_are_never_zero_and_rates_divide() {
        let c: Vec<f64> = (0..3)
            .map(|i| share(LoadMode::Concurrency, 8.0, i, 3).unwrap())
            .collect();
        assert_eq!(c, vec![3.0, 3.0, 2.0]);
        assert_eq!(share(LoadMode::Rate, 9.0, 1, 3).unwrap(), 3.0);
        let err = share(LoadMode::Concurrency, 2.0, 0, 3).unwrap_err().0;
        assert!(
            err.contains("concurrency 2") && err.contains("3 clients"),
            "{err}"
        );
        assert!(err.contains("at most 2"), "{err}");
    }

    #[test]
    fn each_client_draws_its_own_arrivals() {
        assert_eq!(arrival_seed(7, 0, 1), 7);
        let seeds: Vec<u64> = (0..4).map(|i| arrival_seed(7, i, 4)).collect();
        let mut unique = seeds.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 4, "{seeds:?}");
    }
}
