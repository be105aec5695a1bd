//! Comparing results: reports against the first one, or, with one report, its
//! engines against its first engine. Points are matched by engine name and `x`.
//!
//! Two reports are paired only when their x means the same thing and their requests
//! were alike: reports of different load modes (concurrency vs rate) or of different
//! workloads are not compared at all, and say why; when their SLOs differ, goodput
//! (which the SLO defines) is left out and the other metrics are compared.
//!
//! A change is "not significant" when the trial ranges `[min, max]` of the two sides
//! overlap or either side has fewer than two trials: with so few trials, ranges that
//! touch are the most that can be said.

use report::{EngineResult, Point, Report, Stat};

use super::table::slo_bounds_text;
use super::text::{align, fixed, stat_full, x_label, Cell, Line, Style};

/// Whether a metric is better when lower (latency) or higher (throughput).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Lower is better.
    Lower,
    /// Higher is better.
    Higher,
}

/// A compared metric: its name, where it is in a point, and which way is better.
pub struct Metric {
    /// Display name.
    pub name: &'static str,
    /// The statistic in a point.
    pub get: fn(&Point) -> &Stat,
    /// Which way is better.
    pub better: Better,
}

/// No statistic (a report without the field).
const NO_STAT: Stat = Stat {
    median: None,
    min: None,
    max: None,
    n: 0,
};

/// The metrics `compare` shows, in order.
pub const METRICS: [Metric; 8] = [
    metric("median TTFT ms", |p| &p.median_ttft_ms, Better::Lower),
    metric("p99 TTFT ms", |p| &p.p99_ttft_ms, Better::Lower),
    metric(TTFAT_METRIC, super::reasoning::ttfat_stat, Better::Lower),
    metric("median TPOT ms", |p| &p.median_tpot_ms, Better::Lower),
    metric("median ITL ms", |p| &p.median_itl_ms, Better::Lower),
    metric("output tok/s", |p| &p.output_throughput, Better::Higher),
    metric("goodput req/s", |p| &p.goodput_rps, Better::Higher),
    metric(
        ATTAINMENT_METRIC,
        |p| p.attainment.as_ref().unwrap_or(&NO_STAT),
        Better::Higher,
    ),
];

/// A row of [`METRICS`].
const fn metric(name: &'static str, get: fn(&Point) -> &Stat, better: Better) -> Metric {
    Metric { name, get, better }
}

/// Time to first answer token: shown when either side streamed reasoning (the
/// other's is then its TTFT), so thinking on and off compare.
const TTFAT_METRIC: &str = "median TTFAT ms";

/// SLO attainment (good / sent per trial): shown when either side has it.
const ATTAINMENT_METRIC: &str = "SLO attainment";

/// The verdict on one metric at one load level.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `(candidate - baseline) / baseline` in percent; `None` when the baseline is 0
    /// or either value is unknown.
    pub percent: Option<f64>,
    /// `Some(true)` better, `Some(false)` worse, `None` the same or unknown.
    pub better: Option<bool>,
    /// The trial ranges are apart and both sides have at least two trials.
    pub significant: bool,
    /// Both medians are known.
    pub known: bool,
}

/// Compares one statistic of a candidate against a baseline.
pub fn change(base: &Stat, cand: &Stat, better: Better) -> Change {
    let (b, c) = match (base.median, cand.median) {
        (Some(b), Some(c)) => (b, c),
        _ => {
            return Change {
                percent: None,
                better: None,
                significant: false,
                known: false,
            }
        }
    };
    let percent = (b != 0.0).then(|| (c - b) / b.abs() * 100.0);
    let dir = if c == b {
        None
    } else {
        Some((c < b) == (better == Better::Lower))
    };
    Change {
        percent,
        better: dir,
        significant: base.n >= 2 && cand.n >= 2 && !base.overlaps(cand),
        known: true,
    }
}

