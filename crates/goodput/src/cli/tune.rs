//! `goodput tune PROFILE -o tune.json`: the profile's `[tune]` space made a plan (its
//! capacity search, the tuned engine only), the tune run, the table and verdict;
//! and `goodput show tune.json`.

use std::path::{Path, PathBuf};

use clap::Args;

use super::print_out;
use crate::define::profile::{Overrides, Profile, SearchSpec};
use crate::model::tune::{tune, TuneOptions};

/// `goodput tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// Profile TOML with a `[tune]` table (the engine and its flags' values).
    pub profile: PathBuf,
    /// The answer; each candidate's search report goes in `<stem>.candidates/`.
    #[arg(long, short, default_value = "tune.json")]
    pub output: PathBuf,
    /// Most candidates measured on the real engine (default: `[tune]
    /// max_candidates_measured`, else 6).
    #[arg(long, value_name = "N")]
    pub max_candidates_measured: Option<u32>,
    /// Most real trials over every search (default: `[tune] max_trials`, else no
    /// limit); a search is started only while fewer have run.
    #[arg(long, value_name = "N")]
    pub max_trials: Option<u32>,
    /// Most minutes of measuring (default: `[tune] max_minutes`, else no limit);
    /// a search is started only before they are up.
    #[arg(long, value_name = "MINUTES")]
    pub max_minutes: Option<f64>,
    /// Start over: remove an earlier tune's candidate reports instead of reusing
    /// the finished searches and resuming the unfinished one (the default).
    #[arg(long, alias = "force")]
    pub fresh: bool,
    /// No status lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Count the connection's set-up in TTFT.
    #[arg(long)]
    pub ttft_includes_connect: bool,
    /// Where the answer is recorded.
    #[command(flatten)]
    pub record: super::RecordArgs,
}

pub(super) async fn tune_command(args: TuneArgs) -> anyhow::Result<i32> {
    let origin = args.profile.display().to_string();
    let profile = Profile::load(&args.profile)?;
    let Some(spec) = profile.tune.clone() else {
        return Err(crate::UsageError(format!(
            "{origin}: no [tune] table: name the engine and its flags' values (docs/tune.md)"
        ))
        .into());
    };
    let mut spec = spec;
    if let Some(n) = args.max_candidates_measured {
        spec.max_candidates_measured = Some(n);
    }
    if let Some(n) = args.max_trials {
        spec.max_trials = Some(n);
    }
    if let Some(m) = args.max_minutes {
        spec.max_minutes = Some(m);
    }
    let space = spec.space(&profile.engines, profile.source.as_deref(), &origin)?;
    let overrides = Overrides {
        search: Some(SearchSpec::default()),
        engines: vec![space.engine.clone()],
        ..Default::default()
    };
    let plan = profile.into_plan(&origin, &overrides)?;
    crate::drive::load::fds::fit(&plan).map_err(crate::UsageError)?;
    crate::drive::engine::install_cleanup_hooks();
    let opts = TuneOptions {
        output: args.output.clone(),
        fresh: args.fresh,
        verbose: !args.quiet,
        ttft_includes_connect: args.ttft_includes_connect,
    };
    let answer = tune(&plan, &space, &opts).await?;
    print_out(&crate::render::tune::tune_text(&answer))?;
    if !args.quiet {
        eprintln!(
            "tune: {} (searches: {})",
            args.output.display(),
            crate::model::tune::reports_dir(&args.output).display()
        );
    }
    Ok(if answer.best.is_some() { 0 } else { 4 })
}

/// `goodput show FILE` when FILE is a tune answer: its table and verdict.
pub(super) fn show_tune(path: &Path) -> Option<anyhow::Result<i32>> {
    let text = crate::files::read_text(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("tune")?.as_u64()?;
    value.get("candidates")?;
    Some(
        serde_json::from_value::<report::Tune>(value)
            .map_err(|e| {
                anyhow::anyhow!("{}: not a tune answer goodput reads: {e}", path.display())
            })
            .and_then(|t| print_out(&crate::render::tune::tune_text(&t))),
    )
}
