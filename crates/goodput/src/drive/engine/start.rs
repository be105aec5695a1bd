//! Starting an engine: its API key, base URL and command line, the launch, the
//! wait until it is ready, the model it serves, and what it says about itself.

use super::*;

/// A file name made of the engine name (`/` and the like become `_`).
pub(super) fn log_file_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}.log", clean.trim_start_matches('.'))
}

/// Launches (or reaches) engine `name` and waits until it is ready.
///
/// Errors, as the report records them: `launch` (bad spec, missing API key
/// variable, program not found), `unreachable` (a URL engine that does not answer
/// or refuses us), `exited` (the process ended before it was ready),
/// `ready_timeout`. A launched engine that fails is stopped before this returns.
pub async fn start(
    name: &str,
    spec: &EngineSpec,
    ctx: &EngineContext,
) -> Result<EngineHandle, EngineFailure> {
    start_until(name, spec, ctx, &Stop::never()).await
}

/// [`start()`], ended by the run's stop signal: a signal while the engine starts
/// stops it (with a grace of at most [`INTERRUPT_STOP_GRACE`]) and returns a
/// failure of kind `interrupted`.
pub async fn start_until(
    name: &str,
    spec: &EngineSpec,
    ctx: &EngineContext,
    stop: &Stop,
) -> Result<EngineHandle, EngineFailure> {
    let api_key = api_key(spec)?;
    let (base_url, argv) = where_and_how(spec, ctx)?;
    let shown = argv.as_ref().map(|a| {
        command::redacted_command(a, &spec.env, api_key.as_ref().map(|k| k.value.as_str()))
    });
    let mut handle = EngineHandle::new(name, spec, ctx, base_url, api_key, shown);
    if let Some(argv) = &argv {
        handle.launch(argv, spec, ctx)?;
    }
    let models = handle.until_ready(spec, stop).await?;
    handle.choose_model(spec, &models);
    handle.describe(spec).await;
    Ok(handle)
}

/// The variable OpenAI's clients (and `vllm bench serve`) read the key from.
pub const OPENAI_API_KEY: &str = "OPENAI_API_KEY";

/// An API key and the variable it was read from.
pub(super) struct ApiKey {
    /// The key (remembered as a secret when read).
    pub value: String,
    /// The variable's name, for messages.
    pub var: String,
}

/// The variable the engine's key is read from: `api_key_env`, else for an
/// engine given by URL `OPENAI_API_KEY` when it is set (as OpenAI's clients and
/// `vllm bench serve` read it). An engine goodput launches gets a key only from
/// `api_key_env`.
pub fn api_key_var(spec: &EngineSpec) -> Option<&str> {
    match &spec.api_key_env {
        Some(var) => Some(var),
        None if spec.effective_kind() == EngineKind::Url
            && std::env::var_os(OPENAI_API_KEY).is_some_and(|v| !v.is_empty()) =>
        {
            Some(OPENAI_API_KEY)
        }
        None => None,
    }
}

/// The bearer token from [`api_key_var`]'s variable; a `launch` failure when
/// `api_key_env` names one that is not set.
fn api_key(spec: &EngineSpec) -> Result<Option<ApiKey>, EngineFailure> {
    let Some(var) = api_key_var(spec) else {
        return Ok(None);
    };
    let key = |value: String| ApiKey {
        value,
        var: var.to_string(),
    };
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => {
            crate::redact::remember(&v);
            // A key read from a file often ends in a newline; no HTTP header can
            // carry one, and every request would fail as a "builder error".
            if let Some(c) = v.chars().find(|c| c.is_control()) {
                return Err(failure(
                    FailureKind::Launch,
                    format!(
                        "{}the value of {var} holds a control character ({}){}: an HTTP header cannot carry it; strip it (e.g. `export {var}=$(tr -d '\\n' < keyfile)`)",
                        if spec.api_key_env.is_some() { "api_key_env: " } else { "" },
                        c.escape_default(),
                        if v.ends_with(['\n', '\r']) { " at its end" } else { "" }
                    ),
                ));
            }
            Ok(Some(key(v)))
        }
        _ => Err(failure(
            FailureKind::Launch,
            format!("api_key_env: environment variable {var} is not set"),
        )),
    }
}

/// The engine's base URL, and the command line that launches it (none for an
/// engine given by URL).
fn where_and_how(
    spec: &EngineSpec,
    ctx: &EngineContext,
) -> Result<(String, Option<Vec<String>>), EngineFailure> {
    let port = if spec.effective_kind() != EngineKind::Url {
        Some(command::resolve_port(spec).map_err(|e| failure(FailureKind::Launch, e.to_string()))?)
    } else {
        None
    };
    let base_url = command::base_url(spec, port)
        .ok_or_else(|| failure(FailureKind::Unreachable, "the engine has no `url`"))?;
    let llama_server = std::env::var("LLAMA_SERVER").unwrap_or_else(|_| "llama-server".into());
    let argv = command::launch_argv(spec, port.unwrap_or(0), &ctx.goodput_exe, &llama_server)
        .map_err(|e| failure(FailureKind::Launch, e.to_string()))?;
    Ok((base_url, argv))
}

