//! **Import**: other tools' result files, read into goodput's report model so that
//! `show`, `compare` and `report` work on them: `vllm bench serve --save-result`
//! ([`vllm`]), GuideLLM's `benchmarks.json` ([`guidellm`]) and AIPerf's
//! `profile_export_aiperf.json` ([`aiperf`]). One reader per format, each a
//! [`Format`] in [`FORMATS`]: it says whether a file is its own and converts it;
//! a file none claims is read as goodput's own report. (Writing other tools'
//! formats is [`crate::export`].)
//!
//! A converted report carries the peer's own figures exactly (its medians and p99s,
//! not goodput's recomputation), the quantile grids from its per-request data where
//! the file has them, and `run.notices` saying which tool wrote it and what it lacks.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use report::{EngineResult, Notice, NoticeKind, Point, Report, RunInfo, Slo, Stat};
use serde_json::{Map, Value};

pub mod aiperf;
pub mod guidellm;
pub mod vllm;

/// [`read`], printing a converted file's notices to stderr (for `compare`, whose
/// table has no room for them; `show` and the HTML page print them in their header).
pub fn read_noting(path: &Path) -> anyhow::Result<Report> {
    let r = read(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let notices: &[Notice] = r.run.as_ref().map_or(&[], |run| &run.notices);
    if notices
        .first()
        .is_some_and(|n| n.kind == NoticeKind::Converted)
    {
        for n in notices {
            eprintln!("note: {name}: {n}");
        }
    }
    Ok(r)
}

/// Reads a goodput report, or a peer's result file converted into one (its
/// `run.notices` say which tool wrote it and what it lacks). Any failure is a bad
/// input file ([`crate::UsageError`], exit 2): missing, not a regular file (a
/// device, a FIFO), too large, not a report, or a field out of range.
pub fn read(path: &Path) -> anyhow::Result<Report> {
    read_any(path).map_err(|e| crate::UsageError(format!("{e:#}")).into())
}

fn read_any(path: &Path) -> anyhow::Result<Report> {
    let text = read_bounded(path)?;
    let input = Input::new(&text, path.parent());
    match FORMATS.iter().find(|f| (f.claims)(&input)) {
        Some(f) => {
            (f.convert)(&input).with_context(|| format!("{}: {} result", path.display(), f.tool))
        }
        // Not another tool's: the report reader's error names the line and column.
        None => Ok(report::read_report(path)?),
    }
}

/// Another tool's result file format: whether a file is its own, and how it
/// becomes a report. A new format is one more entry in [`FORMATS`].
pub struct Format {
    /// The tool, with its article, as errors name it: `a vLLM`.
    pub tool: &'static str,
    /// Whether the file is in this format (a cheap look, no conversion).
    pub claims: fn(&Input) -> bool,
    /// The file converted into a report; errors name the field that is wrong.
    pub convert: fn(&Input) -> anyhow::Result<Report>,
}

/// Every format goodput reads besides its own, tried in order.
pub const FORMATS: &[Format] = &[
    Format {
        tool: "a vLLM",
        claims: |i| i.json().is_some_and(vllm::is_vllm),
        convert: |i| vllm::convert(i.json_or_err()?),
    },
    Format {
        tool: "a GuideLLM",
        claims: |i| i.json().is_some_and(guidellm::is_guidellm),
        convert: |i| guidellm::convert(i.json_or_err()?),
    },
    Format {
        tool: "an AIPerf",
        claims: |i| i.json().is_some_and(aiperf::is_aiperf),
        convert: |i| aiperf::convert(i.json_or_err()?, i.dir),
    },
];

/// A file being read: its text, its folder (for files beside it), and its JSON
/// value, parsed once on first use (`None`: not one JSON value, e.g. JSONL).
pub struct Input<'a> {
    /// The whole file.
    pub text: &'a str,
    /// The folder it is in.
    pub dir: Option<&'a Path>,
    json: std::sync::OnceLock<Option<Value>>,
}

impl<'a> Input<'a> {
    /// A file's text and folder.
    pub fn new(text: &'a str, dir: Option<&'a Path>) -> Input<'a> {
        Input {
            text,
            dir,
            json: std::sync::OnceLock::new(),
        }
    }

    /// The file as one JSON value, when it is one.
    pub fn json(&self) -> Option<&Value> {
        self.json
            .get_or_init(|| serde_json::from_str(self.text).ok())
            .as_ref()
    }

    fn json_or_err(&self) -> anyhow::Result<&Value> {
        self.json()
            .ok_or_else(|| anyhow::anyhow!("not one JSON value"))
    }
}

