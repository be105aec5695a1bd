//! Energy and cost as the report holds them (`energy`, `cost` of each point; see
//! docs/cost-energy.md): the `show` table, the verdict's cheapest configuration,
//! the rows `compare` adds and the HTML charts. Shows only; computes nothing.

use report::{Point, Report, Stat};

use super::markdown::{grid, md_escape};
use super::point::point_meets;
use super::text::{align, num, stat_median, Cell, Line};

/// No statistic (a point without energy or cost).
const NO_STAT: Stat = Stat {
    median: None,
    min: None,
    max: None,
    n: 0,
};

pub fn joules_per_token(p: &Point) -> &Stat {
    p.energy
        .as_ref()
        .map_or(&NO_STAT, |e| &e.joules_per_output_token)
}

pub fn usd_per_million_good(p: &Point) -> &Stat {
    p.cost
        .as_ref()
        .map_or(&NO_STAT, |c| &c.usd_per_million_good_tokens)
}

fn money(v: f64) -> String {
    format!("${}", num(v))
}

fn median_or_dash(s: &Stat, f: fn(f64) -> String) -> String {
    s.median.map_or_else(|| "-".into(), f)
}

/// The columns of the energy and cost table.
const COLUMNS: [&str; 8] = [
    "engine",
    "x",
    "GPU W",
    "J/out tok",
    "J/request",
    "$/hour",
    "$/M out tok",
    "$/M good tok",
];

/// One row of [`COLUMNS`] per point that has energy or cost, and the notes on
/// where each engine's energy came from.
fn rows(report: &Report) -> (Vec<Vec<String>>, Vec<String>) {
    let (mut rows, mut notes) = (Vec::new(), Vec::<String>::new());
    for (engine, result) in &report.load {
        for p in &result.points {
            if p.energy.is_none() && p.cost.is_none() {
                continue;
            }
            let (e, c) = (p.energy.as_ref(), p.cost.as_ref());
            let energy = |f: fn(&report::EnergySummary) -> &Stat| {
                e.map_or_else(|| "-".into(), |e| stat_median(f(e)))
            };
            let cost = |f: fn(&report::CostSummary) -> &Stat| {
                c.map_or_else(|| "-".into(), |c| median_or_dash(f(c), money))
            };
            rows.push(vec![
                engine.clone(),
                num(p.x),
                energy(|e| &e.mean_power_w),
                energy(|e| &e.joules_per_output_token),
                energy(|e| &e.joules_per_request),
                c.map_or_else(|| "-".into(), |c| money(c.usd_per_hour)),
                cost(|c| &c.usd_per_million_output_tokens),
                cost(|c| &c.usd_per_million_good_tokens),
            ]);
            if let Some(e) = e {
                let note = e.note.as_ref().map_or(String::new(), |n| format!("; {n}"));
                let line = format!("{engine}: energy from {} ({}){note}", e.source, e.method);
                if !notes.contains(&line) {
                    notes.push(line);
                }
            }
        }
    }
    (rows, notes)
}

/// The `show` table of energy and cost, with the energy's source and notes under
/// it; `None` when no point has either.
pub fn table(report: &Report, color: bool) -> Option<String> {
    let (rows, notes) = rows(report);
    if rows.is_empty() {
        return None;
    }
    let mut lines = vec![Line::Cells(COLUMNS.map(Cell::plain).to_vec())];
    lines.extend(
        rows.into_iter()
            .map(|r| Line::Cells(r.into_iter().map(Cell::plain).collect())),
    );
    let mut out = String::from("Energy and cost (medians over trials):\n");
    out.push_str(&align(&lines, &[], color));
    for n in notes {
        out.push_str(&format!("  {n}\n"));
    }
    Some(out)
}

/// The same table in Markdown; `None` when no point has energy or cost.
pub fn markdown(report: &Report) -> Option<String> {
    let (rows, notes) = rows(report);
    if rows.is_empty() {
        return None;
    }
    let escaped: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| md_escape(c)).collect())
        .collect();
    let mut out = String::from("**Energy and cost** (medians over trials)\n\n");
    out.push_str(&grid(&COLUMNS, 1, &escaped));
    for n in notes {
        out.push_str(&format!("\n- {}", md_escape(&n)));
    }
    out.push('\n');
    Some(out)
}

/// The load an engine serves the SLO up to, and the point measured there: the
/// search's capacity when the report has one, else its largest measured load that
/// meets the SLO.
fn capacity_point<'a>(report: &'a Report, engine: &str) -> Option<&'a Point> {
    let points = &report.load.get(engine)?.points;
    match report.capacity.get(engine) {
        Some(c) => {
            let x = c.max_load?;
            points.iter().find(|p| p.x == x)
        }
        None => points
            .iter()
            .filter(|p| point_meets(report, p) == Some(true))
            .max_by(|a, b| a.x.total_cmp(&b.x)),
    }
}

/// The verdict's sentence on cost: the priced engine whose good tokens cost least
/// at its capacity, and what the others cost at theirs; `None` when no priced
/// engine meets the SLO.
pub fn cheapest(report: &Report, load_words: impl Fn(f64) -> String) -> Option<String> {
    let mut priced: Vec<(&str, &Point, f64)> = report
        .load
        .keys()
        .filter_map(|e| {
            let p = capacity_point(report, e)?;
            let usd = p.cost.as_ref()?.usd_per_million_good_tokens.median?;
            Some((e.as_str(), p, usd))
        })
        .collect();
    priced.sort_by(|a, b| a.2.total_cmp(&b.2));
    let (best, p, usd) = *priced.first()?;
    let joules = p
        .energy
        .as_ref()
        .and_then(|e| e.joules_per_output_token.median)
        .map_or(String::new(), |j| {
            format!(", {} J per output token", num(j))
        });
    let mut s = format!(
        "Cheapest serving the SLO: {best}, {} per million good tokens at its capacity of {}{joules}",
        money(usd),
        load_words(p.x)
    );
    if let Some(x) = report.capacity.get(best).and_then(|c| c.cheapest_load) {
        let at = report.load[best]
            .points
            .iter()
            .find(|q| q.x == x && x != p.x);
        let usd = at.and_then(|q| q.cost.as_ref()?.usd_per_million_good_tokens.median);
        if let Some(usd) = usd {
            s.push_str(&format!("; cheapest at {}: {}", load_words(x), money(usd)));
        }
    }
    let others: Vec<String> = priced[1..]
        .iter()
        .map(|(e, p, usd)| format!("{e}: {} at {}", money(*usd), num(p.x)))
        .collect();
    if !others.is_empty() {
        s.push_str(&format!(" ({})", others.join("; ")));
    }
    s.push('.');
    Some(s)
}
