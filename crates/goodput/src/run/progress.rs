//! Progress display: a bar per trial on a terminal, nothing when piped.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use report::stats::{quantile_linear, sort_values};

use crate::load::OnRecord;
use crate::record::RequestRecord;

/// Progress of one trial.
pub fn trial_bar(enabled: bool, label: String, n: u64) -> (ProgressBar, OnRecord) {
    let target = if enabled {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(n), target);
    bar.set_style(
        ProgressStyle::with_template("{prefix:.bold} [{bar:30}] {pos}/{len} {msg} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(label);
    let b = bar.clone();
    let mut ttfts: Vec<f64> = Vec::new();
    let mut failed = 0u64;
    let mut last_update = std::time::Instant::now();
    let on_record: OnRecord = Box::new(move |r: &RequestRecord| {
        match (r.ok(), r.chunks.first()) {
            (true, Some(c)) => ttfts.push(c.t.saturating_sub(r.sent) as f64 / 1e6),
            _ => failed += 1,
        }
        b.inc(1);
        // The median is recomputed at most 10 times a second.
        if last_update.elapsed().as_millis() >= 100 || b.position() == n {
            last_update = std::time::Instant::now();
            let mut v = ttfts.clone();
            sort_values(&mut v);
            let med = quantile_linear(&v, 0.5).map_or("-".into(), |m| format!("{m:.1} ms"));
            let fail = if failed > 0 {
                format!(", {failed} failed")
            } else {
                String::new()
            };
            b.set_message(format!("median TTFT {med}{fail}"));
        }
    });
    (bar, on_record)
}