impl Change {
    /// `-2.6%`, `+3.1%`, `from 0` or `-`.
    pub fn percent_text(&self, base: &Stat) -> String {
        match (self.percent, base.median) {
            (Some(p), _) => {
                let digits = if p.abs() >= 1.0 { 1 } else { 2 };
                format!("{}{}%", if p > 0.0 { "+" } else { "" }, fixed(p, digits))
            }
            (None, Some(_)) if self.better.is_some() => "from 0".into(),
            (None, Some(_)) => "0%".into(),
            _ => "-".into(),
        }
    }

    /// `better`, `worse, not significant`, `same`, `unknown`; and its style.
    pub fn verdict(&self) -> (String, Style) {
        let (word, style) = match self.better {
            Some(true) => ("better", Style::Good),
            Some(false) => ("worse", Style::Bad),
            None if self.known => ("same", Style::Plain),
            None => ("unknown", Style::Dim),
        };
        if self.better.is_some() && !self.significant {
            (format!("{word}, not significant"), Style::Dim)
        } else {
            (word.to_string(), style)
        }
    }
}

/// The metric that only means something under one SLO.
const SLO_METRIC: &str = "goodput req/s";

/// One side of a comparison: a label (file or engine) and an engine's results.
struct Side<'a> {
    label: String,
    engine: &'a str,
    result: &'a EngineResult,
}

#[derive(Default)]
struct Tally {
    better: usize,
    worse: usize,
    not_significant: usize,
}

