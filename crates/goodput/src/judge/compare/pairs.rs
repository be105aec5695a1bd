//! Which points `compare` pairs: with one report, each engine against its first;
//! with several, each report against the first, engine by engine (two reports of
//! one engine each pair those engines whatever their names, and say so). Points
//! are matched by engine and `x`.
//!
//! Two reports are paired only when their x means the same thing and their requests
//! were alike: reports of different load modes (concurrency vs rate) or of different
//! workloads are not compared at all, and say why; when their SLOs differ, goodput
//! and attainment (which the SLO defines) are left out and the other metrics are
//! compared.

use report::{EngineResult, LoadMode, Report};

use super::{pair_rows, Input, Options};
pub use report::compare::{Pair, Section};

use crate::render::point::slo_bounds_text;
use crate::render::text::x_label;

/// One side: a name for the rows, its engine's results.
struct Side<'a> {
    name: String,
    engine: &'a str,
    label: &'a str,
    result: &'a EngineResult,
}

/// The sections of a comparison of `inputs` (rows not yet decided).
pub fn sections(inputs: &[Input], opts: &Options) -> Vec<Section> {
    match inputs {
        [] => Vec::new(),
        [one] => vec![within(one, opts)],
        [base, rest @ ..] => rest.iter().map(|c| across(base, c, opts)).collect(),
    }
}

fn requests_note(i: &Input) -> Option<String> {
    i.missing.as_ref().map(|why| {
        format!(
            "{}: its trials' figures are not stored and {why}: its rows use the trial values its summaries hold (up to three trials; rows of more are not testable)",
            i.label
        )
    })
}

fn within(input: &Input, opts: &Options) -> Section {
    let r = &input.report;
    let mut s = Section::default();
    let mut engines = r.load.iter();
    let Some((base_name, base_result)) = engines.next() else {
        s.title = format!("{}: no engines to compare", input.label);
        return s;
    };
    s.title = format!(
        "{} (profile {}): each engine against {base_name} (baseline)",
        input.label, r.profile
    );
    if r.load.len() == 1 {
        s.refused = Some(format!(
            "{}: only one engine ({base_name}); nothing to compare.",
            input.label
        ));
        return s;
    }
    s.notes.extend(requests_note(input));
    s.notes.extend(order_note(r));
    let base = Side {
        name: base_name.clone(),
        engine: base_name,
        label: &input.label,
        result: base_result,
    };
    for (name, result) in engines {
        let cand = Side {
            name: name.clone(),
            engine: name,
            label: &input.label,
            result,
        };
        s.pairs.push(Pair {
            baseline: base.name.clone(),
            candidate: cand.name.clone(),
            baseline_capacity: r.capacity.get(base_name).cloned(),
            candidate_capacity: r.capacity.get(name).cloned(),
        });
        engines_rows(&base, &cand, true, true, opts, &mut s);
    }
    s
}

/// What x means in a report (a report in the reference format records no mode;
/// its x is closed-loop concurrency).
fn load_mode(r: &Report) -> &LoadMode {
    r.run
        .as_ref()
        .map_or(&LoadMode::Concurrency, |run| &run.load_mode)
}

/// The workload as the report describes it, when it does.
fn workload(r: &Report) -> Option<&serde_json::Value> {
    r.run
        .as_ref()
        .map(|run| &run.workload)
        .filter(|w| !w.is_null())
}

/// Why two reports cannot be compared point by point, when they cannot.
fn not_comparable(base: &Input, cand: &Input) -> Option<String> {
    let (bm, cm) = (load_mode(&base.report), load_mode(&cand.report));
    let (bl, cl) = (&base.label, &cand.label);
    if bm != cm {
        return Some(format!(
            "Not compared: {bl} ran in {bm} mode and {cl} in {cm} mode; an x of \
             one (requests in flight vs requests per second) is not an x of the other."
        ));
    }
    match (workload(&base.report), workload(&cand.report)) {
        (Some(bw), Some(cw)) if bw != cw => Some(format!(
            "Not compared: the workloads differ ({bl}: {bw}; {cl}: {cw}); \
             latency and throughput depend on the prompts and output lengths."
        )),
        _ => None,
    }
}

fn across(base: &Input, cand: &Input, opts: &Options) -> Section {
    let (b, c) = (&base.report, &cand.report);
    let mut s = Section {
        title: format!(
            "{} (candidate) against {} (baseline)",
            cand.label, base.label
        ),
        ..Default::default()
    };
    if b.profile != c.profile {
        s.title.push_str(&format!(
            "\nnote: profiles differ ({} vs {})",
            b.profile, c.profile
        ));
    }
    if let Some(why) = not_comparable(base, cand) {
        s.refused = Some(why);
        return s;
    }
    s.notes.extend(predicted_note(base, cand));
    s.notes.push(RUN_TO_RUN_NOTE.to_string());
    s.notes.extend(requests_note(base));
    s.notes.extend(requests_note(cand));
    let same_slo = b.slo == c.slo;
    if !same_slo {
        s.notes.push(format!(
            "goodput req/s and SLO attainment not compared: the SLOs differ ({}: {}; {}: {}), \
             and both count the requests that meet the SLO",
            base.label,
            slo_bounds_text(&b.slo),
            cand.label,
            slo_bounds_text(&c.slo)
        ));
    }
    let unrecorded: Vec<&str> = [base, cand]
        .into_iter()
        .filter(|i| workload(&i.report).is_none())
        .map(|i| i.label.as_str())
        .collect();
    if !unrecorded.is_empty() {
        s.notes.push(format!(
            "workload not recorded in {}: that both ran the same prompts and output lengths is not checked",
            unrecorded.join(", ")
        ));
    }
    let matched = matched_engines(b, c);
    if let [(bn, cn)] = matched.as_slice() {
        if bn != cn {
            s.notes.push(format!(
                "each report holds one engine, named differently ({bn} in {}, {cn} in {}): \
                 they are compared with each other",
                base.label, cand.label
            ));
        }
    }
    for (bname, cname) in &matched {
        let (Some(bres), Some(cres)) = (b.load.get(*bname), c.load.get(*cname)) else {
            continue;
        };
        let bs = Side {
            name: format!("{bname} ({})", base.label),
            engine: bname,
            label: &base.label,
            result: bres,
        };
        let cs = Side {
            name: format!("{cname} ({})", cand.label),
            engine: cname,
            label: &cand.label,
            result: cres,
        };
        s.pairs.push(Pair {
            baseline: bs.name.clone(),
            candidate: cs.name.clone(),
            baseline_capacity: b.capacity.get(*bname).cloned(),
            candidate_capacity: c.capacity.get(*cname).cloned(),
        });
        s.notes.extend(super::explain::engines_named(
            (bname, cname),
            (&base.label, b),
            (&cand.label, c),
        ));
        engines_rows(&bs, &cs, false, same_slo, opts, &mut s);
    }
    for name in b.load.keys() {
        if !matched.iter().any(|(bn, _)| bn == name) {
            s.notes
                .push(format!("engine {name}: only in {}", base.label));
        }
    }
    for name in c.load.keys() {
        if !matched.iter().any(|(_, cn)| cn == name) {
            s.notes
                .push(format!("engine {name}: only in {}", cand.label));
        }
    }
    s
}

