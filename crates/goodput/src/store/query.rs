//! Reading the store: runs listed by filter (newest first), a metric's trend for
//! one engine (oldest first), and a gate's baseline: found, then its report file
//! checked against the hash recorded with it.

use std::path::{Path, PathBuf};

use rusqlite::types::ToSql;
use rusqlite::{params_from_iter, Row};

use super::record::{read_hashed, Kind};
use super::{Store, StoreError};

/// Which runs `history` shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Runs with this engine.
    pub engine: Option<String>,
    /// Runs of this profile (its `name`).
    pub profile: Option<String>,
    /// Runs with this tag.
    pub tag: Option<String>,
    /// Runs recorded at or after this Unix time.
    pub since: Option<f64>,
    /// Runs recorded before this Unix time.
    pub until: Option<f64>,
}

/// One recorded run, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub recorded_unix_s: f64,
    pub kind: Kind,
    pub profile: String,
    pub profile_commit: Option<String>,
    pub status: Option<String>,
    pub predicted: bool,
    pub engines: Vec<String>,
    pub tags: Vec<String>,
    pub report_path: PathBuf,
    pub report_sha256: String,
}

/// A metric `history --metric` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Good requests/s at each load (median over trials, with min and max).
    Goodput,
    /// Pooled SLO attainment at each load, with its interval.
    Attainment,
    /// Median TTFT at each load, ms.
    Ttft,
    /// p99 TTFT at each load, ms.
    P99Ttft,
    /// Median TPOT at each load, ms.
    Tpot,
    /// p99 TPOT at each load, ms.
    P99Tpot,
    /// Output tokens/s at each load.
    Throughput,
    /// A search's capacity, with its interval.
    Capacity,
}

impl Metric {
    /// Every metric, in the order `goodput history --help` lists them.
    pub const ALL: [Metric; 8] = [
        Metric::Goodput,
        Metric::Attainment,
        Metric::Ttft,
        Metric::P99Ttft,
        Metric::Tpot,
        Metric::P99Tpot,
        Metric::Throughput,
        Metric::Capacity,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Goodput => "goodput",
            Metric::Attainment => "attainment",
            Metric::Ttft => "ttft",
            Metric::P99Ttft => "p99-ttft",
            Metric::Tpot => "tpot",
            Metric::P99Tpot => "p99-tpot",
            Metric::Throughput => "throughput",
            Metric::Capacity => "capacity",
        }
    }

    /// What it is, with its unit and its interval.
    pub fn describe(self) -> &'static str {
        match self {
            Metric::Goodput => "good requests/s, median over trials [min, max]",
            Metric::Attainment => "share of requests meeting the SLO [95% interval]",
            Metric::Ttft => "median TTFT ms, median over trials",
            Metric::P99Ttft => "p99 TTFT ms, median over trials",
            Metric::Tpot => "median TPOT ms, median over trials",
            Metric::P99Tpot => "p99 TPOT ms, median over trials",
            Metric::Throughput => "output tokens/s, median over trials",
            Metric::Capacity => "largest load meeting the SLO [95% interval]",
        }
    }

    /// The point columns: value, and the interval's ends when stored.
    fn columns(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Metric::Goodput => ("goodput_rps", "goodput_rps_min", "goodput_rps_max"),
            Metric::Attainment => ("attainment", "attainment_low", "attainment_high"),
            Metric::Ttft => ("median_ttft_ms", "NULL", "NULL"),
            Metric::P99Ttft => ("p99_ttft_ms", "NULL", "NULL"),
            Metric::Tpot => ("median_tpot_ms", "NULL", "NULL"),
            Metric::P99Tpot => ("p99_tpot_ms", "NULL", "NULL"),
            Metric::Throughput => ("output_throughput", "NULL", "NULL"),
            Metric::Capacity => ("max_load", "low", "high"),
        }
    }
}

/// One value of a trend: at a load (`x`), or the capacity (`x` absent).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrendValue {
    pub x: Option<f64>,
    pub value: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// One run of a trend and its values for the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendRun {
    pub run: RunRow,
    pub values: Vec<TrendValue>,
}

