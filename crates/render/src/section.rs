//! The primitive every table section after the results table is written in, once:
//! a titled table with its notes ([`TableSection`]). A section builds one value
//! from the report; each format fills it in ([`TableSection::text`],
//! [`TableSection::markdown`], [`TableSection::html`]), so a new section is one
//! function added to [`after_results`] and a new format one method here.

use maud::{html, Markup};
use report::{Point, Report};

use super::markdown::{grid, md_escape};
use super::text::plain_table;

/// A table section: title, columns, one row of cells per line, notes after it.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSection {
    /// The HTML anchor (`section #id`).
    pub id: &'static str,
    /// The title's head: the HTML heading, bold in Markdown.
    pub head: String,
    /// What the head is qualified by in text and Markdown (e.g. "(conversations;
    /// all trials pooled)"); empty for none.
    pub qualifier: String,
    /// The paragraph under the HTML heading (what the columns mean), if any.
    pub about: Option<&'static str>,
    /// Column names.
    pub columns: Vec<String>,
    /// How many leading columns are words (left-aligned in Markdown), not numbers.
    pub left: usize,
    /// Cells, one row per line.
    pub rows: Vec<Vec<String>>,
    /// Sentences after the table.
    pub notes: Vec<String>,
}

impl TableSection {
    /// A section without qualifier, note or paragraph.
    pub fn new(id: &'static str, head: impl Into<String>, columns: &[&str]) -> Self {
        TableSection {
            id,
            head: head.into(),
            qualifier: String::new(),
            about: None,
            columns: columns.iter().map(|c| c.to_string()).collect(),
            left: 1,
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn column_names(&self) -> Vec<&str> {
        self.columns.iter().map(String::as_str).collect()
    }

    fn title(&self) -> String {
        match self.qualifier.as_str() {
            "" => self.head.clone(),
            q => format!("{} {q}", self.head),
        }
    }

    /// For a terminal: `Title:`, the aligned table, the notes; empty without rows.
    pub fn text(&self) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let mut out = format!("{}:\n", self.title());
        out.push_str(&plain_table(&self.column_names(), self.rows.clone()));
        for n in &self.notes {
            out.push_str(&format!("{n}\n"));
        }
        out
    }

    /// In Markdown: the bold head and its qualifier, the table, the notes; empty
    /// without rows.
    pub fn markdown(&self) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(|c| md_escape(c)).collect())
            .collect();
        let mut out = format!("**{}**", md_escape(&self.head));
        if !self.qualifier.is_empty() {
            out.push_str(&format!(" {}", md_escape(&self.qualifier)));
        }
        out.push_str("\n\n");
        out.push_str(&grid(&self.column_names(), self.left, &rows));
        for n in &self.notes {
            out.push_str(&format!("\n{}\n", md_escape(n)));
        }
        out
    }

    /// The HTML page's section; nothing without rows.
    pub fn html(&self) -> Markup {
        html! {
            @if !self.rows.is_empty() {
                section id=(self.id) {
                    h2 { (self.head) }
                    @if let Some(about) = self.about { p { (about) } }
                    table {
                        thead { tr { @for c in &self.columns { th { (c) } } } }
                        tbody {
                            @for r in &self.rows {
                                tr { @for c in r { td { (c) } } }
                            }
                        }
                    }
                    @for n in &self.notes {
                        p.notice { (n) }
                    }
                }
            }
        }
    }
}

/// Every point of `report` that has the part `part` takes (`p.reasoning`,
/// `p.tool_calls`, ...), with its engine and the part, in report order: the rows
/// every section after the results table is made of.
pub fn points_with<'a, T>(
    report: &'a Report,
    part: impl Fn(&'a Point) -> Option<&'a T>,
) -> Vec<(&'a str, &'a Point, &'a T)> {
    report
        .load
        .iter()
        .flat_map(|(engine, r)| r.points.iter().map(move |p| (engine.as_str(), p)))
        .filter_map(|(engine, p)| part(p).map(|s| (engine, p, s)))
        .collect()
}

/// The table sections after the results table, in the order every format shows
/// them; those without rows left out.
pub fn after_results(report: &Report) -> Vec<TableSection> {
    [
        super::turns::section(report),
        super::reasoning::section(report),
        super::tool_calls::section(report),
        super::images::section(report),
        super::embeddings::section(report),
        super::adapters::section(report),
        super::predicted::section(report),
    ]
    .into_iter()
    .filter(|s| !s.rows.is_empty())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLUMNS: [&str; 2] = ["engine", "x"];

    fn section(rows: Vec<Vec<String>>) -> TableSection {
        TableSection {
            qualifier: "(pooled)".into(),
            about: Some("What the columns mean."),
            rows,
            notes: vec!["a | note".into()],
            ..TableSection::new("demo", "Demo", &COLUMNS)
        }
    }

    #[test]
    fn every_format_fills_in_the_same_section() {
        let s = section(vec![vec!["a|b".into(), "1".into()]]);
        let text = s.text();
        assert!(text.starts_with("Demo (pooled):\n"), "{text}");
        assert!(
            text.contains("a|b") && text.ends_with("a | note\n"),
            "{text}"
        );
        let md = s.markdown();
        assert!(
            md.starts_with("**Demo** (pooled)\n\n| engine | x |\n| --- | ---: |\n"),
            "{md}"
        );
        assert!(md.contains(r"a\|b") && md.contains(r"a \| note"), "{md}");
        let html = s.html().into_string();
        assert!(
            html.starts_with(r#"<section id="demo"><h2>Demo</h2><p>What the columns mean.</p>"#),
            "{html}"
        );
        assert!(
            html.contains("<td>a|b</td>") && html.contains(r#"<p class="notice">a | note</p>"#),
            "{html}"
        );
    }

    #[test]
    fn a_section_without_rows_shows_nothing_in_any_format() {
        let s = section(Vec::new());
        assert_eq!((s.text(), s.markdown()), (String::new(), String::new()));
        assert_eq!(s.html().into_string(), "");
        let empty: report::Report = serde_json::from_value(serde_json::json!({
            "profile": "p", "slo": {}, "environment": null, "quantiles": [], "load": {}
        }))
        .expect("a minimal report");
        assert!(after_results(&empty).is_empty());
    }
}
