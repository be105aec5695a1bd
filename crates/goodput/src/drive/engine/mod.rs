//! Engines: launch (or reach) one, wait until it is ready, learn its KV pool, model
//! and version, and stop it, leaving nothing running.
//!
//! # Layout
//! - [`command`]: the command line of each kind, ports, redaction of secrets.
//! - [`process`]: the engine process group, its log, and the cleanup that kills it
//!   on every exit path (stop, error, drop, panic, `exit`, SIGINT/SIGTERM).
//! - [`guard`]: the leader of a vLLM or SGLang group, which kills the whole group
//!   when goodput is SIGKILLed.
//! - [`probe`]: HTTP questions: readiness, served models (with their context
//!   size, where listed), version.
//! - [`logs`]: each launch's part of the engine log, and the cause of a failure in it.
//! - [`kvpool`]: KV-pool capacity from logs, `/metrics`, `/get_server_info`, `/props`.
//! - [`prom`]: a reader of Prometheus text (`/metrics`).
//! - [`specdec`]: speculative-decoding counters from `/metrics`.
//! - `start`: the launch and the wait until the engine is ready ([`start()`],
//!   [`start_until`]).
//!
//! # Use
//! ```no_run
//! # async fn demo(spec: goodput::define::profile::EngineSpec, ctx: goodput::drive::engine::EngineContext) {
//! goodput::drive::engine::install_cleanup_hooks(); // once, early in main
//! let handle = goodput::drive::engine::start("vllm-a", &spec, &ctx).await; // Err: report it
//! # let handle = handle.unwrap();
//! // ... run trials; select on goodput::drive::engine::shutdown_signal() ...
//! let _ = handle.stop().await;
//! # }
//! ```

pub mod command;
pub mod guard;
pub mod kvpool;
pub mod limits;
pub mod logs;
pub mod probe;
pub mod process;
pub mod prom;
pub mod specdec;
mod start;

use std::path::PathBuf;
use std::time::Duration;

use logs::LogSection;
use report::{EngineEnv, EngineFailure, FailureKind};
use tokio::time::Instant;

use crate::define::profile::{Api, EngineKind, EngineSpec};
use crate::stop::Stop;
use probe::{Probe, Readiness, ServedModel};
use process::EngineProcess;

pub use process::{install_cleanup_hooks, kill_all_engines, shutdown_signal};
pub use specdec::{parse_spec_counters, SpecCounters};
pub use start::{api_key_var, start, start_until};

/// Default readiness timeout, seconds.
const DEFAULT_READY_TIMEOUT_S: f64 = 600.0;
/// Default grace between SIGTERM and SIGKILL, seconds.
const DEFAULT_STOP_GRACE_S: f64 = 10.0;
/// An engine given by URL that does not answer within this is unreachable.
const URL_CONNECT_WINDOW: Duration = Duration::from_secs(5);
/// Between two readiness looks.
const READY_POLL: Duration = Duration::from_millis(250);
/// A launched engine whose `/v1/models` answers 404 this long, look after look,
/// never will serve it (an engine given by URL gets [`URL_CONNECT_WINDOW`]).
const LAUNCHED_MISSING_WINDOW: Duration = Duration::from_secs(30);
/// Longest grace between SIGTERM and SIGKILL for an engine stopped by an
/// interrupt while it was starting (it has served nothing yet).
pub const INTERRUPT_STOP_GRACE: Duration = Duration::from_secs(2);
/// Lines of log kept in a failure.
const FAILURE_LOG_LINES: usize = 20;

/// What [`start()`] needs besides the engine's spec.
#[derive(Debug, Clone)]
pub struct EngineContext {
    /// Directory of the engine logs (`<log_dir>/<engine>.log`); created if missing.
    pub log_dir: PathBuf,
    /// goodput's own executable, which runs the simulator (`goodput sim`).
    pub goodput_exe: PathBuf,
    /// The HTTP client for readiness and metadata requests.
    pub client: reqwest::Client,
}