/// Which engine of the baseline report pairs with which of the candidate's: by
/// name; and two reports of one engine each pair those engines whatever their
/// names (one server run twice, named `server` once and after its model the next
/// time, is still one server).
fn matched_engines<'a>(b: &'a Report, c: &'a Report) -> Vec<(&'a str, &'a str)> {
    if let (1, 1, Some(bn), Some(cn)) = (
        b.load.len(),
        c.load.len(),
        b.load.keys().next(),
        c.load.keys().next(),
    ) {
        return vec![(bn.as_str(), cn.as_str())];
    }
    b.load
        .keys()
        .filter(|n| c.load.contains_key(*n))
        .map(|n| (n.as_str(), n.as_str()))
        .collect()
}

/// Whether the engines of one report ran interleaved, as far as it says.
fn order_note(r: &Report) -> Option<String> {
    match r.run.as_ref().and_then(|run| run.interleaved) {
        Some(true) => Some(
            "the engines' trials interleaved (rounds in a seeded order): drift over the run falls on every engine alike".into(),
        ),
        Some(false) => Some(
            "the engines ran one after the other: drift over the run (the machine's load, a warming GPU) is confounded with the engine; `[load] interleave = true` interleaves them".into(),
        ),
        None => None,
    }
}

/// Said of every comparison of two separate runs.
pub const RUN_TO_RUN_NOTE: &str = "two separate runs: what changed between them (the machine's load, the engine's caches and state) is part of each difference, and one run a side cannot tell it from the engines; the intervals hold the variation between trials within each run (interleaved engines in one profile, or several runs a side, separate the two)";

use report::compare::same_x;

/// Says that load level `x` of `side` has no match on `other`.
fn only_note(side: &Side, other: &Side, x: f64, within: bool) -> String {
    if within {
        format!(
            "x={}: only {} has this load level, {} does not",
            x_label(x),
            side.engine,
            other.engine
        )
    } else {
        format!("{} x={}: only in {}", side.engine, x_label(x), side.label)
    }
}

fn engines_rows(
    base: &Side,
    cand: &Side,
    within: bool,
    same_slo: bool,
    opts: &Options,
    s: &mut Section,
) {
    for side in [base, cand] {
        if side.result.points.is_empty() {
            let why = match &side.result.error {
                Some(e) => format!("engine failed: {}: {}", e.kind, e.message),
                None => "no load level ran".to_string(),
            };
            let at = if within {
                side.engine.to_string()
            } else {
                format!("{} in {}", side.engine, side.label)
            };
            s.notes.push(format!("{at}: no results to compare ({why})"));
            return;
        }
    }
    let mut matched = Vec::new();
    for bp in &base.result.points {
        match cand.result.points.iter().find(|c| same_x(c.x, bp.x)) {
            Some(cp) => matched.push((bp, cp)),
            None => s.notes.push(only_note(base, cand, bp.x, within)),
        }
    }
    s.rows.extend(pair_rows(
        (&base.name, base.result),
        (&cand.name, cand.result),
        same_slo,
        &opts.rule(),
    ));
    for cp in &cand.result.points {
        if !base.result.points.iter().any(|b| same_x(b.x, cp.x)) {
            s.notes.push(only_note(cand, base, cp.x, within));
        }
    }
    for n in super::explain::explain(&matched, &base.name, &cand.name) {
        if !s.notes.contains(&n) {
            s.notes.push(n);
        }
    }
}

/// With a predicted side, the change column is the prediction's error.
fn predicted_note(base: &Input, cand: &Input) -> Option<String> {
    let predicted = |r: &Report| r.run.as_ref().is_some_and(|run| run.predicted.is_some());
    let (bl, cl) = (&base.label, &cand.label);
    match (predicted(&base.report), predicted(&cand.report)) {
        (false, true) => Some(format!(
            "{cl} is PREDICTED: its change is the prediction's error against the measured {bl} \
             (better: the model is optimistic there, worse: pessimistic)"
        )),
        (true, false) => Some(format!(
            "{bl} is PREDICTED: the change is how far the measured {cl} is from the prediction"
        )),
        (true, true) => Some("both reports are PREDICTED: nothing here was measured".into()),
        (false, false) => None,
    }
}
