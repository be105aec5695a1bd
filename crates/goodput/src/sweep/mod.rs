//! The sweep: for each engine, for each load level, for each trial: send the load,
//! keep every record, and rewrite the report, so that a crash loses at most the
//! trial in flight.
//!
//! Durability order after each trial: the records are appended to
//! `<report>.requests.jsonl` and fsynced, then the report is rewritten atomically
//! (temporary file, fsync, rename). On resume, trials the report lists as complete
//! are rebuilt from the records file and skipped; anything else runs again.

/// A status line on stderr (above the progress display), unless the run is quiet.
macro_rules! say {
    ($ctx:expr, $($arg:tt)*) => {
        if $ctx.run.opts.verbose { $ctx.progress.println(&format!($($arg)*)); }
    };
}

mod capacity;
mod engines;
mod http;
pub mod interleave;
mod launch;
pub mod lock;
mod output;
mod progress;
pub(crate) mod schedule;
mod state;
pub(crate) mod trial_loop;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use report::{Notice, NoticeKind, Report, RunInfo, RunStatus};
use tokio_util::sync::CancellationToken;

use crate::define::options::RunOptions;
use crate::define::plan::Plan;
use crate::drive::client::http_client_trusting;
use crate::drive::engine::{self, EngineContext};
use crate::drive::record::{records_path, RecordsFile};
use crate::stop::Stop;
pub(crate) use capacity::capacities;
pub use output::HTML_GENERATOR;
pub use state::{EngineState, PointKey, Sweep, TrialState};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every planned trial ran.
    Complete,
    /// Some trials or engines failed.
    TrialsFailed,
    /// Not a single request succeeded.
    NothingSucceeded,
    /// Stopped by a signal (its name).
    Interrupted(&'static str),
}

impl Outcome {
    /// The process exit code: 0, 3, 4, or 130 for an interrupt.
    pub fn exit_code(&self) -> i32 {
        match self {
            Outcome::Complete => 0,
            Outcome::TrialsFailed => 3,
            Outcome::NothingSucceeded => 4,
            Outcome::Interrupted(_) => 130,
        }
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// What a run reads and never changes: the plan, how to run it, the HTTP client
/// and the stop signal.
pub(crate) struct Settings<'a> {
    plan: &'a Plan,
    opts: &'a RunOptions,
    client: reqwest::Client,
    /// The run's stop: the root of its cancellation tree ([`crate::stop`]).
    stop: Stop,
    /// Every measured request as an OpenTelemetry span, when asked for.
    otel: crate::measure::otel::Otel,
}

/// What a run has found so far, written as the report after every trial: the
/// trials, their records, the run's section, and the environment seen.
pub(crate) struct Journal {
    sweep: Sweep,
    records: RecordsFile,
    info: RunInfo,
    environment: report::Environment,
    /// GPUs seen by telemetry (kept from a resumed run until an engine reports).
    gpus: Vec<report::GpuInfo>,
    /// Each engine's environment, in run order.
    engine_envs: indexmap::IndexMap<String, report::EngineEnv>,
    /// Facts of the workload learnt while running (a ShareGPT sample's counts),
    /// shown in the report's `run.workload.facts`.
    workload_facts: serde_json::Map<String, serde_json::Value>,
}

/// A run in progress: its settings (read-only), its journal (the results), and
/// the terminal display.
pub(crate) struct Ctx<'a> {
    run: Settings<'a>,
    journal: Journal,
    progress: progress::Progress,
    /// `engine 2/3 NAME`, for the progress display.
    engine_label: String,
}

impl Ctx<'_> {
    fn report(&self) -> Report {
        let mut r = self.journal.sweep.report(self.run.plan);
        let mut info = self.journal.info.clone();
        let facts = info
            .workload
            .get_mut("facts")
            .and_then(|f| f.as_object_mut());
        if let Some(f) = facts {
            f.extend(self.journal.workload_facts.clone());
        }
        info.updated_unix_s = Some(unix_now());
        info.otel = self.run.otel.summary();
        r.run = Some(info);
        r.environment = Some(self.journal.environment.clone());
        r.capacity = capacity::capacities(self.run.plan, &self.journal.sweep, &r);
        r
    }

    fn save(&self) -> anyhow::Result<Report> {
        let r = self.report();
        // Requests may have used every descriptor: the reserve writes it then.
        crate::drive::load::fds::with_reserve(
            || crate::redact::write_report(&self.run.opts.output, &r),
            |e| match e {
                report::ReportError::Io { error, .. } => crate::drive::client::out_of_files(error),
                _ => false,
            },
        )?;
        Ok(r)
    }

    fn stopped(&self) -> bool {
        self.run.stop.is_set()
    }

    fn stop(&self) -> Stop {
        self.run.stop.clone()
    }

    /// Rebuilds the environment from the GPUs and engines known so far.
    fn refresh_environment(&mut self) {
        self.journal.environment = crate::measure::environment::capture(
            self.journal.gpus.clone(),
            self.journal.engine_envs.clone(),
        );
    }

    /// Records how prompt lengths were set on engine `name`.
    fn set_prompt_lengths(&mut self, name: &str, how: &str) {
        if let Some(e) = self.journal.engine_envs.get_mut(name) {
            e.prompt_lengths = Some(how.to_string());
        }
        self.refresh_environment();
    }

    /// Adds a notice unless one of its kind about its engine is there already.
    fn notice_once(&mut self, n: Notice) {
        self.journal.info.notice_once(n);
    }
}