/// Which recorded run `gate --baseline` takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Baseline {
    /// The latest complete run of the candidate's profile and engines.
    Last,
    /// The latest run tagged so.
    Tag(String),
}

impl Baseline {
    /// `last`, or a tag.
    pub fn parse(s: &str) -> Baseline {
        if s == "last" {
            Baseline::Last
        } else {
            Baseline::Tag(s.to_string())
        }
    }
}

/// What the candidate of a gate is, to find its baseline (and never itself).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub profile: String,
    pub engines: Vec<String>,
    pub predicted: bool,
    pub path: PathBuf,
    pub sha256: String,
}

const RUN_COLUMNS: &str = "r.id, r.recorded_unix_s, r.command, r.profile, r.profile_commit,
    r.status, r.predicted, r.report_path, r.report_sha256";

impl Store {
    /// Runs passing `f`, newest first.
    pub fn runs(&self, f: &Filter) -> Result<Vec<RunRow>, StoreError> {
        let (clause, params) = where_clause(f);
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs r {clause} ORDER BY r.recorded_unix_s DESC, r.id DESC"
        );
        self.select_runs(&sql, &params)
    }

    fn select_runs(&self, sql: &str, params: &[Box<dyn ToSql>]) -> Result<Vec<RunRow>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map(params_from_iter(params.iter()), run_row)
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for r in rows {
            let mut r = r.map_err(|e| self.sql(e))?;
            r.engines = self.strings(
                "SELECT name FROM run_engines WHERE run_id = ?1 ORDER BY position",
                r.id,
            )?;
            r.tags = self.strings(
                "SELECT tag FROM run_tags WHERE run_id = ?1 ORDER BY tag",
                r.id,
            )?;
            out.push(r);
        }
        Ok(out)
    }

    fn strings(&self, sql: &str, id: i64) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.sql(e))?;
        let rows = stmt
            .query_map([id], |r| r.get::<_, String>(0))
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// `metric` of `engine` in each run passing `f` that has it, oldest first.
    pub fn trend(
        &self,
        f: &Filter,
        engine: &str,
        metric: Metric,
    ) -> Result<Vec<TrendRun>, StoreError> {
        let f = Filter {
            engine: Some(engine.to_string()),
            ..f.clone()
        };
        let mut runs = self.runs(&f)?;
        runs.reverse();
        let (v, lo, hi) = metric.columns();
        let sql = if metric == Metric::Capacity {
            format!(
                "SELECT NULL, {v}, {lo}, {hi} FROM capacities WHERE run_id = ?1 AND engine = ?2"
            )
        } else {
            format!("SELECT x, {v}, {lo}, {hi} FROM points WHERE run_id = ?1 AND engine = ?2 ORDER BY x")
        };
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for run in runs {
            let values = stmt
                .query_map(rusqlite::params![run.id, engine], |r| {
                    Ok(TrendValue {
                        x: r.get(0)?,
                        value: r.get(1)?,
                        low: r.get(2)?,
                        high: r.get(3)?,
                    })
                })
                .map_err(|e| self.sql(e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.sql(e))?;
            if !values.is_empty() {
                out.push(TrendRun { run, values });
            }
        }
        Ok(out)
    }

    /// The run `which` names for `candidate`: never the candidate's own record (its
    /// hash or its path).
    pub fn baseline(&self, which: &Baseline, candidate: &Candidate) -> Result<RunRow, StoreError> {
        let (clause, params) = match which {
            Baseline::Last => where_clause(&Filter {
                profile: Some(candidate.profile.clone()),
                ..Filter::default()
            }),
            Baseline::Tag(t) => where_clause(&Filter {
                tag: Some(t.clone()),
                ..Filter::default()
            }),
        };
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs r {clause} ORDER BY r.recorded_unix_s DESC, r.id DESC"
        );
        let own = candidate.path.display().to_string();
        let found = self.select_runs(&sql, &params)?.into_iter().find(|r| {
            r.kind.is_report()
                && r.report_sha256 != candidate.sha256
                && r.report_path.display().to_string() != own
                && match which {
                    Baseline::Tag(_) => true,
                    Baseline::Last => {
                        r.status.as_deref() == Some("complete")
                            && r.predicted == candidate.predicted
                            && same_set(&r.engines, &candidate.engines)
                    }
                }
        });
        found.ok_or_else(|| StoreError::Missing {
            path: self.path.clone(),
            what: match which {
                Baseline::Last => format!(
                    "no earlier complete run of profile {:?} with engines {} to take as the baseline (history --profile lists its runs)",
                    candidate.profile,
                    candidate.engines.join(", ")
                ),
                Baseline::Tag(t) => format!(
                    "no run tagged {t:?} other than the candidate (runs are tagged with --tag)"
                ),
            },
        })
    }
}

