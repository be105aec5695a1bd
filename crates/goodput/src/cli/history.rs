//! The results store at the door: the flags that choose it (`--store`,
//! `GOODPUT_STORE`, `--no-store`, `--tag`), the one call each of run, search,
//! merge and tune makes after writing its file, `goodput history`, and `goodput
//! gate` (its baseline a file, or `--baseline last|TAG` from the store).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::print_out;
use crate::store::query::{parse_date, verified_report, Candidate};
use crate::store::{self, Baseline, Filter, Identity, Kind, Location, Metric};

/// Where a command records its run.
#[derive(Debug, Args, Clone, Default)]
pub struct RecordArgs {
    /// The results store to record the run in (default: `store.sqlite` in
    /// goodput's folder of the user's data directory, ~/.local/share/goodput).
    #[arg(long, value_name = "PATH", env = "GOODPUT_STORE")]
    pub store: Option<PathBuf>,
    /// Do not record the run in the results store (over --store and
    /// GOODPUT_STORE, so a job that sets the variable can still skip it).
    #[arg(long)]
    pub no_store: bool,
    /// A tag for the run in the store (repeatable), e.g. `--tag nightly --tag v0.8`;
    /// `history --tag` and `gate --baseline TAG` find it by it.
    #[arg(long = "tag", value_name = "TAG", value_parser = parse_tag)]
    pub tags: Vec<String>,
}

/// `--store` of the commands that read the store.
#[derive(Debug, Args, Clone, Default)]
pub struct StoreArg {
    /// The results store (default: `store.sqlite` in goodput's folder of the user's
    /// data directory).
    #[arg(long, value_name = "PATH", env = "GOODPUT_STORE")]
    pub store: Option<PathBuf>,
}

/// A `--tag`: a word of up to 100 printable characters, not `last` (what `gate
/// --baseline` calls the latest run).
pub(super) fn parse_tag(s: &str) -> Result<String, String> {
    if s.is_empty() || s.chars().count() > 100 || s.chars().any(|c| c.is_control()) {
        return Err(format!("{s:?}: a tag is 1 to 100 printable characters"));
    }
    if s == "last" {
        return Err("last: gate --baseline last means the latest run; choose another tag".into());
    }
    Ok(s.to_string())
}

/// What a command will record once its file is written.
pub(super) struct Recording {
    identity: Identity,
    file: PathBuf,
    location: Location,
    /// No "recorded" line.
    pub quiet: bool,
}

impl Recording {
    pub(super) fn new(
        kind: Kind,
        file: &Path,
        args: &RecordArgs,
        profile: Option<PathBuf>,
    ) -> Self {
        Recording {
            identity: Identity {
                kind,
                tags: args.tags.clone(),
                profile_path: profile,
            },
            file: file.to_path_buf(),
            location: Location::resolve(args.store.clone(), args.no_store),
            quiet: false,
        }
    }

    /// For `run` and `search`: quiet with `--quiet`; a shard's report is not
    /// recorded (the merge of its sweep is).
    pub(super) fn of_sweep(mut self, common: &super::CommonArgs) -> Self {
        self.quiet = common.quiet;
        if common.shard.is_some() || common.load_shard.is_some() {
            self.location = Location::Off;
        }
        self
    }

    /// Records the file; a store that cannot take it is a notice, never the
    /// command's failure.
    pub(super) fn record(&self) {
        if self.location == Location::Off || !self.file.is_file() {
            return;
        }
        match store::record::record_file(&self.location, &self.file, &self.identity) {
            Ok(Some(id)) if !self.quiet => {
                if let Location::At(p) = &self.location {
                    eprintln!("store: run #{id} recorded in {}", p.display());
                }
            }
            Ok(_) => {}
            Err(e) => eprintln!(
                "notice: {}; the run is not recorded (its report stands; --no-store skips the store)",
                crate::term::safe(&e.to_string())
            ),
        }
    }
}