/// The file's text, refused beyond the report size limit.
fn read_bounded(path: &Path) -> anyhow::Result<String> {
    // A device or a FIFO is refused before it is read (or waited on).
    let file = crate::files::open_regular(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut text = String::new();
    file.take(report::io::MAX_REPORT_BYTES + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if text.len() as u64 > report::io::MAX_REPORT_BYTES {
        anyhow::bail!(
            "{}: larger than the {}-byte limit for a report",
            path.display(),
            report::io::MAX_REPORT_BYTES
        );
    }
    Ok(text)
}

/// Most requests a peer's file may count at one load level (goodput counts them in
/// `u32`): a larger count is a corrupt file, not a run.
pub(crate) const MAX_PEER_COUNT: f64 = u32::MAX as f64;

/// A number of a peer's file out of range: the error names the field (a JSON
/// pointer) and the range. A bad input file, so the binary exits 2.
fn out_of_range(field: &str, v: &Value, range: &str) -> anyhow::Error {
    crate::UsageError(format!("field `{field}` is {v}: {range}")).into()
}

/// Every number at `at` (a JSON pointer into `v`), and under it, is finite and at
/// least 0: the figures, rates, durations and token counts a peer's file holds.
pub(crate) fn check_figures(v: &Value, at: &str) -> anyhow::Result<()> {
    let Some(here) = v.pointer(at) else {
        return Ok(());
    };
    match here {
        Value::Number(n) if !n.as_f64().is_some_and(|x| x.is_finite() && x >= 0.0) => Err(
            out_of_range(at, here, "expected a finite number of at least 0"),
        ),
        Value::Array(items) => {
            (0..items.len()).try_for_each(|i| check_figures(v, &format!("{at}/{i}")))
        }
        Value::Object(map) => map.keys().try_for_each(|k| {
            let k = k.replace('~', "~0").replace('/', "~1");
            check_figures(v, &format!("{at}/{k}"))
        }),
        _ => Ok(()),
    }
}

/// A count of requests at `at`: a whole number in `0..=MAX_PEER_COUNT`; `None` when
/// absent (or not a number).
pub(crate) fn count(v: &Value, at: &str) -> anyhow::Result<Option<f64>> {
    let Some(here) = v.pointer(at).filter(|n| n.is_number()) else {
        return Ok(None);
    };
    match here.as_f64() {
        Some(c) if (0.0..=MAX_PEER_COUNT).contains(&c) && c.fract() == 0.0 => Ok(Some(c)),
        _ => Err(out_of_range(
            at,
            here,
            &format!("expected a whole count of requests, 0..={MAX_PEER_COUNT}"),
        )),
    }
}

/// The converted load levels are usable: each finite and at least 0, none twice.
pub(crate) fn check_levels(points: &[Point]) -> anyhow::Result<()> {
    let mut xs: Vec<f64> = points.iter().map(|p| p.x).collect();
    if let Some(x) = xs.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
        anyhow::bail!(crate::UsageError(format!(
            "a load level of {x}: expected a finite number of at least 0"
        )));
    }
    xs.sort_by(f64::total_cmp);
    if let Some(w) = xs.windows(2).find(|w| w[0] == w[1]) {
        anyhow::bail!(crate::UsageError(format!(
            "two load levels at x = {}: each level of a run is measured once",
            w[0]
        )));
    }
    Ok(())
}

/// One figure as a `{median,min,max,n}` of one trial (`n = 0` when absent).
pub(crate) fn one(v: Option<f64>) -> Stat {
    Stat::from_trials([v.filter(|x| x.is_finite())])
}

/// A number field of a JSON object.
pub(crate) fn num(obj: &Value, key: &str) -> Option<f64> {
    obj.get(key).and_then(Value::as_f64)
}

/// The pooled quantile grid of per-request values ("lower" rule, as goodput's own).
pub(crate) fn grid(mut values: Vec<f64>, quantiles: &[f64]) -> Vec<f64> {
    report::stats::sort_values(&mut values);
    if values.is_empty() {
        return Vec::new();
    }
    quantiles
        .iter()
        .filter_map(|&q| report::stats::quantile_lower(&values, q))
        .collect()
}

/// What a peer's file says about one load level, and what it lacks.
pub(crate) struct PeerRun {
    /// The tool, e.g. `vllm bench serve 0.32.0`.
    pub tool: String,
    /// The engine's name in the report (the model).
    pub engine: String,
    /// What its load levels count.
    pub mode: report::LoadMode,
    /// Its load levels.
    pub points: Vec<Point>,
    /// Requests per load level (the most any level sent).
    pub requests: u32,
    /// What the file does not hold, or holds differently.
    pub notices: Vec<String>,
    /// The peer's own settings, kept as `run.peer` (not `run.workload`: the tools
    /// describe their prompts differently, and `compare` refuses reports whose
    /// workload descriptions differ).
    pub workload: Value,
}

/// The report of a converted peer file.
pub(crate) fn peer_report(run: PeerRun) -> Report {
    let mut notices = vec![Notice::new(
        NoticeKind::Converted,
        format!(
            "converted from {}'s result file; figures are the tool's own",
            run.tool
        ),
    )];
    notices.extend(
        run.notices
            .into_iter()
            .map(|n| Notice::new(NoticeKind::Peer, n)),
    );
    let mut extra = Map::new();
    extra.insert("peer".into(), run.workload);
    let mut load = indexmap::IndexMap::new();
    load.insert(
        run.engine,
        EngineResult {
            kv_pool_tokens: None,
            points: run.points,
            kv_pool_source: None,
            error: None,
            restarts: Vec::new(),
            extra: Map::new(),
        },
    );
    Report {
        profile: run.tool.clone(),
        slo: Slo::default(),
        environment: None,
        quantiles: report::default_quantiles(),
        load,
        run: Some(RunInfo {
            schema: report::SCHEMA.into(),
            load_mode: run.mode,
            planned_trials: 1,
            requests_per_trial: run.requests,
            notices,
            extra,
            ..Default::default()
        }),
        capacity: indexmap::IndexMap::new(),
        extra: Map::new(),
    }
}

#[cfg(test)]
mod tests;
