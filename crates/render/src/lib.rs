//! Rendering reports for people: `show`, `compare`, the HTML page, exports and
//! warnings. Reads [`report::Report`] values (and a [`report::compare::Comparison`])
//! only, so it works on any report file, the reference included; knows nothing
//! about how they were measured, and depends on no goodput crate but the report.
//!
//! # Layout
//! - [`rows`]: one row per engine x load level, the model every tabular format shares.
//! - [`section`]: the table sections after the results table, each written once as a
//!   [`section::TableSection`] that every format fills in.
//! - [`table`]: the writers of that model: text table, Markdown, CSV, JSON.
//! - [`markdown`]: Markdown tables (the report's and the benchmarks').
//! - [`compare`]: a comparison (computed by goodput's `compare`) shown.
//! - [`rank`]: the verdict's ranking of engines whose capacities tie.
//! - [`ran`]: what ran and was seen (workload, prefix hits, acceptance).
//! - [`predicted`]: a predicted report's intervals.
//! - [`reasoning`]: the reasoning table.
//! - [`tool_calls`]: the tool-call table.
//! - [`adapters`]: the LoRA adapter table, and the sentences naming an adapter
//!   whose latency differs.
//! - [`images`]: the images requests carried.
//! - [`embeddings`]: the embeddings table (inputs/s, E2EL).
//! - [`dates`]: the one date formatter.
//! - [`warnings`]: the rules that flag results not to trust, and their text.
//! - [`mod@html`] and [`charts`]: the self-contained HTML page and its inline SVG charts.
//! - [`verdict`]: the answer in plain sentences (top of `show` and the page).
//! - [`point`]: what a point says (meets, attainment) and the SLO in words,
//!   read once for every writer.
//! - [`turns`]: the per-turn table of conversation workloads.
//! - [`cost`]: energy and cost per token (table, verdict sentence, compare rows, charts).
//! - [`trend`]: a metric over recorded runs (`goodput history --metric`), as text
//!   and as an HTML chart, from plain data the results store hands it.
//! - [`text`]: number formatting, colour and column alignment for terminals.
//! - [`one_line`]: names and notes from a report kept on one line in the text output.

pub mod adapters;
pub mod charts;
pub mod compare;
pub mod cost;
pub mod dates;
pub mod embeddings;
pub mod html;
pub mod images;
pub mod markdown;
pub mod one_line;
pub mod point;
pub mod predicted;
pub mod ran;
pub mod rank;
pub mod reasoning;
pub mod rows;
pub mod section;
pub mod table;
pub mod text;
pub mod tool_calls;
pub mod trend;
pub mod tune;
pub mod turns;
pub mod verdict;
pub mod warnings;

use std::fmt;
use std::str::FromStr;

pub use html::html;
pub use warnings::{warnings_text, Warning, WarningKind};

/// Output format of [`show`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned text table for a terminal, followed by the warnings.
    Table,
    /// Markdown table (for READMEs and pull requests), followed by the warnings.
    Markdown,
    /// CSV export: one row per engine x load level, full-precision numbers.
    Csv,
    /// JSON export: a flat array of row objects with the same keys as the CSV.
    Json,
}

/// An unknown format name given to [`Format::from_str`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}` (expected table, markdown, csv or json)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "table" | "text" => Ok(Format::Table),
            "markdown" | "md" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            _ => Err(UnknownFormat(s.to_string())),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Table => "table",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Json => "json",
        })
    }
}

/// Renders a report in `format`. `color` adds ANSI colours (table format only:
/// green where the SLO is met at the median, red where it is missed).
///
/// Table and Markdown end with the warnings; CSV and JSON are exports and carry only
/// the rows.
pub fn show(report: &report::Report, format: Format, color: bool) -> String {
    match format {
        Format::Table => {
            // A name with a newline (a model id, a peer file's) must not start a line.
            let report = &*one_line::report(report);
            let rows = rows::rows(report);
            let mut out = verdict::verdict_text(report);
            out.push('\n');
            out.push_str(&table::header_text(report));
            out.push('\n');
            out.push_str(&table::text_table(report, &rows, color));
            for s in section::after_results(report) {
                out.push('\n');
                out.push_str(&s.text());
            }
            if let Some(c) = cost::table(report, color) {
                out.push('\n');
                out.push_str(&c);
            }
            let w = warnings_text(report, color);
            if !w.is_empty() {
                out.push('\n');
                out.push_str(&w);
            }
            out
        }
        Format::Markdown => {
            let rows = rows::rows(report);
            let mut out = table::header_markdown(report);
            out.push('\n');
            out.push_str(&format!(
                "**Verdict**: {}\n\n",
                markdown::md_escape(&verdict::verdict(report).join(" "))
            ));
            out.push_str(&table::markdown_table(report, &rows));
            for s in section::after_results(report) {
                out.push('\n');
                out.push_str(&s.markdown());
            }
            if let Some(c) = cost::markdown(report) {
                out.push('\n');
                out.push_str(&c);
            }
            out.push('\n');
            out.push_str(&warnings::warnings_markdown(report));
            out
        }
        Format::Csv => table::csv(&rows::rows(report)),
        Format::Json => table::json(&rows::rows(report)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_parses_names() {
        assert_eq!("table".parse::<Format>(), Ok(Format::Table));
        assert_eq!("MD".parse::<Format>(), Ok(Format::Markdown));
        assert_eq!("csv".parse::<Format>(), Ok(Format::Csv));
        assert_eq!("json".parse::<Format>(), Ok(Format::Json));
        assert!("xml".parse::<Format>().is_err());
        assert_eq!(Format::Markdown.to_string(), "markdown");
    }
}
