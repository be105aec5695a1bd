//! Images in chat requests (`[workload] images`): one row per engine x load level
//! whose requests carried images: how many, their size and bytes, and whether the
//! server counted their tokens in the prompt tokens.

use report::{ImageSummary, Point, Report};

use super::section::TableSection;
use super::text::num;

const COLUMNS: [&str; 6] = [
    "engine",
    "x",
    "requests",
    "images",
    "KiB per image",
    "image tokens in prompt tokens",
];

fn points(report: &Report) -> Vec<(&str, &Point, &ImageSummary)> {
    super::section::points_with(report, |p| p.images.as_ref())
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

/// The images' section; without rows when no point carried images.
pub fn section(report: &Report) -> TableSection {
    TableSection {
        qualifier: "(over all trials)".into(),
        about: Some(
            "Generated images sent as data URLs; a server that reports usage counts \
             their tokens in the prompt tokens.",
        ),
        rows: cells(report),
        ..TableSection::new("images", "Images", &COLUMNS[..])
    }
}