/// A ready engine: where to send requests, what it serves, what it is.
pub struct EngineHandle {
    /// The engine's name in the profile.
    pub name: String,
    /// Base URL, no trailing slash.
    pub base_url: String,
    /// The model id to send in requests.
    pub model: String,
    /// That model's context size in tokens, where `/v1/models` lists it.
    pub max_model_len: Option<u32>,
    /// Completions or chat.
    pub api: Api,
    /// Bearer token from the variable `api_key_env` names (or, for an engine given
    /// by URL with no `api_key_env`, from `OPENAI_API_KEY`). Never logged or
    /// written: `Debug` shows `***`.
    pub api_key: Option<String>,
    /// The variable `api_key` was read from.
    pub api_key_var: Option<String>,
    /// KV-pool capacity, tokens.
    pub kv_pool_tokens: Option<u64>,
    /// Where `kv_pool_tokens` came from (see [`kvpool`]).
    pub kv_pool_source: Option<String>,
    /// The engine as the report's `environment.engines` describes it.
    pub env: EngineEnv,
    /// Things the reader of the report should know (e.g. no KV pool detected).
    pub notices: Vec<String>,
    /// The engine log of a launched engine.
    pub log_path: Option<PathBuf>,
    /// A simulator's `--time-scale`, as the server reports it, when it runs faster
    /// than real time (said by the runner, once per engine).
    pub time_scale: Option<f64>,
    /// This launch's part of that log.
    log: Option<LogSection>,
    kind: EngineKind,
    process: Option<EngineProcess>,
    stop_grace: Duration,
    client: reqwest::Client,
    /// A scrape of `/metrics` for the speculative-decoding counters failed (no
    /// answer in time, a broken connection): it is not asked again.
    metrics_gave_up: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for EngineHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineHandle")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("max_model_len", &self.max_model_len)
            .field("api", &self.api)
            .field("api_key", &self.api_key.as_ref().map(|_| command::REDACTED))
            .field("api_key_var", &self.api_key_var)
            .field("kv_pool_tokens", &self.kv_pool_tokens)
            .field("kv_pool_source", &self.kv_pool_source)
            .field("env", &self.env)
            .field("notices", &self.notices)
            .field("log_path", &self.log_path)
            .field("pid", &self.pid())
            .finish()
    }
}

/// The kind as the report names it.
pub fn kind_name(kind: EngineKind) -> &'static str {
    match kind {
        EngineKind::Url => "url",
        EngineKind::Vllm => "vllm",
        EngineKind::Sglang => "sglang",
        EngineKind::LlamaCpp => "llama-cpp",
        EngineKind::Sim => "sim",
        EngineKind::Command => "command",
    }
}

/// A failure of `kind` with no exit status or log.
fn failure(kind: FailureKind, message: impl Into<String>) -> EngineFailure {
    EngineFailure {
        kind,
        message: message.into(),
        ..Default::default()
    }
}

/// `value` seconds, at least zero (`default` when unset or too large).
fn seconds(value: Option<f64>, default: f64) -> Duration {
    Duration::try_from_secs_f64(value.unwrap_or(default).max(0.0))
        .unwrap_or(Duration::from_secs_f64(default))
}