fn same_set(a: &[String], b: &[String]) -> bool {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort();
    b.sort();
    a == b
}

/// A recorded run's report file, checked against the hash recorded with it.
pub fn verified_report(run: &RunRow) -> Result<&Path, StoreError> {
    let path = run.report_path.as_path();
    let (_, sha) = read_hashed(path).map_err(|e| {
        StoreError::Report(format!(
            "baseline run #{} ({}): its report cannot be read: {e}",
            run.id, run.profile
        ))
    })?;
    if sha != run.report_sha256 {
        return Err(StoreError::Report(format!(
            "baseline run #{} ({}): its report {} changed since it was recorded \
             (SHA-256 {} recorded, {} now); restore it, or give the baseline file itself",
            run.id,
            run.profile,
            path.display(),
            short(&run.report_sha256),
            short(&sha)
        )));
    }
    Ok(path)
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

fn run_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        id: r.get(0)?,
        recorded_unix_s: r.get(1)?,
        kind: Kind::from_word(&r.get::<_, String>(2)?),
        profile: r.get(3)?,
        profile_commit: r.get(4)?,
        status: r.get(5)?,
        predicted: r.get(6)?,
        report_path: PathBuf::from(r.get::<_, String>(7)?),
        report_sha256: r.get(8)?,
        engines: Vec::new(),
        tags: Vec::new(),
    })
}

/// `WHERE ...` for a filter, with its parameters (never the values in the text).
fn where_clause(f: &Filter) -> (String, Vec<Box<dyn ToSql>>) {
    let mut parts: Vec<&str> = Vec::new();
    let mut params: Vec<Box<dyn ToSql>> = Vec::new();
    if let Some(e) = &f.engine {
        parts.push("EXISTS (SELECT 1 FROM run_engines g WHERE g.run_id = r.id AND g.name = ?)");
        params.push(Box::new(e.clone()));
    }
    if let Some(p) = &f.profile {
        parts.push("r.profile = ?");
        params.push(Box::new(p.clone()));
    }
    if let Some(t) = &f.tag {
        parts.push("EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.id AND t.tag = ?)");
        params.push(Box::new(t.clone()));
    }
    if let Some(s) = f.since {
        parts.push("r.recorded_unix_s >= ?");
        params.push(Box::new(s));
    }
    if let Some(u) = f.until {
        parts.push("r.recorded_unix_s < ?");
        params.push(Box::new(u));
    }
    if parts.is_empty() {
        (String::new(), params)
    } else {
        (format!("WHERE {}", parts.join(" AND ")), params)
    }
}

/// A `--since`/`--until` date: `YYYY-MM-DD` (UTC midnight; with `end`, the
/// midnight after, so `--until` includes the day) or `YYYY-MM-DDTHH:MM[:SS]` (UTC).
pub fn parse_date(s: &str, end: bool) -> Result<f64, String> {
    use time::macros::format_description;
    let day = format_description!("[year]-[month]-[day]");
    if let Ok(d) = time::Date::parse(s, &day) {
        let t = d.midnight().assume_utc().unix_timestamp() as f64;
        return Ok(if end { t + 86_400.0 } else { t });
    }
    let minute = format_description!("[year]-[month]-[day]T[hour]:[minute]");
    let second = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]");
    time::PrimitiveDateTime::parse(s, &second)
        .or_else(|_| time::PrimitiveDateTime::parse(s, &minute))
        .map(|t| t.assume_utc().unix_timestamp() as f64)
        .map_err(|_| format!("{s}: a date, YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (UTC)"))
}
