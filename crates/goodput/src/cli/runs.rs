//! `goodput run` and `goodput search`: the profile (or none) and the flags made one
//! plan, then the run, its table and verdict, and the exit code.

use std::io::IsTerminal;
use std::path::PathBuf;

use super::{peer_output, print_out, resolve, CommonArgs, ModeArg, RunArgs, SearchArgs, TrialArgs};
use crate::profile::{parse_points, parse_slo, Overrides, Profile};
use crate::render::{self, Format};
use crate::run::{run, RunOptions};

pub(super) async fn run_command(args: RunArgs) -> anyhow::Result<i32> {
    let plan = run_plan(&args)?;
    execute(&plan, &args.output, &args.common).await
}

/// The plan `goodput run` would run with these flags (before any `--shard`).
pub(crate) fn run_plan(args: &RunArgs) -> anyhow::Result<crate::plan::Plan> {
    let levels = args.levels.concurrency.is_some() || args.levels.rate.is_some();
    let (profile, origin) = load_profile(&args.profile, &args.common, levels)?;
    let usage = |e: String| anyhow::Error::from(crate::UsageError(e));
    let overrides = Overrides {
        concurrency: args
            .levels
            .concurrency
            .as_deref()
            .map(parse_points)
            .transpose()
            .map_err(|e| usage(format!("--concurrency: {e}")))?,
        rate: args
            .levels
            .rate
            .as_deref()
            .map(parse_points)
            .transpose()
            .map_err(|e| usage(format!("--rate: {e}")))?,
        search: None,
        mode: None,
        ..args.common.overrides()?
    };
    Ok(profile.into_plan(&origin, &overrides)?)
}

impl CommonArgs {
    /// The profile overrides these flags give (the rest left unset).
    fn overrides(&self) -> anyhow::Result<Overrides> {
        self.trial.overrides()
    }
}

impl TrialArgs {
    /// The profile overrides these flags give (the rest left unset).
    fn overrides(&self) -> anyhow::Result<Overrides> {
        let usage = |e: String| anyhow::Error::from(crate::UsageError(e));
        Ok(Overrides {
            trials: self.trials,
            requests: self.requests,
            slo: self
                .slo
                .as_deref()
                .map(parse_slo)
                .transpose()
                .map_err(|e| usage(format!("--slo: {e}")))?,
            engines: self.engines.clone(),
            seed: self.seed,
            usd_per_hour: self
                .usd_per_hour
                .iter()
                .map(|p| crate::plan::price::parse_usd_per_hour(p))
                .collect::<Result<_, _>>()
                .map_err(|e| usage(format!("--usd-per-hour: {e}")))?,
            ..Default::default()
        })
    }
}

fn load_profile(
    path: &Option<PathBuf>,
    flags: &CommonArgs,
    levels: bool,
) -> anyhow::Result<(Profile, String)> {
    let r = resolve::resolve(path.as_deref(), &flags.peer, levels)?;
    if !r.filled.is_empty() && !flags.quiet {
        eprintln!("{}", resolve::filled_note(&r.origin, &r.filled));
    }
    Ok((r.profile, r.origin))
}

pub(super) async fn search_command(args: SearchArgs) -> anyhow::Result<i32> {
    let (profile, origin) = load_profile(&args.profile, &args.common, false)?;
    let overrides = Overrides {
        search: Some(crate::profile::SearchSpec {
            min: args.min,
            max: args.max,
            resolution: args.resolution,
            attainment: args.attainment,
            max_probes: args.max_probes,
            max_trials_per_probe: args.max_trials_per_probe,
            growth: None,
            objective: args.objective,
        }),
        mode: args.mode.map(|m| match m {
            ModeArg::Concurrency => crate::profile::LoadMode::Concurrency,
            ModeArg::Rate => crate::profile::LoadMode::Rate,
        }),
        ..args.common.overrides()?
    };
    let plan = profile.into_plan(&origin, &overrides)?;
    execute(&plan, &args.output, &args.common).await
}

/// Runs a plan (a sweep or a search), prints the table and the verdict, and
/// returns the exit code.
async fn execute(
    plan: &crate::plan::Plan,
    output: &std::path::Path,
    flags: &CommonArgs,
) -> anyhow::Result<i32> {
    if let Some(engine_config) = &flags.predict {
        return crate::predict::command::execute(plan, output, flags, engine_config).await;
    }
    let (quiet, no_html) = (flags.quiet, flags.no_html);
    let sliced;
    let (plan, shard) = match &flags.shard {
        None => (plan, None),
        Some(s) => {
            let (i, n) = crate::shard::parse_shard(s)?;
            let (p, info) = crate::shard::slice(plan, i, n)?;
            sliced = p;
            (&sliced, Some(info))
        }
    };
    let load_shard = match &flags.load_shard {
        None => None,
        Some(s) => {
            let (index, count) = crate::shard::parse_shard(s)
                .map_err(|e| crate::UsageError(e.0.replacen("--shard", "--load-shard", 1)))?;
            crate::shard::load::check(plan, index, count)?;
            Some(crate::shard::load::LoadShare {
                index,
                count,
                barrier: flags.load_barrier.clone(),
            })
        }
    };
    let opts = RunOptions {
        load_shard,
        output: output.to_path_buf(),
        fresh: flags.fresh,
        force: flags.force,
        progress: !quiet && std::io::stderr().is_terminal(),
        verbose: !quiet,
        html: !no_html,
        grace: std::time::Duration::from_secs(5),
        shard,
        ttft_includes_connect: flags.ttft_includes_connect,
    };
    peer_output::header(plan, flags);
    crate::engine::install_cleanup_hooks();
    let (report, outcome) = run(plan, &opts).await?;
    peer_output::save_result(&report, output, &flags.peer)?;
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    print_out(&render::show(&report, Format::Table, color))?;
    // The answer again, last, where the eye lands when the run ends.
    print_out(&format!("\n{}", render::verdict::verdict_text(&report)))?;
    if !quiet {
        let requests = crate::record::records_path(output);
        eprintln!(
            "report: {} (every request: {})",
            output.display(),
            requests.display()
        );
        if !no_html {
            eprintln!("charts: {}", output.with_extension("html").display());
        }
    }
    if let crate::run::Outcome::Interrupted(sig) = outcome {
        eprintln!("interrupted by {sig}: the report holds what finished");
    }
    Ok(outcome.exit_code())
}