impl EngineHandle {
    /// A handle on an engine not yet launched nor ready (`shown`: its command
    /// line, secrets redacted).
    pub(super) fn new(
        name: &str,
        spec: &EngineSpec,
        ctx: &EngineContext,
        base_url: String,
        api_key: Option<ApiKey>,
        shown: Option<Vec<String>>,
    ) -> EngineHandle {
        let (api_key, api_key_var) = match api_key {
            Some(k) => (Some(k.value), Some(k.var)),
            None => (None, None),
        };
        let kind = spec.effective_kind();
        EngineHandle {
            name: name.to_string(),
            base_url: base_url.clone(),
            model: String::new(),
            max_model_len: None,
            api: spec.api,
            api_key,
            api_key_var,
            kv_pool_tokens: None,
            kv_pool_source: None,
            env: EngineEnv {
                kind: kind_name(kind).to_string(),
                url: Some(base_url),
                api: Some(spec.api.name().to_string()),
                command: shown,
                ..Default::default()
            },
            notices: Vec::new(),
            log_path: None,
            time_scale: None,
            log: None,
            kind,
            process: None,
            metrics_gave_up: Default::default(),
            stop_grace: seconds(spec.stop_grace_s, DEFAULT_STOP_GRACE_S),
            client: ctx.client.clone(),
        }
    }

    /// Starts the engine's process group, logging to `<log_dir>/<name>.log`.
    fn launch(
        &mut self,
        argv: &[String],
        spec: &EngineSpec,
        ctx: &EngineContext,
    ) -> Result<(), EngineFailure> {
        std::fs::create_dir_all(&ctx.log_dir).map_err(|e| {
            failure(
                FailureKind::Launch,
                format!("cannot create log directory {}: {e}", ctx.log_dir.display()),
            )
        })?;
        let log_path = ctx.log_dir.join(log_file_name(&self.name));
        let header = format!(
            "{} `{}` on {}: {}",
            logs::MARKER,
            self.name,
            self.base_url,
            self.env
                .command
                .as_ref()
                .map(|s| s.join(" "))
                .unwrap_or_default()
        );
        let section = LogSection::begin(&log_path);
        // Python engines fork processes that the parent-death signal of the leader
        // does not reach: they run under the guard.
        let run = if matches!(self.kind, EngineKind::Vllm | EngineKind::Sglang) {
            guard::guarded(&ctx.goodput_exe, argv)
        } else {
            argv.to_vec()
        };
        let process =
            EngineProcess::spawn(&run, &spec.env, spec.cwd.as_deref(), &log_path, &header)
                .map_err(|e| {
                    let mut f = failure(
                        FailureKind::Launch,
                        format!("cannot start `{}`: {e}", argv[0]),
                    );
                    f.log_tail = section.tail(FAILURE_LOG_LINES);
                    f
                })?;
        self.env.log_file = Some(log_path.display().to_string());
        self.log_path = Some(log_path);
        self.log = Some(section);
        self.process = Some(process);
        Ok(())
    }

    /// Waits until the engine is ready: the served models. An engine that is
    /// not ready is stopped (quickly, when interrupted) and its log explains why.
    async fn until_ready(
        &mut self,
        spec: &EngineSpec,
        stop: &Stop,
    ) -> Result<Vec<ServedModel>, EngineFailure> {
        let ready_timeout = seconds(spec.ready_timeout_s, DEFAULT_READY_TIMEOUT_S);
        let mut f = match self.wait_ready(ready_timeout, stop).await {
            Ok(models) => return Ok(models),
            Err(f) => f,
        };
        if f.kind == FailureKind::Interrupted {
            self.stop_grace = self.stop_grace.min(INTERRUPT_STOP_GRACE);
        }
        if let Err(stop) = self.shutdown().await {
            f.message = format!("{}; {}", f.message, stop.message);
        }
        // After the stop, so that what the engine wrote while stopping is read.
        self.explain(&mut f);
        Err(f)
    }

    /// The model id to send, and its context size. For vLLM, SGLang, llama.cpp
    /// and the simulator, `model` is what to load; the id to send is the one
    /// served. For other engines `model` is the id to send. The context size is
    /// that model's as listed, else the first listed model's.
    pub(super) fn choose_model(&mut self, spec: &EngineSpec, models: &[ServedModel]) {
        let ids: Vec<String> = models.iter().map(|m| m.id.clone()).collect();
        self.model = match (self.kind, &spec.model) {
            (_, Some(m)) if ids.contains(m) => m.clone(),
            (EngineKind::Url | EngineKind::Command, Some(m)) => m.clone(),
            _ => ids.first().cloned().unwrap_or_default(),
        };
        let chosen = models.iter().find(|m| m.id == self.model);
        self.max_model_len = chosen.or(models.first()).and_then(|m| m.max_model_len);
        if chosen.is_none() {
            self.notices.push(format!(
                "engine {}: model `{}` is not among those /v1/models lists ({})",
                self.name,
                self.model,
                ids.join(", ")
            ));
        }
    }
}
