//! The self-contained HTML page: inline `<style>`, inline SVG charts, one small
//! inline script that checks the charts; nothing is loaded from the network.
//!
//! The markup is `maud` templates: every string from the report is escaped by
//! construction, and only the page's own pieces go in unescaped (`PreEscaped`):
//! the style sheet and scripts (`html/style.css`, `html/errors.js`,
//! `html/check.js`, edited as the files they are) and the SVG charts plotters drew.

use maud::{html, Markup, PreEscaped, DOCTYPE};
use report::Report;
use serde_json::Value;

use super::charts::{self, hex, Chart};
use super::rows::rows;
use super::table::{display_cells, header_lines, COLUMNS};
use super::text::Style;
use super::warnings::{grouped, warnings, Group};

/// Marker in every HTML page goodput writes (`<meta name="generator" ...>`); an
/// `.html` without it is someone else's file (`run` overwrites only pages with it).
pub const HTML_GENERATOR: &str = "<meta name=\"generator\" content=\"goodput\">";

pub(crate) const STYLE: &str = include_str!("html/style.css");

/// Records script errors into the page, so a headless browser's DOM dump shows them.
pub(crate) const ERROR_SCRIPT: &str = include_str!("html/errors.js");

/// Counts the data lines of every chart and the text that sticks out of its SVG,
/// and writes the result into `#chart-check`.
pub(crate) const CHECK_SCRIPT: &str = include_str!("html/check.js");

/// The whole page for a report.
pub fn html(report: &Report) -> String {
    let title = format!("goodput report: {}", report.profile);
    let charts = charts::all(report);
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                (PreEscaped(HTML_GENERATOR))
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
                script { (PreEscaped(ERROR_SCRIPT)) }
            }
            body {
                main {
                    header {
                        h1 { (title) }
                        @if let Some(p) = report.run.as_ref().and_then(|r| r.predicted.as_ref()) {
                            p.predicted {
                                strong { "PREDICTED, not measured." }
                                " Every figure on this page comes from the simulator's engine model run in virtual time ("
                                (p.engine_config)
                                "), not from requests to an engine."
                            }
                        }
                        dl.meta {
                            @for (k, v) in header_lines(report).iter().skip(1) {
                                dt { (k) } dd { (v) }
                            }
                            dt { "engines" }
                            dd { (report.load.keys().cloned().collect::<Vec<_>>().join(", ")) }
                        }
                    }
                    (super::verdict::verdict_html(report))
                    (warnings_section(report))
                    section #charts {
                        h2 { "Charts" }
                        div.charts {
                            @if charts.is_empty() {
                                p { "No results to chart." }
                            }
                            @for chart in &charts {
                                (figure(chart))
                            }
                        }
                    }
                    (results_table(report))
                    (super::turns::turns_html(report))
                    (super::reasoning::reasoning_html(report))
                    (super::tool_calls::tool_calls_html(report))
                    (super::embeddings::embeddings_html(report))
                    (super::predicted::intervals_html(report))
                    (profile_section(report))
                    (environment_section(report))
                    footer {
                        "Written by goodput. This page is self-contained: it loads nothing."
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

pub(crate) fn figure(chart: &Chart) -> Markup {
    let svg = charts::svg(chart);
    html! {
        figure.chart id=(chart.id) data-series=(chart.series.len()) {
            figcaption {
                strong { (chart.title) }
                p { (chart.note) }
            }
            @match svg {
                Ok(svg) => (PreEscaped(svg)),
                Err(e) => p { "This chart could not be drawn: " (e) },
            }
            ul.legend {
                @for s in chart.series.iter().filter(|s| s.in_legend) {
                    li {
                        span.swatch style={ "background:" (hex(s.color)) } {}
                        (s.label)
                    }
                }
            }
        }
    }
}

fn warnings_section(report: &Report) -> Markup {
    let ws = warnings(report);
    html! {
        section #warnings {
            @if ws.is_empty() {
                h2 { "Warnings" }
                p.ok { "No warnings." }
            } @else {
                h2 { "Warnings (" (ws.len()) ")" }
                div.warnings {
                    @for Group { kind, lines, advice } in grouped(&ws) {
                        h3 { (kind.title()) " " span.why { "— " (kind.why()) } }
                        ul {
                            @for (at, m) in lines {
                                li { strong { (at) } ": " (m) }
                            }
                        }
                        @for a in advice {
                            p.advice { strong { "What to do:" } " " (a) }
                        }
                    }
                }
            }
        }
    }
}

fn class_of(style: Style) -> Option<&'static str> {
    match style {
        Style::Good => Some("good"),
        Style::Bad => Some("bad"),
        Style::Warn => Some("warn"),
        _ => None,
    }
}