/// Runs the plan; the report is written to `opts.output` after every trial.
/// Errors are returned only for what stops the whole run (the output cannot be
/// written, or holds data that must not be overwritten); engine and request
/// failures are recorded in the report.
pub async fn run(plan: &Plan, opts: &RunOptions) -> anyhow::Result<(Report, Outcome)> {
    let root = CancellationToken::new();
    // A bad CA file is refused before the output is touched.
    let roots = ca_roots(plan, opts)?;
    let _one_run = lock::OutputLock::acquire(&opts.output)?;
    let mut ctx = open(plan, opts, roots, Stop::new(root.clone())).await?;
    // After the output is known to be ours: a signal from here on stops the run.
    let signal = stop_on_signal(root);
    let engine_ctx = engine_context(opts, &ctx.run.client);
    engines::run_engines(&mut ctx, &engine_ctx).await?;
    ctx.progress.finish();
    let otel_notices = ctx.run.otel.close().await;
    ctx.journal.info.notices.extend(otel_notices);
    let interrupted = if ctx.stopped() {
        signal.await.ok()
    } else {
        signal.abort();
        None
    };
    finish(&mut ctx, interrupted)
}

/// Cancels the run's root token on the first SIGINT or SIGTERM; the task ends
/// with its name.
fn stop_on_signal(root: CancellationToken) -> tokio::task::JoinHandle<&'static str> {
    tokio::spawn(async move {
        let name = engine::shutdown_signal().await;
        root.cancel();
        name
    })
}

/// Where launched engines log (`REPORT.logs/` beside the report, never the current
/// folder) and what they are started with.
fn engine_context(opts: &RunOptions, client: &reqwest::Client) -> EngineContext {
    EngineContext {
        log_dir: logs_dir(&opts.output),
        goodput_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("goodput")),
        client: client.clone(),
    }
}

/// The folder of a report's engine logs: `r.json` -> `r.logs/`, beside it.
pub fn logs_dir(report: &Path) -> PathBuf {
    let name = report
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "goodput-report.json".into());
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    report.with_file_name(format!("{stem}.logs"))
}

/// Checks the output, restores a resumable run, opens the records file, and
/// writes the first report (which proves the output writable before any load).
async fn open<'a>(
    plan: &'a Plan,
    opts: &'a RunOptions,
    roots: Vec<reqwest::Certificate>,
    stop: Stop,
) -> anyhow::Result<Ctx<'a>> {
    let output = &opts.output;
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
    }
    let rec_path = records_path(output);
    let (sweep, kept) = output::prepare(plan, opts, &rec_path)?;
    let resumed = !sweep.engines.is_empty();
    // Engines of a resumed run that need not start again keep their environment,
    // and its prompts their salt.
    let old = if resumed {
        report::read_report(output).ok()
    } else {
        None
    };
    let old_salt = old
        .as_ref()
        .and_then(|r| r.run.as_ref()?.prompt_salt.clone());
    let prompt_salt = crate::define::requests::salt::resolve(plan.prompt_salt.as_ref(), old_salt)
        .map_err(crate::UsageError)?;
    let previous = old.and_then(|r| r.environment);
    let records = reopen_records(&rec_path, &kept)?;
    let client =
        http_client_trusting(max_streams(plan), roots).context("cannot build the HTTP client")?;
    let gpus = previous
        .as_ref()
        .map(|e| e.gpus.clone())
        .unwrap_or_default();
    let engine_envs = previous
        .map(|e| {
            e.engines
                .into_iter()
                .filter(|(n, _)| plan.engines.contains_key(n))
                .collect()
        })
        .unwrap_or_default();
    let progress = progress::Progress::new(opts.progress, trials_left(plan, &sweep));
    let (otel, otel_notice) = crate::measure::otel::Otel::from_env();
    let mut ctx = Ctx {
        run: Settings {
            plan,
            opts,
            client,
            stop,
            otel,
        },
        journal: Journal {
            sweep,
            records,
            info: RunInfo {
                prompt_salt,
                ..run_info(plan, opts, &rec_path)
            },
            environment: Default::default(),
            gpus,
            engine_envs,
            workload_facts: Default::default(),
        },
        progress,
        engine_label: String::new(),
    };
    ctx.journal.info.notices.extend(otel_notice);
    ctx.refresh_environment();
    ctx.save().context("cannot write the report")?;
    if resumed {
        let kept = ctx.journal.sweep.complete_trials() as u64;
        let left = trials_left(plan, &ctx.journal.sweep);
        say!(
            ctx,
            "resuming {}: {} kept, {} to run{}",
            output.display(),
            crate::render::text::count(kept, "complete trial"),
            left,
            if plan.search.is_some() {
                " at most"
            } else {
                ""
            }
        );
    }
    Ok(ctx)
}

