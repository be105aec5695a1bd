//! `goodput run` and `goodput search`: the profile (or none) and the flags made one
//! plan, then the run, its table and verdict, and the exit code.

use std::io::IsTerminal;
use std::path::PathBuf;

use super::{
    peer_output, print_out, resolve, CommonArgs, ModeArg, ObjectiveArg, RunArgs, SearchArgs,
};
use crate::define::options::Execution;
use crate::define::profile::{Overrides, Profile};
use crate::render::{self, Format};
use crate::sweep::run;

pub(super) async fn run_command(args: RunArgs) -> anyhow::Result<i32> {
    args.refuse_unsupported()?;
    let plan = run_plan(&args)?;
    execute(&plan, &args.common.execution(&args.output), &args.common).await
}

/// The plan `goodput run` would run with these flags (before any `--shard`).
pub(super) fn run_plan(args: &RunArgs) -> anyhow::Result<crate::define::plan::Plan> {
    let levels = args.levels.concurrency.is_some() || args.levels.rate.is_some();
    let (profile, origin) = load_profile(&args.profile, &args.common, levels)?;
    let overrides = args.common.trial.with_levels(&args.levels);
    Ok(profile.into_plan(&origin, &overrides)?)
}

fn load_profile(
    path: &Option<PathBuf>,
    flags: &CommonArgs,
    levels: bool,
) -> anyhow::Result<(Profile, String)> {
    let r = resolve::resolve(path.as_deref(), &flags.peer, levels)?;
    if !flags.quiet {
        if let Some(note) = flags.peer.url_notice() {
            eprintln!("{}", crate::redact::text(&note));
        }
    }
    if !r.filled.is_empty() && !flags.quiet {
        eprintln!(
            "{}",
            crate::term::safe(&resolve::filled_note(&r.origin, &r.filled))
        );
    }
    Ok((r.profile, r.origin))
}

pub(super) async fn search_command(args: SearchArgs) -> anyhow::Result<i32> {
    let (profile, origin) = load_profile(&args.profile, &args.common, false)?;
    let overrides = Overrides {
        search: Some(crate::define::profile::SearchSpec {
            min: args.min,
            max: args.max,
            resolution: args.resolution,
            attainment: args.attainment,
            max_probes: args.max_probes,
            max_trials_per_probe: args.max_trials_per_probe,
            growth: None,
            objective: args.objective.map(ObjectiveArg::objective),
        }),
        mode: args.mode.map(|m| match m {
            ModeArg::Concurrency => crate::define::profile::LoadMode::Concurrency,
            ModeArg::Rate => crate::define::profile::LoadMode::Rate,
        }),
        ..args.common.trial.overrides()
    };
    let plan = profile.into_plan(&origin, &overrides)?;
    execute(&plan, &args.common.execution(&args.output), &args.common).await
}

/// Runs a plan (a sweep or a search), prints the table and the verdict, and
/// returns the exit code.
async fn execute(
    plan: &crate::define::plan::Plan,
    exec: &Execution,
    flags: &CommonArgs,
) -> anyhow::Result<i32> {
    if let Some(engine_config) = &flags.predict {
        return crate::model::predict::command::execute(plan, exec, engine_config).await;
    }
    let sliced_run = flags.shard.is_some() || flags.load_shard.is_some();
    if sliced_run && plan.prompt_salt == Some(crate::define::profile::PromptSalt::Draw) {
        return Err(crate::UsageError(
            "the prompts are salted (--prompt-salt, [workload] salt = true), and the shards of \
             one run must share one salt: give it, --prompt-salt=SALT, the same on every shard \
             (goodput slurm and goodput k8s draw one for their jobs)"
                .into(),
        )
        .into());
    }
    let (output, quiet, no_html) = (exec.output.as_path(), exec.quiet, !exec.html);
    let sliced;
    let (plan, shard) = match flags.shard {
        None => (plan, None),
        Some(part) => {
            let (p, info) = crate::distribute::shard::slice(plan, part.index, part.count)?;
            sliced = p;
            (&sliced, Some(info))
        }
    };
    let load_shard = match flags.load_shard {
        None => None,
        Some(part) => {
            crate::drive::load::share::check(plan, part.index, part.count)?;
            Some(crate::define::options::LoadShare {
                index: part.index,
                count: part.count,
                barrier: flags.load_barrier.clone(),
            })
        }
    };
    // Every request in flight holds a socket: a load that cannot have its
    // descriptors is refused now, not found out as failed connections.
    crate::drive::load::fds::fit(plan).map_err(crate::UsageError)?;
    let opts = exec.run_options(shard, load_shard);
    peer_output::check_save_result(plan, exec, &flags.peer)?;
    peer_output::header(plan, flags);
    crate::drive::engine::install_cleanup_hooks();
    let (report, outcome) = run(plan, &opts).await?;
    peer_output::save_result(&report, exec, &flags.peer)?;
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    print_out(&render::show(&report, Format::Table, color))?;
    // The answer again, last, where the eye lands when the run ends.
    print_out(&format!("\n{}", render::verdict::verdict_text(&report)))?;
    if !quiet {
        let requests = crate::drive::record::records_path(output);
        eprintln!(
            "report: {} (every request: {})",
            output.display(),
            requests.display()
        );
        if !no_html {
            eprintln!("charts: {}", output.with_extension("html").display());
        }
    }
    if let crate::sweep::Outcome::Interrupted(sig) = outcome {
        eprintln!("interrupted by {sig}: the report holds what finished");
    }
    Ok(outcome.exit_code())
}
