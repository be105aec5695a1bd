//! Images in chat requests (`[workload] images`): one row per engine x load level
//! whose requests carried images: how many, their size and bytes, and whether the
//! server counted their tokens in the prompt tokens.

use maud::{html, Markup};
use report::{ImageSummary, Point, Report};

use super::markdown::{grid, md_escape};
use super::text::{num, plain_table};

const COLUMNS: [&str; 6] = [
    "engine",
    "x",
    "requests",
    "images",
    "KiB per image",
    "image tokens in prompt tokens",
];

fn points(report: &Report) -> Vec<(&str, &Point, &ImageSummary)> {
    report
        .load
        .iter()
        .flat_map(|(engine, r)| {
            r.points
                .iter()
                .filter_map(move |p| p.images.as_ref().map(|s| (engine.as_str(), p, s)))
        })
        .collect()
}

fn cells(report: &Report) -> Vec<Vec<String>> {
    points(report)
        .into_iter()
        .map(|(engine, p, s)| {
            let per = s.bytes as f64 / s.images.max(1) as f64 / 1024.0;
            let counted = match (s.prompt_tokens_counted, s.prompt_tokens_unknown) {
                (_, 0) => "counted by the server".to_string(),
                (0, _) => "unknown (no usage)".to_string(),
                (c, u) => format!("counted for {c}, unknown for {u}"),
            };
            vec![
                engine.to_string(),
                num(p.x),
                s.requests.to_string(),
                format!("{} of {}x{}", s.images, s.width, s.height),
                num(per),
                counted,
            ]
        })
        .collect()
}

const TITLE: &str = "Images (over all trials)";

/// The table for a terminal; empty when no point carried images.
pub fn images_text(report: &Report) -> String {
    let rows = cells(report);
    if rows.is_empty() {
        return String::new();
    }
    format!("{TITLE}:\n{}", plain_table(&COLUMNS, rows))
}

/// The table in Markdown; empty when no point carried images.
pub fn images_markdown(report: &Report) -> String {
    let rows: Vec<Vec<String>> = cells(report)
        .into_iter()
        .map(|r| r.iter().map(|c| md_escape(c)).collect())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!("**{TITLE}**\n\n{}", grid(&COLUMNS, 1, &rows))
}

/// The section of the HTML page; nothing when no point carried images.
pub fn images_html(report: &Report) -> Markup {
    let rows = cells(report);
    html! {
        @if !rows.is_empty() {
            section #images {
                h2 { "Images" }
                p { "Generated images sent as data URLs; a server that reports usage counts \
                     their tokens in the prompt tokens." }
                table {
                    thead { tr { @for c in COLUMNS { th { (c) } } } }
                    tbody {
                        @for r in &rows {
                            tr { @for c in r { td { (c) } } }
                        }
                    }
                }
            }
        }
    }
}
