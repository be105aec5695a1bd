//! Progress display on a terminal (nothing when stderr is not one): an overall line
//! (engine i of n, point, trial, trials done of all, elapsed, an estimate of what
//! is left) and, during a trial, a bar of requests done and in flight. Both tick
//! every second on their own, so the display never looks stuck while an engine
//! starts, the GPU cools, or a slow request runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::drive::load::OnRecord;
use crate::drive::record::RequestRecord;

/// How often the bars redraw on their own.
const TICK: Duration = Duration::from_secs(1);

/// The run's progress display.
pub struct Progress {
    multi: MultiProgress,
    overall: ProgressBar,
    visible: bool,
}

impl Progress {
    /// A display of `total_trials` trials still to run; hidden unless `visible`.
    pub fn new(visible: bool, total_trials: u64) -> Progress {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let multi = MultiProgress::with_draw_target(target);
        let overall = multi.add(ProgressBar::new(total_trials));
        overall.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:20}] {pos}/{len} trials, {left} · {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            // No estimate before a trial has ended: "about 0s left" would be a guess.
            .with_key(
                "left",
                |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = if s.pos() == 0 {
                        write!(w, "time left known after the first trial")
                    } else {
                        write!(w, "about {:#} left", indicatif::HumanDuration(s.eta()))
                    };
                },
            )
            .progress_chars("=> "),
        );
        if visible {
            overall.enable_steady_tick(TICK);
        }
        Progress {
            multi,
            overall,
            visible,
        }
    }

    /// What the run is doing now (`engine 2/3 vllm-ngram: starting`).
    pub fn phase(&self, what: String) {
        self.overall.set_message(what);
    }

    /// One more trial finished.
    pub fn trial_done(&self) {
        // Adaptive trials and a search's confirmations go past the estimate.
        if let Some(len) = self.overall.length() {
            if self.overall.position() >= len {
                self.overall.inc_length(1);
            }
        }
        self.overall.inc(1);
    }

    /// A status line above the bars (or plainly on stderr when they are hidden).
    /// One line: a newline in it (a model id's, a server's error text) is escaped.
    pub fn println(&self, line: &str) {
        let line = crate::term::line(line);
        let line = line.as_ref();
        if self.visible {
            let _ = self.multi.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    /// Clears the display at the end of the run.
    pub fn finish(&self) {
        self.overall.finish_and_clear();
    }

    /// A bar for one trial of `n` requests: done, in flight (`sent` minus done),
    /// failed and the median TTFT so far.
    pub fn trial_bar(
        &self,
        label: String,
        n: u64,
        sent: Arc<AtomicU64>,
    ) -> (ProgressBar, OnRecord) {
        let bar = self.multi.add(ProgressBar::new(n));
        bar.set_style(
            ProgressStyle::with_template("  {prefix} [{bar:30}] {pos}/{len} done, {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix(label);
        bar.set_message("0 in flight");
        if self.visible {
            bar.enable_steady_tick(TICK);
        }
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
                let med = crate::stats::median(ttfts.iter().copied())
                    .map_or("-".into(), |m| format!("{m:.1} ms"));
                let in_flight = sent.load(Ordering::Relaxed).saturating_sub(b.position());
                let fail = if failed > 0 {
                    format!(", {failed} failed")
                } else {
                    String::new()
                };
                b.set_message(format!("{in_flight} in flight, median TTFT {med}{fail}"));
            }
        });
        (bar, on_record)
    }
}