impl EngineHandle {
    fn probe(&self) -> Probe<'_> {
        Probe {
            client: &self.client,
            base: &self.base_url,
            api_key: self.api_key.as_deref(),
            key_var: self.api_key_var.as_deref(),
        }
    }

    /// Whether goodput launched this engine (it has a process to watch), as
    /// opposed to a server it was pointed at (`url`).
    pub fn launched(&self) -> bool {
        self.process.is_some()
    }

    /// Whether the server at the base URL still takes a TCP connection within
    /// `within`: how a server goodput did not launch is told apart from one that
    /// is gone (killed, its node lost) once requests fail to connect.
    pub async fn accepts_connections(&self, within: Duration) -> bool {
        let Ok(url) = reqwest::Url::parse(&self.base_url) else {
            return false;
        };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return false;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        matches!(
            tokio::time::timeout(within, tokio::net::TcpStream::connect((host, port))).await,
            Ok(Ok(_))
        )
    }

    /// The engine process's pid (its process group id), when launched.
    pub fn pid(&self) -> Option<u32> {
        self.process
            .as_ref()
            .and_then(|p| u32::try_from(p.pgid()).ok())
    }

    /// Polls until ready; the served models.
    async fn wait_ready(
        &mut self,
        timeout: Duration,
        stop: &Stop,
    ) -> Result<Vec<ServedModel>, EngineFailure> {
        let start = Instant::now();
        let interrupted = |start: Instant, name: &str| {
            failure(
                FailureKind::Interrupted,
                format!(
                    "interrupted while engine {name} was starting ({:.0} s after launch)",
                    start.elapsed().as_secs_f64()
                ),
            )
        };
        // Since when `/v1/models` has answered 404 at every look.
        let mut missing_since: Option<Instant> = None;
        let missing_window = if self.kind == EngineKind::Url {
            URL_CONNECT_WINDOW
        } else {
            LAUNCHED_MISSING_WINDOW
        };
        loop {
            if let Some(status) = self.exit_status() {
                let mut f = failure(
                    FailureKind::Exited,
                    format!("engine {} exited before it was ready ({status})", self.name),
                );
                f.exit_status = Some(status);
                return Err(f);
            }
            let Some(readiness) = stop.until(self.probe().readiness()).await else {
                return Err(interrupted(start, &self.name));
            };
            if !matches!(readiness, Readiness::Missing(_)) {
                missing_since = None;
            }
            let last = match readiness {
                Readiness::Ready(models) => return Ok(models),
                Readiness::Missing(why) => {
                    let since = *missing_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= missing_window.min(timeout) {
                        return Err(failure(FailureKind::Unreachable, why));
                    }
                    why
                }
                Readiness::Refused(why) => return Err(failure(FailureKind::Unreachable, why)),
                Readiness::NotYet(why) => why,
                Readiness::Unreachable(why) => {
                    if self.kind == EngineKind::Url
                        && start.elapsed() >= URL_CONNECT_WINDOW.min(timeout)
                    {
                        return Err(failure(FailureKind::Unreachable, why));
                    }
                    why
                }
            };
            if start.elapsed() >= timeout {
                let message = format!(
                    "engine {} not ready after {:.0} s (last: {last})",
                    self.name,
                    timeout.as_secs_f64()
                );
                return Err(failure(FailureKind::ReadyTimeout, message));
            }
            if stop.until(tokio::time::sleep(READY_POLL)).await.is_none() {
                return Err(interrupted(start, &self.name));
            }
        }
    }

    /// Fills the KV pool, version and environment of a ready engine.
    async fn describe(&mut self, spec: &EngineSpec) {
        let detected = kvpool::detect(self.kind, self.log.as_ref(), &self.probe()).await;
        match (spec.kv_pool_tokens, &detected) {
            (Some(tokens), found) => {
                self.kv_pool_tokens = Some(tokens);
                self.kv_pool_source = Some("profile".into());
                if let Some(d) = found.as_ref().filter(|d| d.tokens != tokens) {
                    self.notices.push(format!(
                        "engine {}: kv_pool_tokens = {tokens} from the profile, but the engine reports {} ({})",
                        self.name, d.tokens, d.source
                    ));
                }
            }
            (None, Some(d)) => {
                self.kv_pool_tokens = Some(d.tokens);
                self.kv_pool_source = Some(d.source.to_string());
            }
            (None, None) => self.notices.push(format!(
                "engine {}: KV pool size not detected (no KV line in its log, nothing in /metrics, \
                 /get_server_info or /props); set kv_pool_tokens in the profile",
                self.name
            )),
        }
        self.env.kv_pool_tokens = self.kv_pool_tokens;
        self.env.model = Some(self.model.clone());
        self.env.version = self.probe().version(self.kind).await;
        self.env.limits = limits::detect(
            self.kind,
            &self.probe(),
            self.env.command.as_deref(),
            self.log.as_ref(),
        )
        .await;
        if self.kind == EngineKind::Sim {
            self.note_time_scale().await;
        }
    }

    /// A simulator that runs faster than real time gives latencies of an engine
    /// that does not exist: say so wherever its results are shown.
    async fn note_time_scale(&mut self) {
        let scale = self
            .probe()
            .text("/version")
            .await
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("time_scale").and_then(|s| s.as_f64()));
        self.time_scale = scale.filter(|k| (k - 1.0).abs() > 1e-9);
    }

    /// How the launched process exited, if it has (`exit code 1`, `killed by signal
    /// 9 (SIGKILL)`); `None` while it runs, and always for URL engines.
    pub fn exit_status(&mut self) -> Option<String> {
        self.process.as_mut().and_then(EngineProcess::try_exit)
    }

    /// The last `lines` lines this launch wrote to the engine log (empty for URL
    /// engines).
    pub fn log_tail(&self, lines: usize) -> Vec<String> {
        self.log.as_ref().map(|l| l.tail(lines)).unwrap_or_default()
    }

    /// Adds to a failure of this engine what its log says: the tail of this
    /// launch's lines and, in the message, the lines that say why
    /// ([`logs::root_cause`]: `ValueError: ...`, not the warning printed after it)
    /// with a hint where the fix is known.
    pub fn explain(&self, f: &mut EngineFailure) {
        let Some(log) = &self.log else {
            return;
        };
        f.log_tail = log.tail(FAILURE_LOG_LINES);
        let cause = log.cause();
        if !cause.is_empty() {
            f.message = format!("{}; cause: {}", f.message, cause.join(" / "));
        }
        f.cause.clone_from(&cause);
        if let Some(hint) = logs::hint(&cause) {
            f.message = format!("{}; {hint}", f.message);
        }
    }

    /// Stops a launched engine: SIGTERM to its process group, SIGKILL after
    /// `stop_grace_s` (default 10), wait until the group is gone. Nothing to do for
    /// a URL engine. (The sweep then waits for the GPU memory the engine held:
    /// `sweep/launch.rs`.)
    ///
    /// Errs (kind `stop`) only when something is left behind: processes that
    /// survived SIGKILL. The results measured stand.
    pub async fn stop(mut self) -> Result<(), EngineFailure> {
        self.shutdown().await
    }

    async fn shutdown(&mut self) -> Result<(), EngineFailure> {
        let Some(mut process) = self.process.take() else {
            return Ok(());
        };
        process
            .terminate(self.stop_grace)
            .await
            .map_err(|m| failure(FailureKind::Stop, format!("engine {}: {m}", self.name)))
    }

    /// True once a scrape of the engine's `/metrics` has failed (no answer in
    /// time, a broken connection): the rest of the run does not ask it again.
    pub fn metrics_given_up(&self) -> bool {
        self.metrics_gave_up
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Marks the engine's `/metrics` as failed (see [`EngineHandle::metrics_given_up`]).
    pub fn give_up_metrics(&self) {
        self.metrics_gave_up
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Speculative-decoding counters from `GET {base}/metrics`; `None` when the
    /// engine has no such endpoint or does not count drafts.
    ///
    /// A scrape that fails (no answer within the probe's timeout, a broken
    /// connection) gives `Err` once, with why, and every later call `Ok(None)` at
    /// once: a `/metrics` that hangs costs one timeout per run, not two per trial.
    pub async fn scrape_spec_counters(&self) -> Result<Option<SpecCounters>, String> {
        use std::sync::atomic::Ordering;
        if self.metrics_gave_up.load(Ordering::Relaxed) {
            return Ok(None);
        }
        match self.probe().text_checked("/metrics").await {
            Ok(text) => Ok(text.as_deref().and_then(parse_spec_counters)),
            Err(why) => {
                self.metrics_gave_up.store(true, Ordering::Relaxed);
                Err(why)
            }
        }
    }
}

/// A file of `tests/fixtures/`, for the unit tests of the engine's readers.
#[cfg(test)]
pub(crate) fn fixture(path: &str) -> String {
    let full = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/");
    std::fs::read_to_string(format!("{full}{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[cfg(test)]
mod tests;
