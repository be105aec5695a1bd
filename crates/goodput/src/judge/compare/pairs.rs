//! Which points `compare` pairs: with one report, each engine against its first;
//! with several, each report against the first, engine by engine. Points are
//! matched by engine and `x`.
//!
//! Two reports are paired only when their x means the same thing and their requests
//! were alike: reports of different load modes (concurrency vs rate) or of different
//! workloads are not compared at all, and say why; when their SLOs differ, goodput
//! and attainment (which the SLO defines) are left out and the other metrics are
//! compared.

use report::{EngineResult, LoadMode, Report};

use super::samples::{Requests, METRICS};
use super::{row, test_metric, Input, Options, SideData};
pub use report::compare::{Pair, Section};

use crate::render::point::slo_bounds_text;
use crate::render::text::x_label;

/// One side: a name for the rows, its engine's results, its requests.
struct Side<'a> {
    name: String,
    engine: &'a str,
    label: &'a str,
    result: &'a EngineResult,
    requests: Option<&'a Requests>,
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
            "{}: {why}; its intervals are Welch t intervals over per-trial values (trial-to-trial variation only, from its summaries)",
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
    let base = Side {
        name: base_name.clone(),
        engine: base_name,
        label: &input.label,
        result: base_result,
        requests: input.requests.as_ref(),
    };
    for (name, result) in engines {
        let cand = Side {
            name: name.clone(),
            engine: name,
            label: &input.label,
            result,
            requests: input.requests.as_ref(),
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
    for (name, bres) in &b.load {
        let Some(cres) = c.load.get(name) else {
            s.notes
                .push(format!("engine {name}: only in {}", base.label));
            continue;
        };
        let bs = Side {
            name: format!("{name} ({})", base.label),
            engine: name,
            label: &base.label,
            result: bres,
            requests: base.requests.as_ref(),
        };
        let cs = Side {
            name: format!("{name} ({})", cand.label),
            engine: name,
            label: &cand.label,
            result: cres,
            requests: cand.requests.as_ref(),
        };
        s.pairs.push(Pair {
            baseline: bs.name.clone(),
            candidate: cs.name.clone(),
            baseline_capacity: b.capacity.get(name).cloned(),
            candidate_capacity: c.capacity.get(name).cloned(),
        });
        s.notes.extend(super::explain::engines(
            name,
            (&base.label, b),
            (&cand.label, c),
        ));
        engines_rows(&bs, &cs, false, same_slo, opts, &mut s);
    }
    for name in c.load.keys() {
        if !b.load.contains_key(name) {
            s.notes
                .push(format!("engine {name}: only in {}", cand.label));
        }
    }
    s
}

fn same_x(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

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
        let Some(cp) = cand.result.points.iter().find(|c| same_x(c.x, bp.x)) else {
            s.notes.push(only_note(base, cand, bp.x, within));
            continue;
        };
        matched.push((bp, cp));
        let bd = SideData {
            requests: base.requests.and_then(|r| r.point(base.engine, bp.x)),
            point: bp,
        };
        let cd = SideData {
            requests: cand.requests.and_then(|r| r.point(cand.engine, cp.x)),
            point: cp,
        };
        for m in METRICS.iter().filter(|m| same_slo || !m.slo_bound) {
            let tested = test_metric(
                m,
                &bd,
                &cd,
                opts,
                &format!("{}|{}|{}|{}", base.name, cand.name, bp.x, m.name),
            );
            // Attainment only where a side recorded it (the reference does not);
            // TTFAT, energy and cost where a side has them.
            if m.recorded(bp, cp, bd.requests.is_some()) {
                s.rows
                    .push(row(cand.name.clone(), base.name.clone(), bp.x, m, tested));
            }
        }
    }
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
