//! The command-line spellings of profile fields (`--slo`, `--points`), and where a
//! key is written in a profile's text (for errors that name its line).

use super::SloSpec;

/// Parses `ttft:1000,tpot:100,e2el:5000,ttfat:2000` (vLLM's `--goodput` spelling,
/// also with `=`; `ttfat`, the time to first answer token, is goodput's).
pub fn parse_slo(text: &str) -> Result<SloSpec, String> {
    let mut slo = SloSpec::default();
    let mut any = false;
    for part in text.split([',', ' ']).filter(|p| !p.is_empty()) {
        any = true;
        let (key, value) = part
            .split_once([':', '='])
            .ok_or_else(|| format!("`{part}`: expected NAME:MILLISECONDS, e.g. ttft:1000"))?;
        let ms: f64 = value
            .trim()
            .parse()
            .map_err(|_| format!("`{part}`: `{value}` is not a number of milliseconds"))?;
        if !(ms.is_finite() && ms > 0.0) {
            return Err(format!(
                "`{part}`: the bound must be a positive number of ms"
            ));
        }
        let key = key.trim().to_ascii_lowercase();
        let slot = match key.as_str() {
            "ttft" => &mut slo.ttft_ms,
            "tpot" => &mut slo.tpot_ms,
            "e2el" => &mut slo.e2el_ms,
            "ttfat" => &mut slo.ttfat_ms,
            other => {
                return Err(format!(
                    "`{other}` is not an SLO metric: use ttft, tpot, e2el or ttfat"
                ))
            }
        };
        if slot.is_some() {
            return Err(format!("`{key}` is given twice"));
        }
        *slot = Some(ms);
    }
    if !any {
        return Err("no bound given: write e.g. ttft:1000,tpot:100".into());
    }
    Ok(slo)
}

/// The bounds of `slo` in [`parse_slo`]'s spelling (`ttft:1000,tpot:100`); its
/// `attainment` and `percentile` have no such spelling and are left out.
pub fn format_slo(slo: &SloSpec) -> String {
    [
        ("ttft", slo.ttft_ms),
        ("tpot", slo.tpot_ms),
        ("e2el", slo.e2el_ms),
        ("ttfat", slo.ttfat_ms),
    ]
    .iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k}:{v}")))
    .collect::<Vec<_>>()
    .join(",")
}

/// Parses `1,4,16` into load levels (finite numbers; the plan checks their range).
pub fn parse_points(text: &str) -> Result<Vec<f64>, String> {
    if text.trim().is_empty() {
        return Err("no load level given: write e.g. 1,4,16".into());
    }
    text.split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("`{p}` is not a number"))
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