/// The store a reading command names, which must exist.
fn existing(arg: &StoreArg) -> anyhow::Result<store::Store> {
    let path = match Location::resolve(arg.store.clone(), false) {
        Location::At(p) => p,
        _ => return Err(crate::UsageError(store::StoreError::NoDataDir.to_string()).into()),
    };
    if !path.exists() {
        return Err(crate::UsageError(format!(
            "results store {}: no such file (runs are recorded there when they finish; --store PATH or GOODPUT_STORE names another)",
            path.display()
        ))
        .into());
    }
    store::Store::open(&path).map_err(|e| crate::UsageError(e.to_string()).into())
}

/// `--metric NAME`: the store's metrics ([`Metric::ALL`]) by their names, each
/// described in `--help`; the store's one list, not a copy.
impl clap::ValueEnum for Metric {
    fn value_variants<'a>() -> &'a [Self] {
        &Metric::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.describe()))
    }
}

/// `goodput history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The store to read.
    #[command(flatten)]
    pub store: StoreArg,
    /// Runs with this engine.
    #[arg(long)]
    pub engine: Option<String>,
    /// Runs of this profile (its `name`).
    #[arg(long)]
    pub profile: Option<String>,
    /// Runs with this tag.
    #[arg(long)]
    pub tag: Option<String>,
    /// Runs recorded on or after DATE (`YYYY-MM-DD` or `YYYY-MM-DDTHH:MM`, UTC).
    #[arg(long, value_name = "DATE", value_parser = |s: &str| parse_date(s, false))]
    pub since: Option<f64>,
    /// Runs recorded on or before DATE (a whole day when no time is given).
    #[arg(long, value_name = "DATE", value_parser = |s: &str| parse_date(s, true))]
    pub until: Option<f64>,
    /// Show this metric of --engine over the runs (a trend) instead of the list.
    #[arg(long, value_enum, requires = "engine")]
    pub metric: Option<Metric>,
    /// Also write the trend as an HTML page with its chart.
    #[arg(long, value_name = "FILE", requires = "metric")]
    pub html: Option<PathBuf>,
}

pub(super) fn history_command(args: HistoryArgs) -> anyhow::Result<i32> {
    let store = existing(&args.store)?;
    let filter = Filter {
        engine: args.engine.clone(),
        profile: args.profile,
        tag: args.tag,
        since: args.since,
        until: args.until,
    };
    if let (Some(m), Some(engine)) = (args.metric, &args.engine) {
        let runs = store.trend(&filter, engine, m)?;
        let view = store::trend::view(&runs, engine, m);
        if let Some(path) = &args.html {
            crate::redact::write_file(path, &crate::render::trend::trend_html(&view))?;
            eprintln!("wrote {}", path.display());
        }
        if runs.is_empty() {
            eprintln!("no recorded run of {engine} has {} figures", m.name());
        }
        return print_out(&crate::render::trend::trend_text(&view));
    }
    let runs = store.runs(&filter)?;
    let rows = runs
        .iter()
        .map(|r| {
            vec![
                format!("#{}", r.id),
                crate::render::dates::utc_minute(r.recorded_unix_s.max(0.0) as u64),
                r.kind.as_str().to_string(),
                r.profile.clone(),
                r.engines.join(", "),
                store::trend::label(r),
                r.status.clone().unwrap_or_else(|| "-".into())
                    + if r.predicted { " (predicted)" } else { "" },
                r.report_path.display().to_string(),
            ]
        })
        .collect();
    let columns = [
        "run",
        "recorded",
        "command",
        "profile",
        "engines",
        "tags/commit",
        "status",
        "report",
    ];
    print_out(&crate::render::text::plain_table(&columns, rows))?;
    if runs.is_empty() {
        eprintln!("no recorded run matches in {}", store.path().display());
    }
    Ok(0)
}