fn results_table(report: &Report) -> Markup {
    let mut last = "";
    let body: Vec<Markup> = rows(report)
        .iter()
        .map(|row| {
            let first = row.engine != last;
            last = row.engine;
            let Some(cells) = display_cells(report, row) else {
                return html! {
                    tr.first[first] {
                        td { (row.engine) }
                        td.failed colspan=(COLUMNS.len() - 1) {
                            "engine failed: " (row.engine_error().unwrap_or_default())
                        }
                    }
                };
            };
            html! {
                tr.first[first] {
                    @for (i, c) in cells.iter().enumerate() {
                        td class=[class_of(c.style)] {
                            @if i > 0 || first { (c.main) }
                            @if let Some(r) = &c.range { span.range { (r) } }
                        }
                    }
                }
            }
        })
        .collect();
    html! {
        section #results {
            h2 { "Results" }
            p {
                "Latencies in ms. Each value is the median over trials, with the min–max \
                 over trials below it. " (super::table::JUDGEMENT_LEGEND)
            }
            div.table-wrap {
                table.results {
                    thead { tr { @for c in COLUMNS { th { (c) } } } }
                    tbody { @for tr in body { (tr) } }
                }
            }
        }
    }
}

/// Renders JSON as nested key/value tables (objects), lists (arrays) and text.
pub fn json_html(v: &Value) -> Markup {
    match v {
        Value::Null => html! { em { "null" } },
        Value::String(s) => html! { (s) },
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let items: Vec<String> = a
                .iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            html! { code { (items.join(" ")) } }
        }
        Value::Array(a) => html! {
            @for (i, x) in a.iter().enumerate() {
                @if i > 0 { "\n" }
                (json_html(x))
            }
        },
        Value::Object(m) => html! {
            table.kv {
                @for (k, v) in m { tr { th { (k) } td { (json_html(v)) } } }
            }
        },
        other => html! { (other.to_string()) },
    }
}

fn profile_section(report: &Report) -> Markup {
    let slo = serde_json::to_value(&report.slo).ok();
    let run = match report.run.as_ref().map(serde_json::to_value) {
        Some(Ok(Value::Object(run))) => run_html(&run),
        _ => html! { "not recorded (reference format)" },
    };
    html! {
        section #profile {
            h2 { "Profile" }
            table.kv {
                tr { th { "name" } td { (report.profile) } }
                @if let Some(slo) = &slo { tr { th { "slo" } td { (json_html(slo)) } } }
                tr { th { "run" } td { (run) } }
            }
        }
    }
}

/// The run info as a key/value table, with its Unix times as UTC dates and its
/// notices one per list item (their text).
fn run_html(run: &serde_json::Map<String, Value>) -> Markup {
    html! {
        table.kv {
            @for (k, v) in run {
                @match (k.as_str(), v) {
                    ("notices", Value::Array(items)) => tr {
                        th { (k) }
                        td { ul.notices { @for n in items { li { (json_html(n.get("text").unwrap_or(n))) } } } }
                    },
                    (_, Value::Number(n)) if k.ends_with("_unix_s") => tr {
                        th { (k.trim_end_matches("_unix_s")) }
                        td { (date_html(n.as_f64())) }
                    },
                    _ => tr { th { (k) } td { (json_html(v)) } },
                }
            }
        }
    }
}

/// A Unix time as a `<time>` element showing the UTC date, the raw value in its
/// title; a value that is no time (negative, not finite) as the number itself.
fn date_html(unix_s: Option<f64>) -> Markup {
    match unix_s {
        Some(t) if (0.0..1e13).contains(&t) => html! {
            time title={ "Unix time " (t) } { (crate::dates::utc_minute(t as u64)) }
        },
        Some(t) => html! { (t) },
        None => html! {},
    }
}

fn environment_section(report: &Report) -> Markup {
    let env = match report.environment.as_ref().map(serde_json::to_value) {
        Some(Ok(env)) => Some(env),
        _ => None,
    };
    html! {
        section #environment {
            h2 { "Environment" }
            @if let Some(env) = &env {
                (json_html(env))
                details {
                    summary { "as JSON" }
                    pre { (serde_json::to_string_pretty(env).unwrap_or_default()) }
                }
            } @else {
                p {
                    "Not recorded: the report's " code { "environment" } " is null, so the \
                     GPU, driver, engine versions, model and command lines are unknown."
                }
            }
        }
    }
}
