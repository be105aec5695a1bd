//! Sweeps split over machines: a plan cut into `N` deterministic slices (`goodput
//! run --shard I/N`), and shard reports merged back into one ([`merge`]).
//!
//! Slicing is a pure function of the plan and `(I, N)`. Engines come first, since
//! each configuration needs its own GPU: with `N` at most the number of engines `E`,
//! shard `I` runs the engines `e` with `e % N == I`, every load level. With more
//! shards than engines, engine `e` gets `N / E` shards (one more for the first
//! `N % E` engines), numbered in engine order, and its load levels are dealt among
//! them in turn (level `p` to its `p % k`-th shard), so that low and high loads mix.
//! A capacity search picks its own levels, so it is sliced by engine only.
//!
//! A slice is itself a plan (fewer engines, or one engine with fewer levels), so
//! `run` runs it like any other, durable and resumable in its own output. The
//! shard report names the whole plan's fingerprints and its slice
//! ([`report::ShardInfo`]); requests keep the whole plan's seeds, so a merged sweep
//! sends what one machine would have sent.

pub mod load_merge;
pub mod merge;
#[cfg(test)]
mod tests;

use report::ShardInfo;

use crate::define::plan::Plan;
use crate::UsageError;

/// `I/N`: part `I` of `N`, `0 <= I < N` (`--shard`, `--load-shard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// This part, from 0.
    pub index: u32,
    /// How many parts.
    pub count: u32,
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What is wrong with an `I/N`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartError {
    /// No `/` between I and N.
    #[error("`{0}`: no `/`; write I/N, e.g. 0/4")]
    NoSlash(String),
    /// I or N is not a whole number.
    #[error("`{text}`: {which} is not a whole number; write I/N, e.g. 0/4")]
    NotWhole {
        /// The text given.
        text: String,
        /// `I` or `N`.
        which: &'static str,
    },
    /// N is 0.
    #[error("`{0}`: N must be at least 1")]
    NoParts(String),
    /// I is N or more.
    #[error("`{0}`: I counts from 0 and must be below N")]
    Beyond(String),
}

impl std::str::FromStr for Part {
    type Err = PartError;

    /// Reads `I/N` as written on the command line.
    fn from_str(s: &str) -> Result<Part, PartError> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| PartError::NoSlash(s.into()))?;
        let whole = |v: &str, which| {
            v.trim().parse::<u32>().map_err(|_| PartError::NotWhole {
                text: s.into(),
                which,
            })
        };
        let (index, count) = (whole(i, "I")?, whole(n, "N")?);
        if count == 0 {
            return Err(PartError::NoParts(s.into()));
        }
        if index >= count {
            return Err(PartError::Beyond(s.into()));
        }
        Ok(Part { index, count })
    }
}

/// The most shards a plan can be cut into: one per engine and load level (one per
/// engine for a search).
pub fn max_shards(plan: &Plan) -> u32 {
    let levels = if plan.search.is_some() {
        1
    } else {
        plan.points.len().max(1)
    };
    u32::try_from(plan.engines.len() * levels).unwrap_or(u32::MAX)
}

/// The shards a plan is cut into when none is asked for: one per engine.
pub fn default_shards(plan: &Plan) -> u32 {
    u32::try_from(plan.engines.len().max(1)).unwrap_or(u32::MAX)
}

/// Shard `index` of `count` of `plan`: the slice as a plan of its own, and what the
/// shard report says about it. Errors when `count` is beyond [`max_shards`] (a
/// shard would be empty).
pub fn slice(plan: &Plan, index: u32, count: u32) -> Result<(Plan, ShardInfo), UsageError> {
    let max = max_shards(plan);
    if count == 0 || index >= count {
        return Err(UsageError(format!(
            "--shard {index}/{count}: I counts from 0 and must be below N"
        )));
    }
    if count > max {
        return Err(UsageError(format!(
            "--shard {index}/{count}: the plan has {} engine(s){} so it splits into at most {max} shards",
            plan.engines.len(),
            if plan.search.is_some() {
                " and a search is split by engine only,".to_string()
            } else {
                format!(" x {} load level(s),", plan.points.len())
            }
        )));
    }
    let (engines, points) = assignment(plan.engines.len(), plan.points.len(), index, count);
    let mut sliced = plan.clone();
    sliced.engines = plan
        .engines
        .iter()
        .enumerate()
        .filter(|(e, _)| engines.contains(e))
        .map(|(_, (k, v))| (k.clone(), v.clone()))
        .collect();
    if let Some(points) = &points {
        sliced.points = points.iter().map(|&p| plan.points[p]).collect();
    }
    let info = ShardInfo {
        index,
        count,
        engines: sliced.engines.keys().cloned().collect(),
        points: sliced.points.clone(),
        plan_engines: plan.engines.keys().cloned().collect(),
        plan_points: plan.points.clone(),
        plan_fingerprints: plan.fingerprints(),
    };
    Ok((sliced, info))
}

/// Which engine indexes (of `engines`) and, when not all, which level indexes (of
/// `levels`) shard `index` of `count` runs. `count` is at most `engines * levels`.
fn assignment(
    engines: usize,
    levels: usize,
    index: u32,
    count: u32,
) -> (Vec<usize>, Option<Vec<usize>>) {
    let (i, n) = (index as usize, count as usize);
    if n <= engines {
        return ((0..engines).filter(|e| e % n == i).collect(), None);
    }
    // More shards than engines: engine e owns `k(e)` consecutive shard numbers.
    let k = |e: usize| n / engines + usize::from(e < n % engines);
    let mut first = 0;
    for e in 0..engines {
        let ke = k(e);
        if i < first + ke {
            let j = i - first;
            return (vec![e], Some((0..levels).filter(|p| p % ke == j).collect()));
        }
        first += ke;
    }
    (Vec::new(), Some(Vec::new()))
}
