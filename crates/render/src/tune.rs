//! `goodput show tune.json`: the flag space as a table (predicted and measured
//! capacity of every candidate) and the verdict in plain words. It reads the tune
//! answer only; every judgement in it was made by `goodput tune`.

use report::{LoadMode, Tune, TuneCapacity, TuneCost, TuneJudgement, TuneScheme};

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
        TuneScheme::PriceOrder => "cost at the load, cheapest price first",
    };
    let measured = t.candidates.iter().filter(|c| c.measured.is_some()).count();
    let mut out = format!(
        "tune {} ({}): {} candidates, {scheme}; {measured} measured in {} real trials{} (a full search of every candidate: about {})\n\n",
        crate::one_line::one_line(&t.engine),
        crate::one_line::one_line(&t.profile),
        t.candidates.len(),
        t.trials_run,
        if t.trials_reused > 0 {
            format!(" and {} reused from an earlier run", t.trials_reused)
        } else {
            String::new()
        },
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
            if let Some(k) = &c.cost {
                measured = cost_cell(k);
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

/// `$1.2 per million good tokens (...) (meets at 4)`, or `fails`.
fn cost_cell(k: &TuneCost) -> String {
    let verdict = if k.meets { "meets" } else { "fails" };
    format!("{} ({verdict} at {})", usd_words(k), num(k.load))
}

/// `$1.2 per million good tokens ($1.1-$1.3 over trials)`.
fn usd_words(k: &TuneCost) -> String {
    let Some(s) = k.usd_per_million_good_tokens else {
        return "no good token".into();
    };
    let m = s.median.map_or_else(|| "-".into(), num);
    match (s.min, s.max) {
        (Some(lo), Some(hi)) if s.n > 1 => format!(
            "${m} per million good tokens (${}-${} over trials)",
            num(lo),
            num(hi)
        ),
        _ => format!("${m} per million good tokens"),
    }
}

/// The cost answer in one paragraph.
fn cost_verdict(t: &Tune, best: &report::TuneBest, k: &TuneCost, slo: &str) -> String {
    let mut s = format!(
        "Run {} with {}: {} at {} with {slo} (${}/hour)",
        t.engine,
        if best.args.is_empty() {
            "none of the flags".to_string()
        } else {
            best.args.join(" ")
        },
        usd_words(k),
        load_words(&t.mode, k.load),
        num(k.usd_per_hour)
    );
    if let Some(r) = &t.runner_up {
        let how = match r.judgement {
            TuneJudgement::Best => "costs more beyond noise",
            TuneJudgement::WithinNoise => "is within noise",
        };
        let theirs = r.cost.as_ref().map_or_else(|| "-".into(), usd_words);
        s.push_str(&format!(
            "; the runner-up ({}: {theirs}) {how}",
            r.args.join(" ")
        ));
    }
    let meets = t
        .candidates
        .iter()
        .filter(|c| c.cost.as_ref().is_some_and(|k| k.meets))
        .count();
    let measured = t.candidates.iter().filter(|c| c.cost.is_some()).count();
    s.push_str(&format!(
        "; {meets} of {measured} configurations measured meet the SLO at that load."
    ));
    if let Some(r) = t
        .runner_up
        .as_ref()
        .filter(|r| r.judgement == TuneJudgement::WithinNoise)
    {
        s.push_str(&format!(" {}", r.note));
    }
    s
}

/// The answer in one paragraph.
pub fn verdict(t: &Tune) -> String {
    let slo = slo_words(&t.slo);
    if let (Some(best), Some(k)) = (&t.best, t.best.as_ref().and_then(|b| b.cost.as_ref())) {
        return cost_verdict(t, best, k, &slo);
    }
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