/// `goodput gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The baseline report and the candidate report; with --baseline, the
    /// candidate alone.
    #[arg(required = true, num_args = 1..=2, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Take the baseline from the results store: `last` (the latest complete run
    /// of the candidate's profile and engines, not the candidate) or a TAG (the
    /// latest run tagged so); its report is read at its recorded path and must
    /// still have the hash recorded with it.
    #[arg(long, value_name = "last|TAG")]
    pub baseline: Option<String>,
    /// The store --baseline reads.
    #[command(flatten)]
    pub store: StoreArg,
    /// Gate only these metrics (a key such as `median_tpot_ms` or
    /// `goodput_rps`, or a name as compare prints it); repeatable. Default:
    /// every row.
    #[arg(long = "metric", value_name = "METRIC")]
    pub metrics: Vec<String>,
    /// The smallest relative change called worse (0.02: 2%).
    #[arg(long, default_value_t = 0.02, value_parser = super::parse_min_effect)]
    pub min_effect: f64,
    /// Also write the Markdown summary here (it is appended to
    /// `$GITHUB_STEP_SUMMARY` when that is set).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// The baseline and candidate files of a gate.
fn gate_files(args: &GateArgs) -> anyhow::Result<(PathBuf, PathBuf)> {
    let usage = |m: &str| anyhow::Error::from(crate::UsageError(m.to_string()));
    match (&args.baseline, args.reports.as_slice()) {
        (None, [b, c]) => Ok((b.clone(), c.clone())),
        (None, _) => Err(usage("goodput gate: give the baseline and the candidate reports, or --baseline last|TAG and the candidate")),
        (Some(_), [_, _]) => Err(usage("goodput gate: with --baseline, give only the candidate report")),
        (Some(which), [candidate]) => {
            let store = existing(&args.store)?;
            let (text, sha256) = store::record::read_hashed(candidate).map_err(crate::UsageError)?;
            let r = report::io::parse_report(&text).map_err(|e| {
                crate::UsageError(format!("{}: not a report: {e}", candidate.display()))
            })?;
            let c = Candidate {
                profile: r.profile.clone(),
                engines: r.load.keys().cloned().collect(),
                predicted: r.run.as_ref().is_some_and(|x| x.predicted.is_some()),
                path: std::path::absolute(candidate).unwrap_or_else(|_| candidate.clone()),
                sha256,
            };
            let run = store
                .baseline(&Baseline::parse(which), &c)
                .map_err(|e| crate::UsageError(e.to_string()))?;
            let path = verified_report(&run).map_err(|e| crate::UsageError(e.to_string()))?;
            eprintln!(
                "baseline: run #{} ({} {}, {}) {}",
                run.id,
                run.kind.as_str(),
                crate::render::dates::utc_minute(run.recorded_unix_s.max(0.0) as u64),
                store::trend::label(&run),
                path.display()
            );
            Ok((path.to_path_buf(), candidate.clone()))
        }
        (Some(_), _) => Err(usage("goodput gate: with --baseline, give the candidate report")),
    }
}

/// `goodput gate`: compare's judgement as an exit status, with its summary.
pub(super) fn gate_command(args: GateArgs) -> anyhow::Result<i32> {
    use crate::judge::compare::gate;
    let mut names = Vec::new();
    for m in &args.metrics {
        match gate::metric(m) {
            Some(n) => names.push(n),
            None => {
                eprintln!(
                    "error: --metric {}: no such metric; one of: {}",
                    crate::term::safe(m),
                    gate::metric_names().join(", ")
                );
                return Ok(2);
            }
        }
    }
    let (baseline, candidate) = gate_files(&args)?;
    let pair = [
        crate::judge::compare::read(&baseline)?,
        crate::judge::compare::read(&candidate)?,
    ];
    let opts = crate::judge::compare::Options {
        min_effect: args.min_effect,
        ..Default::default()
    };
    let g = gate::gate(&pair, &names, &opts);
    if let Some(path) = &args.markdown {
        crate::redact::write_file(path, &g.markdown)?;
    }
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
        // Appended, as GitHub Actions expects; a summary that cannot be written is
        // said, and the gate's answer stands.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&summary)
            .and_then(|mut f| f.write_all(crate::redact::text(&g.markdown).as_bytes()));
        if let Err(e) = appended {
            eprintln!(
                "notice: GITHUB_STEP_SUMMARY ({}): not written: {e}",
                PathBuf::from(summary).display()
            );
        }
    }
    print_out(&format!("{}\n", g.line))?;
    Ok(g.outcome.code())
}