fn same_x(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Says that load level `x` of `side` has no match on `other`.
fn only_note(side: &Side, other: &Side, x: f64, within: bool) -> String {
    if within {
        format!(
            "x={}: only {} has this load level, {} does not",
            x_label(x),
            side.engine,
            other.engine
        )
    } else {
        format!("{} x={}: only in {}", side.engine, x_label(x), side.label)
    }
}

fn compare_engines(
    base: &Side,
    cand: &Side,
    within: bool,
    lines: &mut Vec<Line>,
    notes: &mut Vec<String>,
    tally: &mut Tally,
    same_slo: bool,
) {
    for side in [base, cand] {
        if side.result.points.is_empty() {
            let why = match &side.result.error {
                Some(e) => format!("engine failed: {}: {}", e.kind, e.message),
                None => "no load level ran".to_string(),
            };
            let at = if within {
                side.engine.to_string()
            } else {
                format!("{} in {}", side.engine, side.label)
            };
            notes.push(format!("{at}: no results to compare ({why})"));
            return;
        }
    }
    let mut first_row = true;
    for bp in &base.result.points {
        let Some(cp) = cand.result.points.iter().find(|c| same_x(c.x, bp.x)) else {
            notes.push(only_note(base, cand, bp.x, within));
            continue;
        };
        if first_row && lines.len() > 1 {
            lines.push(Line::Note(Cell::plain("")));
        }
        // The SLO defines goodput and attainment: with different SLOs neither is
        // compared; attainment only where a side recorded it.
        let metrics = METRICS.iter().filter(|m| {
            let slo_bound = m.name == SLO_METRIC || m.name == ATTAINMENT_METRIC;
            let recorded = match m.name {
                ATTAINMENT_METRIC => bp.attainment.is_some() || cp.attainment.is_some(),
                TTFAT_METRIC => bp.reasoning.is_some() || cp.reasoning.is_some(),
                _ => true,
            };
            (same_slo || !slo_bound) && recorded
        });
        // Energy and cost rows where either side has the figure (the good tokens' cost
        // only under one SLO).
        let metrics = metrics.chain(super::cost::METRICS.iter().filter(|m| {
            ((m.get)(bp).n > 0 || (m.get)(cp).n > 0)
                && (same_slo || m.name != super::cost::GOOD_METRIC)
        }));
        for (i, m) in metrics.enumerate() {
            let (bs, cs) = ((m.get)(bp), (m.get)(cp));
            let ch = change(bs, cs, m.better);
            let (verdict, style) = ch.verdict();
            match (ch.better, ch.significant) {
                (Some(true), true) => tally.better += 1,
                (Some(false), true) => tally.worse += 1,
                (Some(_), false) => tally.not_significant += 1,
                _ => {}
            }
            let engine = if first_row {
                cand.engine.to_string()
            } else {
                String::new()
            };
            first_row = false;
            let x = if i == 0 { x_label(bp.x) } else { String::new() };
            lines.push(Line::Cells(vec![
                Cell::plain(engine),
                Cell::plain(x),
                Cell::plain(m.name),
                Cell::plain(stat_full(bs)),
                Cell::plain(stat_full(cs)),
                Cell::styled(ch.percent_text(bs), style),
                Cell::styled(verdict, style),
            ]));
        }
    }
    for cp in &cand.result.points {
        if !base.result.points.iter().any(|b| same_x(b.x, cp.x)) {
            notes.push(only_note(cand, base, cp.x, within));
        }
    }
}

fn header() -> Line {
    Line::Cells(
        [
            "engine",
            "x",
            "metric",
            "baseline",
            "candidate",
            "change",
            "verdict",
        ]
        .iter()
        .map(|h| Cell::styled(*h, Style::Bold))
        .collect(),
    )
}

fn finish(
    title: String,
    lines: Vec<Line>,
    notes: Vec<String>,
    tally: Tally,
    color: bool,
) -> String {
    let mut out = Style::Bold.paint(&title, color);
    out.push('\n');
    if lines.len() > 1 {
        out.push_str(&align(&lines, &[2, 6], color));
        let n = tally.not_significant;
        out.push_str(&format!(
            "Significant: {} better, {} worse; {n} {} not significant \
             (trial ranges overlap or fewer than 2 trials).\n",
            tally.better,
            tally.worse,
            if n == 1 { "change" } else { "changes" }
        ));
    } else {
        out.push_str("No load level in common.\n");
    }
    for n in notes {
        out.push_str(&format!("  {n}\n"));
    }
    out
}

/// Compares reports. With two or more, each report after the first is compared with
/// the first (the baseline), engine by engine and load level by load level. With one,
/// each engine is compared with the report's first engine. Values are medians over
/// trials with their min–max range; engines and load levels found on one side only
/// are listed.
pub fn compare(reports: &[(String, Report)], color: bool) -> String {
    match reports {
        [] => "Nothing to compare: give at least one report.\n".into(),
        [(label, r)] => compare_within(label, r, color),
        [(base_label, base), rest @ ..] => rest
            .iter()
            .map(|(label, cand)| compare_reports(base_label, base, label, cand, color))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn compare_within(label: &str, r: &Report, color: bool) -> String {
    let mut engines = r.load.iter();
    let Some((base_name, base_result)) = engines.next() else {
        return format!("{label}: no engines to compare.\n");
    };
    let base = Side {
        label: base_name.clone(),
        engine: base_name,
        result: base_result,
    };
    let mut lines = vec![header()];
    let (mut notes, mut tally) = (Vec::new(), Tally::default());
    let mut any = false;
    for (name, result) in engines {
        any = true;
        let cand = Side {
            label: name.clone(),
            engine: name,
            result,
        };
        compare_engines(&base, &cand, true, &mut lines, &mut notes, &mut tally, true);
    }
    if !any {
        return format!("{label}: only one engine ({base_name}); nothing to compare.\n");
    }
    let title = format!(
        "{label} (profile {}): each engine against {base_name} (baseline)",
        r.profile
    );
    finish(title, lines, notes, tally, color)
}

/// What x means in a report: `concurrency` or `rate` (a report in the reference format
/// records no mode; its x is closed-loop concurrency).
fn load_mode(r: &Report) -> &str {
    r.run
        .as_ref()
        .map_or("concurrency", |run| run.load_mode.as_str())
}

/// The workload as the report describes it, when it does.
fn workload(r: &Report) -> Option<&serde_json::Value> {
    r.run
        .as_ref()
        .map(|run| &run.workload)
        .filter(|w| !w.is_null())
}

/// Why two reports cannot be compared point by point, when they cannot.
fn not_comparable(base_label: &str, base: &Report, label: &str, cand: &Report) -> Option<String> {
    let (bm, cm) = (load_mode(base), load_mode(cand));
    if bm != cm {
        return Some(format!(
            "Not compared: {base_label} ran in {bm} mode and {label} in {cm} mode; an x of \
             one (requests in flight vs requests per second) is not an x of the other."
        ));
    }
    match (workload(base), workload(cand)) {
        (Some(bw), Some(cw)) if bw != cw => Some(format!(
            "Not compared: the workloads differ ({base_label}: {bw}; {label}: {cw}); \
             latency and throughput depend on the prompts and output lengths."
        )),
        _ => None,
    }
}

fn compare_reports(
    base_label: &str,
    base: &Report,
    label: &str,
    cand: &Report,
    color: bool,
) -> String {
    let mut title = format!("{label} (candidate) against {base_label} (baseline)");
    if base.profile != cand.profile {
        title.push_str(&format!(
            "\nnote: profiles differ ({} vs {})",
            base.profile, cand.profile
        ));
    }
    if let Some(why) = not_comparable(base_label, base, label, cand) {
        return format!("{}\n{why}\n", Style::Bold.paint(&title, color));
    }
    let mut lines = vec![header()];
    let (mut notes, mut tally) = (Vec::new(), Tally::default());
    notes.extend(predicted_note(base_label, base, label, cand));
    let same_slo = base.slo == cand.slo;
    if !same_slo {
        notes.push(format!(
            "{SLO_METRIC} not compared: the SLOs differ ({base_label}: {}; {label}: {}), \
             and goodput counts the requests that meet the SLO",
            slo_bounds_text(&base.slo),
            slo_bounds_text(&cand.slo)
        ));
    }
    let unrecorded: Vec<&str> = [(base_label, base), (label, cand)]
        .into_iter()
        .filter(|(_, r)| workload(r).is_none())
        .map(|(l, _)| l)
        .collect();
    if !unrecorded.is_empty() {
        notes.push(format!(
            "workload not recorded in {}: that both ran the same prompts and output \
             lengths is not checked",
            unrecorded.join(", ")
        ));
    }
    for (name, bres) in &base.load {
        let Some(cres) = cand.load.get(name) else {
            notes.push(format!("engine {name}: only in {base_label}"));
            continue;
        };
        let b = Side {
            label: base_label.to_string(),
            engine: name,
            result: bres,
        };
        let c = Side {
            label: label.to_string(),
            engine: name,
            result: cres,
        };
        compare_engines(&b, &c, false, &mut lines, &mut notes, &mut tally, same_slo);
    }
    for name in cand.load.keys() {
        if !base.load.contains_key(name) {
            notes.push(format!("engine {name}: only in {label}"));
        }
    }
    finish(title, lines, notes, tally, color)
}

/// With a predicted side, the change column is the prediction's error.
fn predicted_note(base_label: &str, base: &Report, label: &str, cand: &Report) -> Option<String> {
    let predicted = |r: &Report| r.run.as_ref().is_some_and(|run| run.predicted.is_some());
    match (predicted(base), predicted(cand)) {
        (false, true) => Some(format!(
            "{label} is PREDICTED: its change is the prediction's error against the measured {base_label} \
             (better: the model is optimistic there, worse: pessimistic)"
        )),
        (true, false) => Some(format!(
            "{base_label} is PREDICTED: the change is how far the measured {label} is from the prediction"
        )),
        (true, true) => Some("both reports are PREDICTED: nothing here was measured".into()),
        (false, false) => None,
    }
}
