//! How sure we are: the intervals and tests behind every "meets", "better",
//! "worse" and "capacity" goodput says. Pure and seeded: the same data and seed give
//! the same intervals.
//!
//! - [`order`]: distribution-free confidence intervals for a percentile of pooled
//!   requests from order statistics (Hahn & Meeker, *Statistical Intervals*, 2nd
//!   ed., §5.2): `[x_(l), x_(u)]` with ranks chosen from Binomial(n, q) so that
//!   the interval covers the true q-quantile with probability ≥ 95%, whatever the
//!   distribution.
//! - [`bootstrap`]: the hierarchical (two-stage) bootstrap for nested data
//!   (Davison & Hinkley, *Bootstrap Methods and their Application*, §3.8; Saravanan
//!   et al. 2020, "Application of the hierarchical bootstrap to multi-level data"):
//!   resample trials with replacement, then requests within each drawn trial, so
//!   that trial-to-trial variation is not hidden by many requests. Used for every
//!   change `compare` reports when the per-request records are at hand.
//! - [`welch`] (in the report crate, as the verdict's ranking uses it too): Welch's
//!   t interval on per-trial values, for reports whose requests file is gone (only per-trial summaries left), as AIPerf does across runs.
//! - [`multiple`] (in the report crate): Holm's step-down correction (Holm 1979)
//!   over a table of tests, controlling the chance of any false "better"/"worse" in the table at 5%.
//! - [`capacity`]: the interval of a search's capacity from a bootstrap over the
//!   bracketing probes' trials.
//! - [`spread`]: Student's t interval of a mean over trials, as a share of the
//!   mean: how settled a point's per-trial medians are (adaptive trials).
//!
//! docs/statistics.md says what each interval means and how `compare` decides.

pub mod bootstrap;
pub mod capacity;
pub mod order;
pub mod spread;

/// The confidence level of every interval goodput reports.
pub const LEVEL: f64 = 0.95;

/// The seed of `compare`'s bootstrap when none is given.
pub const DEFAULT_SEED: u64 = 0x5eed_600d;

pub use report::stats::{multiple, normal_quantile, trials_needed, two_sided_p, welch, Change};

/// A seed for one row of a table, from the table's seed and the row's key, so that
/// a row's interval does not depend on which other rows the table has.
pub fn row_seed(seed: u64, key: &str) -> u64 {
    // FNV-1a over the key, mixed with the seed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