/// Rewrites the records file with the kept records only (atomically), then opens
/// it for appending.
fn reopen_records(
    rec_path: &Path,
    kept: &[crate::drive::record::RequestRecord],
) -> anyhow::Result<RecordsFile> {
    let text = crate::redact::jsonl(kept)?;
    // The error names the path itself.
    crate::redact::write_file(rec_path, &text).context("cannot write the requests file")?;
    RecordsFile::open(rec_path).with_context(|| format!("cannot open {}", rec_path.display()))
}

/// The CA certificates the client trusts beside the built-in roots: `--ca-cert`,
/// each engine's `ca_cert`, `SSL_CERT_FILE` and `SSL_CERT_DIR` (a bad file is a
/// usage error naming it).
fn ca_roots(
    plan: &Plan,
    opts: &RunOptions,
) -> Result<Vec<reqwest::Certificate>, crate::UsageError> {
    use crate::drive::client::tls::{roots, CaFile};
    let flags = opts.ca_certs.iter().map(|p| CaFile {
        named_by: "--ca-cert".into(),
        path: p.clone(),
    });
    let engines = plan.engines.iter().filter_map(|(name, e)| {
        e.ca_cert.as_ref().map(|p| CaFile {
            named_by: format!("engines.{name}.ca_cert"),
            path: p.clone(),
        })
    });
    let files: Vec<CaFile> = flags.chain(engines).collect();
    roots(&files, |v| std::env::var_os(v))
}

/// Connections the HTTP client keeps: the most requests the plan has in flight.
fn max_streams(plan: &Plan) -> usize {
    let highest = plan
        .points
        .iter()
        .chain(plan.search.as_ref().map(|s| &s.max))
        .fold(1.0f64, |a, &b| a.max(b))
        .min(100_000.0) as usize;
    plan.max_concurrency.map_or(highest, |c| c as usize)
}

/// What the report's `run` section says of the plan (a measured run and a
/// predicted one alike); the rest at its default.
pub(crate) fn plan_info(plan: &Plan) -> RunInfo {
    RunInfo {
        schema: report::SCHEMA.into(),
        load_mode: plan.mode.into(),
        planned_trials: plan.trials,
        requests_per_trial: plan.requests_per_trial,
        warmup_requests: plan.warmup_requests,
        seed: Some(plan.seed),
        workload: plan.workload_description.clone(),
        fingerprints: plan.fingerprints(),
        profile: plan.profile_toml.clone(),
        notices: time_scale_notices(plan),
        ..Default::default()
    }
}

/// A notice per simulator engine run faster than real time (`--time-scale N`): its
/// milliseconds, and the SLO's, are wall-clock, N times shorter than the modelled
/// GPU's.
fn time_scale_notices(plan: &Plan) -> Vec<Notice> {
    plan.engines
        .iter()
        .filter(|(_, e)| e.effective_kind() == crate::define::profile::EngineKind::Sim)
        .filter_map(|(name, e)| {
            let at = e.args.iter().position(|a| a == "--time-scale")?;
            let scale: f64 = e.args.get(at + 1)?.parse().ok()?;
            (scale.is_finite() && scale > 0.0 && scale != 1.0).then(|| {
                Notice::engine(NoticeKind::TimeScale, name, format!(
                    "{name}: the simulator ran at --time-scale {scale}: every millisecond here, the SLO's included, is wall-clock; on the modelled GPU each is {scale} times longer"
                ))
            })
        })
        .collect()
}

/// The report's `run` section as the run starts: with several engines, whether
/// they interleave, and a notice when they do not.
fn run_info(plan: &Plan, opts: &RunOptions, rec_path: &Path) -> RunInfo {
    let mut info = RunInfo {
        status: RunStatus::Running,
        requests_file: rec_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned()),
        started_unix_s: Some(unix_now()),
        shard: opts.shard.clone(),
        load_shard: opts.load_shard.as_ref().map(|l| report::LoadShardInfo {
            index: l.index,
            count: l.count,
        }),
        interleaved: (plan.engines.len() > 1).then(|| plan.interleaves()),
        ..plan_info(plan)
    };
    info.notices.extend(sequential_notice(plan));
    info
}

