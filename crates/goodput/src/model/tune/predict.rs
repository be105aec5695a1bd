//! Every candidate predicted: the engine model fitted on a measured candidate's
//! records (`goodput fit`'s [`crate::model::fit::output::fit_report`]), the
//! candidate's vLLM flags applied to it ([`goodput_sim::VllmFlags`]), and the
//! plan's capacity search run on it in virtual time (the same path as `search
//! --predict`), with each probe's interval ([`crate::model::predict::interval`]).

use goodput_sim::config::vllm::{parse_human_int, parse_speculative_config, FLAG_KEYS};
use goodput_sim::{SimConfig, VllmFlags};
use report::{CapacityInterval, TuneCapacity};

use crate::define::plan::Plan;
use crate::define::profile::{Candidate, FlagValue};
use crate::model::fit::evidence::Evidence;
use crate::model::predict::{finish_report, interval, predict_sweep, Model};

/// Draws of each predicted probe's interval: fewer than `run --predict`'s, since
/// tune predicts every candidate (the interval only ranks them).
const TUNE_DRAWS: u32 = 100;

/// `--max_num_seqs` and `--max-num-seqs` alike: vLLM takes both spellings.
fn normal(flag: &str) -> String {
    flag.replace('_', "-")
}

/// Whether the engine model speaks `flag` (one of vLLM's flags it models, or its
/// `--no-` form).
pub fn speaks(flag: &str) -> bool {
    let f = normal(flag);
    FLAG_KEYS.iter().any(|(name, _)| {
        *name == f
            || name
                .strip_prefix("--")
                .is_some_and(|n| f == format!("--no-{n}"))
    })
}

/// The candidate's flags as the simulator's config takes them.
pub fn vllm_flags(c: &Candidate) -> Result<VllmFlags, String> {
    let mut v = VllmFlags::default();
    for (flag, value) in &c.flags {
        let f = normal(flag);
        let (name, on) = match f.strip_prefix("--no-") {
            Some(rest) => (format!("--{rest}"), false),
            None => (f.clone(), true),
        };
        let int = |x: &FlagValue| -> Result<u32, String> {
            match x {
                FlagValue::Int(n) => {
                    u32::try_from(*n).map_err(|_| format!("{flag} {n}: out of range"))
                }
                FlagValue::Text(s) => parse_human_int(s).map_err(|e| format!("{flag}: {e}")),
                other => Err(format!("{flag}: {other:?} is not a whole number")),
            }
        };
        let switch = |x: &FlagValue| match x {
            // `true`: the flag given; `false`: left out (the configuration's own).
            FlagValue::Switch(true) => Some(on),
            _ => None,
        };
        match name.as_str() {
            "--max-num-seqs" => v.max_num_seqs = Some(int(value)?),
            "--max-num-batched-tokens" => v.max_num_batched_tokens = Some(int(value)?),
            "--block-size" => v.block_size = Some(int(value)?),
            "--num-gpu-blocks-override" => v.num_gpu_blocks_override = Some(int(value)?),
            "--max-model-len" => v.max_model_len = Some(int(value)?),
            "--async-scheduling" => v.async_scheduling = switch(value).or(v.async_scheduling),
            "--enable-prefix-caching" => {
                v.enable_prefix_caching = switch(value).or(v.enable_prefix_caching)
            }
            "--speculative-config" => {
                let text = value.word().unwrap_or_default();
                v.speculative_config =
                    Some(parse_speculative_config(&text).map_err(|e| format!("{flag}: {e}"))?)
            }
            _ => return Err(format!("{flag} is not a flag the engine model speaks")),
        }
    }
    Ok(v)
}

/// The fitted model with fewer interval draws (see `TUNE_DRAWS`).
pub fn with_tune_draws(mut config: SimConfig) -> SimConfig {
    if let Some(mut ev) = Evidence::from_table(config.fit.as_ref()) {
        ev.draws = Some(TUNE_DRAWS);
        config.fit = ev.to_table();
    }
    config
}

