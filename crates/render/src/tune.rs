//! `goodput show tune.json`: the flag space as a table (predicted and measured
//! capacity of every candidate) and the verdict in plain words. It reads the tune
//! answer only; every judgement in it was made by `goodput tune`.

use report::{LoadMode, Tune, TuneCapacity, TuneJudgement, TuneScheme};

use crate::point::slo_bounds_text;
use crate::text::num;

fn load_words(mode: &LoadMode, x: f64) -> String {
    match mode {
        LoadMode::Concurrency => format!(
            "{} concurrent request{}",
            num(x),
            if x == 1.0 { "" } else { "s" }
        ),
        _ => format!("{} requests/s", num(x)),
    }
}

/// `8 (95% 7-8)`, `none`, or `-` when there is nothing.
fn cap_cell(c: Option<&TuneCapacity>) -> String {
    match c {
        None => "-".into(),
        Some(c) => match (c.max_load, &c.interval) {
            (None, _) => "none".into(),
            (Some(x), Some(i)) => format!("{} ({}-{})", num(x), num(i.low), num(i.high)),
            (Some(x), None) => num(x),
        },
    }
}

fn interval_words(c: &TuneCapacity) -> String {
    match &c.interval {
        Some(i) => format!(" (95% {}-{})", num(i.low), num(i.high)),
        None => String::new(),
    }
}

/// The SLO in words: `TTFT ≤ 400 ms and TPOT ≤ 30 ms for 90% of requests`.
pub fn slo_words(slo: &report::Slo) -> String {
    let bounds = slo_bounds_text(slo);
    match slo.percentile {
        Some(p) => format!("{bounds} at p{}", num(p)),
        None => {
            let a = slo.attainment.unwrap_or(report::slo::DEFAULT_ATTAINMENT);
            if a >= 1.0 {
                format!("{bounds} for every request")
            } else {
                format!("{bounds} for {}% of requests", num(a * 100.0))
            }
        }
    }
}

/// The table and the verdict.
pub fn tune_text(t: &Tune) -> String {
    let scheme = match t.scheme {
        TuneScheme::ModelGuided => "model-guided",
        TuneScheme::SuccessiveHalving => "successive halving",
    };
    let measured = t.candidates.iter().filter(|c| c.measured.is_some()).count();
    let mut out = format!(
        "tune {} ({}): {} candidates, {scheme}; {measured} measured in {} real trials (a full search of every candidate: about {})\n\n",
        crate::one_line::one_line(&t.engine),
        crate::one_line::one_line(&t.profile),
        t.candidates.len(),
        t.trials_run,
        t.full_search_trials_estimate
    );
    let rows: Vec<[String; 4]> = t
        .candidates
        .iter()
        .map(|c| {
            let label = if c.args.is_empty() {
                "(no flags)".to_string()
            } else {
                crate::one_line::one_line(&c.args.join(" ")).into_owned()
            };
            let mut measured = cap_cell(c.measured.as_ref());
            if let (None, Some(s)) = (&c.measured, &c.screened) {
                measured = format!("{} (short search)", cap_cell(Some(s)));
            }
            let note = match &c.failure {
                Some(f) => format!("failed: {}", crate::one_line::one_line(f)),
                None => String::new(),
            };
            [label, cap_cell(c.predicted.as_ref()), measured, note]
        })
        .collect();
    let head = ["flags", "predicted", "measured", ""].map(String::from);
    let widths: Vec<usize> = (0..4)
        .map(|i| {
            rows.iter()
                .chain(std::iter::once(&head))
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in std::iter::once(&head).chain(&rows) {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&verdict(t));
    out.push('\n');
    for n in &t.notes {
        out.push_str(&format!("note: {}\n", crate::one_line::one_line(n)));
    }
    out
}

/// The answer in one paragraph.
pub fn verdict(t: &Tune) -> String {
    let slo = slo_words(&t.slo);
    let Some(best) = &t.best else {
        return format!(
            "No measured configuration of {} meets {slo} at any load probed.",
            t.engine
        );
    };
    let x = best.capacity.max_load.unwrap_or(0.0);
    let mut s = format!(
        "Run {} with {}: {}{} at {slo}",
        t.engine,
        if best.args.is_empty() {
            "none of the flags".to_string()
        } else {
            best.args.join(" ")
        },
        load_words(&t.mode, x),
        interval_words(&best.capacity)
    );
    match &t.runner_up {
        Some(r) => {
            let k = r.capacity.max_load.unwrap_or(0.0);
            let how = match r.judgement {
                TuneJudgement::Best => "is below it beyond noise",
                TuneJudgement::WithinNoise => "is within noise",
            };
            s.push_str(&format!(
                "; the runner-up ({}: {}{}) {how}",
                r.args.join(" "),
                num(k),
                interval_words(&r.capacity)
            ));
            let n = t
                .candidates
                .iter()
                .filter(|c| {
                    c.failure.is_some()
                        || c.measured
                            .as_ref()
                            .or(c.predicted.as_ref())
                            .is_some_and(|m| m.max_load.unwrap_or(0.0) <= k)
                })
                .count();
            s.push_str(&format!(
                "; {n} of {} configurations serve {} or fewer (measured, else predicted)",
                t.candidates.len(),
                num(k)
            ));
            if r.judgement == TuneJudgement::WithinNoise {
                s.push_str(&format!(". {}", r.note));
            }
        }
        None => s.push_str("; no other candidate was measured to compare it with"),
    }
    s.push('.');
    s
}