/// Several engines run one after the other: drift over the run is confounded
/// with the engine; the notice says why they did not interleave and how to.
fn sequential_notice(plan: &Plan) -> Option<Notice> {
    if plan.engines.len() < 2 || plan.interleaves() {
        return None;
    }
    let why = match plan.interleave {
        Some(false) => "`[load] interleave = false` or `--no-interleave`".to_string(),
        _ => {
            let launched: Vec<&str> = plan
                .engines
                .iter()
                .filter(|(_, e)| !crate::define::plan::coexists(e))
                .map(|(n, _)| n.as_str())
                .collect();
            format!(
                "{} launched by goodput, each assumed to need the GPU alone",
                launched.join(", ")
            )
        }
    };
    Some(Notice::new(
        NoticeKind::Sequential,
        format!(
            "the engines ran one after the other ({why}), so drift over the run (a warming \
             GPU, other work on the machine) is confounded with the engine: a difference \
             between them in this report may be partly when each ran; `[load] interleave = \
             true` (or `--interleave`) runs their trials in interleaved rounds when they can \
             be up at once, else compare separate runs with the engines in either order"
        ),
    ))
}

/// Trials still to run, for the progress estimate (adaptive trials count their
/// minimum; the display grows past it). A search does not know its trials ahead:
/// about a bracket and a bisection.
fn trials_left(plan: &Plan, sweep: &Sweep) -> u64 {
    if let Some(s) = &plan.search {
        return (plan.engines.len() as u64) * u64::from(s.base_trials) * 8;
    }
    plan.engines
        .keys()
        .flat_map(|name| plan.points.iter().map(move |&x| (name, x)))
        .map(|(name, x)| {
            (0..plan.trials)
                .filter(|&t| !sweep.is_complete(name, PointKey::new(plan.mode, x), t))
                .count() as u64
        })
        .sum()
}

/// Ends the run: engines the run never reached are listed as not run, the outcome
/// and status are set, and the last report (and its HTML page) written.
fn finish(
    ctx: &mut Ctx<'_>,
    interrupted: Option<&'static str>,
) -> anyhow::Result<(Report, Outcome)> {
    let plan = ctx.run.plan;
    if let Some(sig) = interrupted {
        for name in plan.engines.keys() {
            if !ctx.journal.sweep.engines.contains_key(name) {
                ctx.journal.sweep.engine(name).error = Some(report::EngineFailure {
                    kind: report::FailureKind::NotRun,
                    message: format!(
                        "not run: the run was interrupted by {sig} before this engine started"
                    ),
                    ..Default::default()
                });
            }
        }
    }
    let outcome = outcome(plan, &ctx.report(), interrupted);
    ctx.journal.info.status = if outcome == Outcome::Complete {
        RunStatus::Complete
    } else {
        RunStatus::Partial
    };
    ctx.journal.info.reason = match &outcome {
        Outcome::Complete => None,
        Outcome::TrialsFailed => Some("some trials or engines failed; see the warnings".into()),
        Outcome::NothingSucceeded => Some("no request succeeded".into()),
        Outcome::Interrupted(sig) => Some(format!("{} by {sig}", report::INTERRUPTED)),
    };
    let report = ctx.save()?;
    if ctx.run.opts.html {
        let html_path = ctx.run.opts.output.with_extension("html");
        crate::redact::write_html(&html_path, &report)?;
    }
    Ok((report, outcome))
}

/// How the run ended, from its report.
fn outcome(plan: &Plan, report: &Report, interrupted: Option<&'static str>) -> Outcome {
    if let Some(sig) = interrupted {
        return Outcome::Interrupted(sig);
    }
    let mut outcome = Outcome::Complete;
    let mut any_ok = false;
    for (name, e) in &report.load {
        if e.error.is_some() {
            outcome = Outcome::TrialsFailed;
        }
        for p in &e.points {
            any_ok |= p.completed.iter().any(|&c| c > 0);
            if p.status != Some(RunStatus::Complete) {
                outcome = Outcome::TrialsFailed;
            }
        }
        if plan.engines.contains_key(name) && e.points.len() < plan.points.len() {
            outcome = Outcome::TrialsFailed;
        }
    }
    if report.load.len() < plan.engines.len() {
        outcome = Outcome::TrialsFailed;
    }
    if !any_ok {
        outcome = Outcome::NothingSucceeded;
    }
    outcome
}