/// The candidate's predicted capacity on `model` (the fitted model), with the
/// trials the search took on it; an error when the model refuses the flags.
pub fn predict_capacity(
    plan: &Plan,
    engine: &str,
    model: &Model,
    candidate: &Candidate,
) -> Result<TuneCapacity, String> {
    let flags = vllm_flags(candidate)?;
    let config = flags
        .apply(model.config.clone())
        .map_err(|e| e.to_string())?;
    let (sweep, _) = predict_sweep(plan, &config);
    let mut report = finish_report(plan, model, &sweep);
    interval::annotate(plan, &config, &mut report);
    let c = report
        .capacity
        .get(engine)
        .ok_or_else(|| "the predicted search stated no capacity".to_string())?;
    let target = plan.search.as_ref().map_or(0.9, |s| s.target);
    let points = report.load.get(engine).map_or(&[][..], |e| &e.points[..]);
    let interval = model_interval(points, target, c.max_load, c.interval);
    Ok(TuneCapacity {
        max_load: c.max_load,
        interval,
        limited_by: c.limited_by.as_str().to_string(),
        trials: c.trials,
    })
}

/// The predicted capacity's interval: from the largest probe below which every
/// probe's draws all meet the target, to the largest probe where any draw does
/// (the model's uncertainty), held to contain the search's own interval and the
/// estimate.
fn model_interval(
    points: &[report::Point],
    target: f64,
    max_load: Option<f64>,
    search: Option<CapacityInterval>,
) -> Option<CapacityInterval> {
    let estimate = max_load?;
    let mut sorted: Vec<&report::Point> = points.iter().collect();
    sorted.sort_by(|a, b| a.x.total_cmp(&b.x));
    let att = |p: &report::Point| {
        p.predicted_interval
            .as_ref()
            .and_then(|i| i.metrics.get("attainment").copied())
    };
    let mut low = estimate;
    let mut sure = true;
    let mut high = estimate;
    for p in &sorted {
        match att(p) {
            Some([lo, hi]) => {
                sure = sure && lo >= target;
                if sure {
                    low = low.min(p.x);
                    if p.x <= estimate {
                        low = p.x;
                    }
                }
                if hi >= target {
                    high = high.max(p.x);
                }
            }
            None => sure = false,
        }
    }
    if !sorted.iter().any(|p| att(p).is_some()) {
        return search;
    }
    if let Some(s) = search {
        low = low.min(s.low);
        high = high.max(s.high);
    }
    Some(CapacityInterval {
        estimate,
        low: low.min(estimate),
        high: high.max(estimate),
        resamples: search.map_or(0, |s| s.resamples),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::define::profile::product;

    #[test]
    fn the_model_speaks_vllm_flags_in_either_spelling() {
        assert!(speaks("--max-num-seqs") && speaks("--max_num_seqs"));
        assert!(speaks("--no-async-scheduling") && speaks("--speculative-config"));
        assert!(!speaks("--gpu-memory-utilization") && !speaks("-np"));
        let c = &product(&[
            ("--max_num_seqs".into(), vec![FlagValue::Int(8)]),
            ("--async-scheduling".into(), vec![FlagValue::Switch(true)]),
            ("--max-model-len".into(), vec![FlagValue::Text("2k".into())]),
            (
                "--enable-prefix-caching".into(),
                vec![FlagValue::Switch(false)],
            ),
        ])[0];
        let v = vllm_flags(c).unwrap();
        assert_eq!(v.max_num_seqs, Some(8));
        assert_eq!(v.async_scheduling, Some(true));
        assert_eq!(v.max_model_len, Some(2000));
        // `false` leaves the flag out: the configuration keeps its own value.
        assert_eq!(v.enable_prefix_caching, None);
        let bad = &product(&[("--max-num-seqs".into(), vec![FlagValue::Int(-1)])])[0];
        assert!(vllm_flags(bad).unwrap_err().contains("out of range"));
    }
}
