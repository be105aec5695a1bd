//! A metric's trend as `history` shows it: the store's values laid out for the
//! render crate's trend table and chart (one row per run, one column per load
//! level seen, or the capacity).

use crate::render::dates::utc_minute;
use crate::render::trend::{Trend, TrendCell, TrendRow};

use super::query::{Metric, RunRow, TrendRun};

/// The trend of `metric` for `engine` over `runs` (oldest first).
pub fn view(runs: &[TrendRun], engine: &str, metric: Metric) -> Trend {
    let mut loads: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.values.iter().filter_map(|v| v.x))
        .collect();
    loads.sort_by(f64::total_cmp);
    loads.dedup();
    let columns = if metric == Metric::Capacity {
        vec!["capacity".to_string()]
    } else {
        loads
            .iter()
            .map(|x| format!("x={}", crate::render::text::num(*x)))
            .collect()
    };
    let rows = runs
        .iter()
        .map(|r| {
            let cell = |v: &super::TrendValue| {
                v.value.map(|value| TrendCell {
                    value,
                    low: v.low,
                    high: v.high,
                })
            };
            let cells = if metric == Metric::Capacity {
                vec![r.values.first().and_then(cell)]
            } else {
                loads
                    .iter()
                    .map(|x| r.values.iter().find(|v| v.x == Some(*x)).and_then(cell))
                    .collect()
            };
            TrendRow {
                run: r.run.id,
                date: utc_minute(r.run.recorded_unix_s.max(0.0) as u64),
                label: label(&r.run),
                cells,
            }
        })
        .collect();
    Trend {
        title: format!("{} of {engine}", metric.name()),
        describe: metric.describe().to_string(),
        columns,
        rows,
    }
}

/// A run's tags and the profile's commit (short): `nightly v2@1a2b3c4`, or `-`.
pub fn label(r: &RunRow) -> String {
    let tags = r.tags.join(" ");
    match (&r.profile_commit, tags.is_empty()) {
        (Some(c), true) => format!("@{}", c.get(..7).unwrap_or(c)),
        (Some(c), false) => format!("{tags}@{}", c.get(..7).unwrap_or(c)),
        (None, true) => "-".into(),
        (None, false) => tags,
    }
}
