//! The command-line spellings of profile fields (`--slo`, `--points`), and where a
//! key is written in a profile's text (for errors that name its line).

use report::{Slo, SloMetric};

/// What is wrong with an `--slo` or a list of load levels.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpellingError {
    /// A part without `:` or `=`.
    #[error("`{0}`: expected NAME:MILLISECONDS, e.g. ttft:1000")]
    NoBound(String),
    /// A bound that is not a number.
    #[error("`{part}`: `{value}` is not a number of milliseconds")]
    NotMilliseconds {
        /// The part, as written.
        part: String,
        /// Its value.
        value: String,
    },
    /// A bound that is zero, negative or not finite.
    #[error("`{0}`: the bound must be a positive number of ms")]
    NotPositive(String),
    /// A metric goodput does not bound.
    #[error("`{0}` is not an SLO metric: use {keys}", keys = SloMetric::listed(SloMetric::key))]
    UnknownMetric(String),
    /// A metric bounded twice.
    #[error("`{0}` is given twice")]
    Twice(String),
    /// Nothing given.
    #[error("no {0} given: write e.g. {1}")]
    Empty(&'static str, &'static str),
    /// A load level that is not a finite number.
    #[error("`{0}` is not a number")]
    NotANumber(String),
}

/// Parses `ttft:1000,tpot:100,e2el:5000` (vLLM's `--goodput` spelling, also with
/// `=`; every bounded metric's key, [`SloMetric`], goodput's own included).
pub fn parse_slo(text: &str) -> Result<Slo, SpellingError> {
    let mut slo = Slo::default();
    let mut any = false;
    for part in text.split([',', ' ']).filter(|p| !p.is_empty()) {
        any = true;
        let (key, value) = part
            .split_once([':', '='])
            .ok_or_else(|| SpellingError::NoBound(part.into()))?;
        let ms: f64 = value
            .trim()
            .parse()
            .map_err(|_| SpellingError::NotMilliseconds {
                part: part.into(),
                value: value.into(),
            })?;
        if !(ms.is_finite() && ms > 0.0) {
            return Err(SpellingError::NotPositive(part.into()));
        }
        let key = key.trim().to_ascii_lowercase();
        // A share of valid tool calls (`min_valid_tool_calls:0.99`); the plan
        // checks it is at most 1.
        if let Some(share) = slo.tool_calls.by_key(&key) {
            if share.replace(ms).is_some() {
                return Err(SpellingError::Twice(key));
            }
            continue;
        }
        let Some(metric) = SloMetric::from_key(&key) else {
            return Err(SpellingError::UnknownMetric(key));
        };
        if slo.bound(metric).is_some() {
            return Err(SpellingError::Twice(key));
        }
        slo.bounds.set(metric, Some(ms));
    }
    if !any {
        return Err(SpellingError::Empty("bound", "ttft:1000,tpot:100"));
    }
    Ok(slo)
}

/// The bounds of `slo` in [`parse_slo`]'s spelling (`ttft:1000,tpot:100`); its
/// `attainment` and `percentile` have no such spelling and are left out.
pub fn format_slo(slo: &Slo) -> String {
    let shares = slo.tool_calls.iter().map(|(k, _, v)| format!("{k}:{v}"));
    slo.bounds
        .iter()
        .map(|(m, v)| format!("{}:{v}", m.key()))
        .chain(shares)
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses `1,4,16` into load levels (finite numbers; the plan checks their range).
pub fn parse_points(text: &str) -> Result<Vec<f64>, SpellingError> {
    if text.trim().is_empty() {
        return Err(SpellingError::Empty("load level", "1,4,16"));
    }
    text.split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| SpellingError::NotANumber(p.into()))
        })
        .collect()
}

/// The line (1-based) where a dotted key (`telemetry.cooldown.max_wait_s`,
/// `engines.a.port`) is written in TOML text, if it is.
pub fn line_of(source: &str, dotted: &str) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(source).ok()?;
    let mut table: &dyn toml_edit::TableLike = doc.as_table();
    let parts: Vec<&str> = dotted.split('.').collect();
    let (last, path) = parts.split_last()?;
    let mut span = None;
    for part in path {
        let item = table.get(part)?;
        span = item.span().or(span);
        table = item.as_table_like()?;
    }
    let span = table
        .key(last)
        .and_then(|k| k.span())
        .or_else(|| table.get(last).and_then(|i| i.span()))
        .or(span)?;
    Some(source.get(..span.start)?.matches('\n').count() + 1)
}
