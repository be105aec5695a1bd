//! A metric over recorded runs (`goodput history --metric M --engine E`): a table
//! with one row per run and one column per load level (or the capacity), and the
//! same as an HTML page with one chart. It takes plain data (the results store
//! reads it), not reports, so it knows nothing of SQLite.

use maud::{html, PreEscaped, DOCTYPE};

use super::charts::{engine_color, Chart, Scale, Series};
use super::html::{figure, CHECK_SCRIPT, ERROR_SCRIPT, HTML_GENERATOR, STYLE};
use super::text::{num, plain_table};

/// One value with its interval, when the run's report had one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrendCell {
    pub value: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

impl TrendCell {
    fn text(&self) -> String {
        match (self.low, self.high) {
            (Some(l), Some(h)) => format!("{} [{}, {}]", num(self.value), num(l), num(h)),
            _ => num(self.value),
        }
    }
}

/// One recorded run of the trend.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendRow {
    /// The store's run id.
    pub run: i64,
    /// When it was recorded, as printed.
    pub date: String,
    /// Its tags and the profile's commit (`nightly@1a2b3c4`), or `-`.
    pub label: String,
    /// One cell per column (absent: the run did not have that load).
    pub cells: Vec<Option<TrendCell>>,
}

/// A metric of one engine over runs, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// `goodput of vllm-fast-b`.
    pub title: String,
    /// The metric, its unit and its interval in words.
    pub describe: String,
    /// The columns: load levels (`x=4`) or `capacity`.
    pub columns: Vec<String>,
    pub rows: Vec<TrendRow>,
}

/// The trend as a text table.
pub fn trend_text(t: &Trend) -> String {
    let mut columns = vec!["run", "recorded", "tags/commit"];
    columns.extend(t.columns.iter().map(String::as_str));
    let rows = t
        .rows
        .iter()
        .map(|r| {
            let mut cells = vec![format!("#{}", r.run), r.date.clone(), r.label.clone()];
            cells.extend(
                r.cells
                    .iter()
                    .map(|c| c.as_ref().map_or_else(|| "-".into(), TrendCell::text)),
            );
            cells
        })
        .collect();
    format!(
        "{}: {}\n{}",
        t.title,
        t.describe,
        plain_table(&columns, rows)
    )
}

/// The chart: runs across (1 the oldest), one line per column, whiskers for the
/// intervals.
pub fn trend_chart(t: &Trend) -> Chart {
    let series = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let mut s = Series {
                label: label.clone(),
                color: engine_color(i),
                points: Vec::new(),
                whiskers: Vec::new(),
                in_legend: true,
            };
            for (n, row) in t.rows.iter().enumerate() {
                let Some(Some(c)) = row.cells.get(i) else {
                    continue;
                };
                let x = (n + 1) as f64;
                s.points.push((x, c.value));
                if let (Some(l), Some(h)) = (c.low, c.high) {
                    s.whiskers.push((x, l, h));
                }
            }
            s
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    Chart {
        id: "trend".into(),
        title: t.title.clone(),
        note: format!(
            "{}; whiskers: the interval where the report has one.",
            t.describe
        ),
        x_desc: "recorded run (1: the oldest shown)".into(),
        y_desc: t.describe.split(',').next().unwrap_or("").to_string(),
        series,
        x_scale: Scale {
            log: false,
            integer: true,
        },
        strips: Vec::new(),
        thresholds: Vec::new(),
        markers: true,
        y_from_zero: false,
    }
}

/// The trend as a self-contained HTML page: the chart, then the table.
pub fn trend_html(t: &Trend) -> String {
    let chart = trend_chart(t);
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                (PreEscaped(HTML_GENERATOR))
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "goodput history: " (t.title) }
                style { (PreEscaped(STYLE)) }
                script { (PreEscaped(ERROR_SCRIPT)) }
            }
            body {
                main {
                    header { h1 { "goodput history: " (t.title) } p { (t.describe) } }
                    section #charts {
                        div.charts { (figure(&chart)) }
                    }
                    section #runs {
                        h2 { "Runs" }
                        table {
                            thead { tr {
                                th { "run" } th { "recorded" } th { "tags/commit" }
                                @for c in &t.columns { th { (c) } }
                            } }
                            tbody {
                                @for (n, r) in t.rows.iter().enumerate() {
                                    tr {
                                        td { (n + 1) " (#" (r.run) ")" }
                                        td { (r.date) }
                                        td { (r.label) }
                                        @for c in &r.cells {
                                            td { (c.as_ref().map_or_else(|| "-".into(), TrendCell::text)) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    footer {
                        "Written by goodput from its results store. This page is self-contained: it loads nothing."
                        pre #chart-check hidden {}
                        div #js-errors hidden {}
                    }
                }
                script { (PreEscaped(CHECK_SCRIPT)) }
            }
        }
    };
    let mut page = page.into_string();
    page.push('\n');
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trend() -> Trend {
        let cell = |v: f64| {
            Some(TrendCell {
                value: v,
                low: Some(v - 1.0),
                high: Some(v + 1.0),
            })
        };
        Trend {
            title: "goodput of a".into(),
            describe: "good requests/s, median over trials [min, max]".into(),
            columns: vec!["x=1".into(), "x=4".into()],
            rows: vec![
                TrendRow {
                    run: 3,
                    date: "2026-01-01 10:00 UTC".into(),
                    label: "nightly".into(),
                    cells: vec![cell(2.0), None],
                },
                TrendRow {
                    run: 7,
                    date: "2026-01-02 10:00 UTC".into(),
                    label: "-".into(),
                    cells: vec![cell(2.5), cell(8.0)],
                },
            ],
        }
    }

    #[test]
    fn the_table_has_a_row_per_run_with_intervals_and_gaps() {
        let text = trend_text(&trend());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[2].starts_with("#3") && lines[2].contains("2 [1, 3]"),
            "{text}"
        );
        assert!(lines[2].trim_end().ends_with('-'), "{text}");
        assert!(lines[3].contains("8 [7, 9]"), "{text}");
    }

    #[test]
    fn the_chart_has_a_line_per_load_and_whiskers_per_interval() {
        let c = trend_chart(&trend());
        assert_eq!(c.series.len(), 2);
        assert_eq!(c.series[0].points, vec![(1.0, 2.0), (2.0, 2.5)]);
        assert_eq!(c.series[1].points, vec![(2.0, 8.0)]);
        assert_eq!(c.series[0].whiskers.len(), 2);
        let page = trend_html(&trend());
        assert!(page.contains("<svg") && page.contains("nightly"), "{page}");
        assert!(page.contains(HTML_GENERATOR));
    }
}
