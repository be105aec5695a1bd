//! `goodput run --predict ENGINE.toml` and `goodput search --predict ENGINE.toml`.
//!
//! `run --predict` writes the predicted report (nothing is launched). `search
//! --predict` searches the model in virtual time first, then confirms the predicted
//! knee on the real engine with the two probes that decide it (the knee, and the
//! next load up: one more concurrent request, or `resolution` more rate), each
//! with the plan's trials, and says how many real trials that saved against a
//! blind search (the trials the same search took on the model: what a blind
//! search of an engine that behaves like the model costs).

use std::path::{Path, PathBuf};

use crate::define::options::Execution;
use crate::define::plan::Plan;
use crate::define::profile::LoadMode;
use crate::render::{self, Format};

use super::{predict, Model, PredictOptions};

/// Where a search's virtual-time answer is written beside the real report.
pub fn predicted_path(output: &Path) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report.json".into());
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    output.with_file_name(format!("{stem}.predicted.json"))
}

fn print(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// Runs a plan with `--predict`; returns the exit code.
pub async fn execute(plan: &Plan, exec: &Execution, engine_config: &Path) -> anyhow::Result<i32> {
    let output = exec.output.as_path();
    let model = Model::load(engine_config)?;
    if plan.search.is_none() {
        let opts = PredictOptions {
            output: output.to_path_buf(),
            force: exec.force,
            html: exec.html,
        };
        let report = predict(plan, &model, &opts)?;
        print(&render::show(&report, Format::Table, false));
        print(&format!("\n{}", render::verdict::verdict_text(&report)));
        if !exec.quiet {
            eprintln!("predicted report: {}", output.display());
        }
        let any_ok = report
            .load
            .values()
            .any(|e| e.points.iter().any(|p| p.completed.iter().any(|&c| c > 0)));
        return Ok(if any_ok { 0 } else { 4 });
    }
    confirm_search(plan, exec, &model).await
}

/// The real probes that decide a predicted knee `k`.
fn probes(plan: &Plan, k: Option<f64>) -> Vec<f64> {
    let Some(cfg) = &plan.search else {
        return Vec::new();
    };
    match (k, cfg.mode) {
        (None, _) => vec![cfg.min],
        (Some(k), LoadMode::Concurrency) => vec![k, (k + 1.0).min(cfg.max)],
        (Some(k), LoadMode::Rate | LoadMode::Trace) => {
            vec![k, (k * (1.0 + cfg.resolution)).min(cfg.max)]
        }
    }
    .into_iter()
    .fold(Vec::new(), |mut v, x| {
        if !v.contains(&x) {
            v.push(x);
        }
        v
    })
}

async fn confirm_search(plan: &Plan, exec: &Execution, model: &Model) -> anyhow::Result<i32> {
    let output = exec.output.as_path();
    if plan.engines.len() != 1 {
        let names: Vec<&str> = plan.engines.keys().map(String::as_str).collect();
        return Err(crate::UsageError(format!(
            "search --predict confirms one engine against its one fitted model; the plan has {} engines ({}): run it once per engine, `--engine NAME --predict NAME.toml` (the file `goodput fit --engine NAME` wrote)",
            plan.engines.len(),
            names.join(", ")
        ))
        .into());
    }
    let name = plan.engines.keys().next().cloned().unwrap_or_default();
    let pred_path = predicted_path(output);
    let pred = predict(
        plan,
        model,
        &PredictOptions {
            output: pred_path.clone(),
            force: exec.force,
            html: false,
        },
    )?;
    let (knee, blind_trials) = super::search::knee(&pred, &name);
    let decide = probes(plan, knee);
    // Points whose interval straddles the SLO: the model cannot say; the engine can.
    let unsure = super::search::straddling(&pred, &name);
    let mut points = decide.clone();
    points.extend(unsure.iter().filter(|x| !decide.contains(x)));
    let mut real = plan.clone();
    real.search = None;
    real.points = points.clone();
    let opts = exec.run_options(None, None);
    crate::drive::engine::install_cleanup_hooks();
    let (mut report, outcome) = crate::sweep::run(&real, &opts).await?;
    let meets = |x: f64| {
        report.load.get(&name).and_then(|e| {
            e.points
                .iter()
                .find(|p| p.x == x)
                .and_then(|p| p.slo_check.as_ref().map(|c| c.meets))
        })
    };
    let real_trials = points.len() as u32 * plan.trials;
    let knee_text = knee.map_or(
        "none (even the lowest load fails)".into(),
        render::text::num,
    );
    let mut verdict = confirmation(knee, &decide, meets, real_trials, blind_trials);
    if !unsure.is_empty() {
        let said: Vec<String> = unsure
            .iter()
            .map(|x| match meets(*x) {
                Some(true) => format!("x = {} meets", render::text::num(*x)),
                Some(false) => format!("x = {} does not meet", render::text::num(*x)),
                None => format!("x = {} was not judged", render::text::num(*x)),
            })
            .collect();
        verdict.push_str(&format!(
            "; the predicted interval straddled the SLO at x = {}, measured: {}",
            unsure
                .iter()
                .map(|x| render::text::num(*x))
                .collect::<Vec<_>>()
                .join(", "),
            said.join(", ")
        ));
    }
    let notice = format!(
        "search --predict: {name}: predicted knee {knee_text} ({} from {}); {verdict}",
        pred_path.display(),
        model.path
    );
    if let Some(run) = report.run.as_mut() {
        run.notices.push(report::Notice::engine(
            report::NoticeKind::Predicted,
            &name,
            notice.clone(),
        ));
    }
    crate::redact::write_report(output, &report)?;
    print(&render::show(&report, Format::Table, false));
    print(&format!(
        "\n{}\n{notice}\n",
        render::verdict::verdict_text(&report)
    ));
    Ok(outcome.exit_code())
}

/// Whether the real probes confirm the predicted knee (it meets the SLO, the probe
/// above does not; with no knee, the lowest load fails), said with the real trials
/// against the blind search's.
fn confirmation(
    knee: Option<f64>,
    points: &[f64],
    meets: impl Fn(f64) -> Option<bool>,
    real_trials: u32,
    blind_trials: u32,
) -> String {
    let confirmed = match (knee, points) {
        (Some(_), [k, up]) => meets(*k) == Some(true) && meets(*up) == Some(false),
        (Some(_), [k]) => meets(*k) == Some(true),
        (None, [m]) => meets(*m) == Some(false),
        _ => false,
    };
    if confirmed {
        format!(
            "confirmed on the real engine with {real_trials} trials, {} fewer than the {blind_trials} a blind search took on the model",
            i64::from(blind_trials) - i64::from(real_trials)
        )
    } else {
        format!(
            "NOT confirmed on the real engine ({real_trials} trials at x = {}): the model is off here; run a real `goodput search` (on the model it took {blind_trials} trials)",
            points.iter().map(|x| render::text::num(*x)).collect::<Vec<_>>().join(", ")
        )
    }
}
