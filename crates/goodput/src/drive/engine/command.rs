//! The command line of each kind of launched engine, the port it listens on, and
//! the redacted copy written to the report.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;

use crate::define::profile::{EngineKind, EngineSpec, PortSpec};

/// The loopback address launched engines listen on.
pub const HOST: &str = "127.0.0.1";

pub use crate::redact::{is_secret_env, is_secret_flag, REDACTED};

/// Why a launch command could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommandError {
    /// A field the kind needs is missing.
    #[error("`{0}` is required for this kind of engine")]
    Missing(&'static str),
    /// No free loopback port could be found.
    #[error("cannot pick a free port: {0}")]
    Port(String),
}

/// Picks a free loopback port: binds `127.0.0.1:0`, reads the port, releases it.
pub fn free_port() -> Result<u16, CommandError> {
    let listener = TcpListener::bind((HOST, 0)).map_err(|e| CommandError::Port(e.to_string()))?;
    let port = listener
        .local_addr()
        .map_err(|e| CommandError::Port(e.to_string()))?
        .port();
    Ok(port)
}

/// The port of a launched engine: the fixed one, or a free one for `"auto"` or none.
pub fn resolve_port(spec: &EngineSpec) -> Result<u16, CommandError> {
    match &spec.port {
        Some(PortSpec::Fixed(p)) => Ok(*p),
        Some(PortSpec::Auto(_)) | None => free_port(),
    }
}

/// The module that runs vLLM's OpenAI server, for `python = "..."`.
pub const VLLM_MODULE: &str = "vllm.entrypoints.openai.api_server";

/// The argv that launches an engine of `spec`'s kind on `port`; `None` for `url`.
///
/// `llama_server` is the `llama-server` binary (`$LLAMA_SERVER` or the one on
/// `PATH`); `goodput_exe` runs the simulator.
pub fn launch_argv(
    spec: &EngineSpec,
    port: u16,
    goodput_exe: &Path,
    llama_server: &str,
) -> Result<Option<Vec<String>>, CommandError> {
    let port_s = port.to_string();
    let model = || spec.model.clone().ok_or(CommandError::Missing("model"));
    let listen = [
        "--host".to_string(),
        HOST.to_string(),
        "--port".to_string(),
        port_s.clone(),
    ];
    let mut argv: Vec<String> = match spec.effective_kind() {
        EngineKind::Url => return Ok(None),
        EngineKind::Vllm => match &spec.python {
            Some(python) => vec![
                python.clone(),
                "-m".into(),
                VLLM_MODULE.into(),
                "--model".into(),
                model()?,
            ],
            None => vec!["vllm".into(), "serve".into(), model()?],
        },
        EngineKind::Sglang => vec![
            spec.python.clone().unwrap_or_else(|| "python3".into()),
            "-m".into(),
            "sglang.launch_server".into(),
            "--model-path".into(),
            model()?,
        ],
        EngineKind::LlamaCpp => vec![llama_server.to_string(), "-m".into(), model()?],
        EngineKind::Sim => {
            let mut v = vec![goodput_exe.display().to_string(), "sim".into()];
            if let Some(preset) = &spec.preset {
                v.extend(["--preset".to_string(), preset.clone()]);
            }
            v
        }
        EngineKind::Command => {
            let sub = |s: &String| s.replace("{port}", &port_s);
            return match (&spec.command, &spec.shell) {
                (Some(cmd), _) if !cmd.is_empty() => Ok(Some(cmd.iter().map(sub).collect())),
                (_, Some(shell)) => Ok(Some(vec!["sh".into(), "-c".into(), sub(shell)])),
                _ => Err(CommandError::Missing("command")),
            };
        }
    };
    argv.extend(listen);
    argv.extend(spec.args.iter().cloned());
    Ok(Some(argv))
}

/// The base URL requests go to, without a trailing slash: `url` when given (with
/// `{port}` substituted), else `http://127.0.0.1:{port}`.
pub fn base_url(spec: &EngineSpec, port: Option<u16>) -> Option<String> {
    match (&spec.url, port) {
        (Some(url), Some(p)) => Some(url.replace("{port}", &p.to_string())),
        (Some(url), None) => Some(url.clone()),
        (None, Some(p)) => Some(format!("http://{HOST}:{p}")),
        (None, None) => None,
    }
    .map(|u| u.trim_end_matches('/').to_string())
}

/// Replaces every occurrence of the API key, and the value of every secret flag
/// (`--api-key X`, `--api-key=X`) or secret assignment (`HF_TOKEN=X`) within a
/// shell line, by `***`.
fn redact_text(text: &str, api_key: Option<&str>) -> String {
    let mut out = match api_key.filter(|k| !k.is_empty()) {
        Some(key) => text.replace(key, REDACTED),
        None => text.to_string(),
    };
    let words: Vec<&str> = out.split(' ').collect();
    if words.len() > 1 {
        let mut redacted = Vec::with_capacity(words.len());
        let mut hide_next = false;
        for w in words {
            if w.is_empty() {
                redacted.push(String::new());
                continue;
            }
            if hide_next && !w.starts_with("--") {
                redacted.push(REDACTED.to_string());
                hide_next = false;
                continue;
            }
            redacted.push(redact_word(w, &mut hide_next));
        }
        out = redacted.join(" ");
    }
    out
}

/// Redacts `--flag=value` and `NAME=value` forms; sets `hide_next` after a bare
/// secret flag. Which names are secret is [`crate::redact::is_secret_name`]'s rule.
fn redact_word(word: &str, hide_next: &mut bool) -> String {
    *hide_next = false;
    if let Some((name, _)) = word.split_once('=') {
        let env_like = !name.starts_with('-')
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if is_secret_flag(name) || (env_like && is_secret_env(name)) {
            return format!("{name}={REDACTED}");
        }
        return word.to_string();
    }
    if is_secret_flag(word) {
        *hide_next = true;
    }
    word.to_string()
}

/// The command line as written to the report: `NAME=value` for each extra
/// environment variable (secret ones redacted), then the argv with the value after
/// any secret flag, and any occurrence of the API key, redacted.
pub fn redacted_command(
    argv: &[String],
    env: &BTreeMap<String, String>,
    api_key: Option<&str>,
) -> Vec<String> {
    // The engine may print its arguments: every output is redacted of their secrets.
    crate::redact::remember_argv(argv);
    let mut out: Vec<String> = env
        .iter()
        .map(|(k, v)| {
            if is_secret_env(k) {
                // The engine may print it: every output is redacted of it.
                crate::redact::remember(v);
                format!("{k}={REDACTED}")
            } else {
                format!("{k}={}", redact_text(v, api_key))
            }
        })
        .collect();
    let mut hide_next = false;
    for arg in argv {
        // The value after a secret flag, unless it is the next flag
        // (`--enable-auth --port 1`).
        if hide_next && !arg.starts_with("--") {
            out.push(REDACTED.to_string());
            hide_next = false;
            continue;
        }
        let arg = redact_text(arg, api_key);
        if arg.contains(' ') {
            // A shell line: redact_text has looked at each word.
            out.push(arg);
        } else {
            out.push(redact_word(&arg, &mut hide_next));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn spec(kind: EngineKind) -> EngineSpec {
        EngineSpec {
            kind: Some(kind),
            model: Some("Qwen/Qwen2.5-0.5B".into()),
            args: vec!["--max-model-len".into(), "2048".into()],
            ..Default::default()
        }
    }

    fn argv(s: &EngineSpec) -> Vec<String> {
        launch_argv(s, 8123, &PathBuf::from("/bin/goodput"), "llama-server")
            .unwrap()
            .unwrap()
    }

    #[test]
    fn command_line_per_kind() {
        assert_eq!(
            argv(&spec(EngineKind::Vllm)).join(" "),
            "vllm serve Qwen/Qwen2.5-0.5B --host 127.0.0.1 --port 8123 --max-model-len 2048"
        );
        assert_eq!(
            argv(&spec(EngineKind::Sglang)).join(" "),
            "python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-0.5B --host 127.0.0.1 --port 8123 --max-model-len 2048"
        );
        assert_eq!(
            argv(&spec(EngineKind::LlamaCpp))[..3].join(" "),
            "llama-server -m Qwen/Qwen2.5-0.5B"
        );
        let venv = EngineSpec {
            python: Some("/venv/bin/python".into()),
            ..spec(EngineKind::Vllm)
        };
        assert_eq!(
            argv(&venv).join(" "),
            "/venv/bin/python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-0.5B \
             --host 127.0.0.1 --port 8123 --max-model-len 2048"
        );
        let sglang_venv = EngineSpec {
            python: Some("/venv/bin/python".into()),
            ..spec(EngineKind::Sglang)
        };
        assert_eq!(argv(&sglang_venv)[0], "/venv/bin/python");
        let sim = EngineSpec {
            preset: Some("l4".into()),
            ..spec(EngineKind::Sim)
        };
        assert_eq!(
            argv(&sim).join(" "),
            "/bin/goodput sim --preset l4 --host 127.0.0.1 --port 8123 --max-model-len 2048"
        );
        let cmd = EngineSpec {
            command: Some(vec![
                "srv".into(),
                "--listen=:{port}".into(),
                "{port}".into(),
            ]),
            ..Default::default()
        };
        assert_eq!(argv(&cmd), ["srv", "--listen=:8123", "8123"]);
        let shell = EngineSpec {
            shell: Some("exec srv -p {port}".into()),
            ..Default::default()
        };
        assert_eq!(argv(&shell), ["sh", "-c", "exec srv -p 8123"]);
        let url = EngineSpec {
            url: Some("http://h:1/".into()),
            ..Default::default()
        };
        assert_eq!(launch_argv(&url, 1, Path::new("g"), "l").unwrap(), None);
        let no_model = EngineSpec {
            kind: Some(EngineKind::Vllm),
            ..Default::default()
        };
        assert_eq!(
            launch_argv(&no_model, 1, Path::new("g"), "l"),
            Err(CommandError::Missing("model"))
        );
    }

    #[test]
    fn urls_and_ports() {
        let url = EngineSpec {
            url: Some("http://h:8000/".into()),
            ..Default::default()
        };
        assert_eq!(base_url(&url, None).as_deref(), Some("http://h:8000"));
        assert_eq!(
            base_url(&EngineSpec::default(), Some(5)).as_deref(),
            Some("http://127.0.0.1:5")
        );
        let fixed = EngineSpec {
            port: Some(PortSpec::Fixed(8000)),
            ..Default::default()
        };
        assert_eq!(resolve_port(&fixed), Ok(8000));
        let auto = EngineSpec {
            port: Some(PortSpec::Auto("auto".into())),
            ..Default::default()
        };
        let p = resolve_port(&auto).unwrap();
        assert!(p > 0);
        // The port is free again: something else can bind it.
        assert!(TcpListener::bind((HOST, p)).is_ok());
    }

    #[test]
    fn secrets_are_redacted() {
        let argv: Vec<String> = [
            "vllm",
            "serve",
            "m",
            "--api-key",
            "sk-123",
            "--hf-token=hf_abc",
            "--max-num-batched-tokens",
            "8192",
            "--x",
            "Bearer sk-123",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut env = BTreeMap::new();
        env.insert("HF_TOKEN".to_string(), "hf_abc".to_string());
        env.insert("CUDA_VISIBLE_DEVICES".to_string(), "0".to_string());
        let out = redacted_command(&argv, &env, Some("sk-123"));
        assert_eq!(
            out,
            [
                "CUDA_VISIBLE_DEVICES=0",
                "HF_TOKEN=***",
                "vllm",
                "serve",
                "m",
                "--api-key",
                "***",
                "--hf-token=***",
                "--max-num-batched-tokens",
                "8192",
                "--x",
                "Bearer ***",
            ]
        );
        // Inside a shell line.
        let shell = vec![
            "sh".to_string(),
            "-c".to_string(),
            "OPENAI_API_KEY=abc srv --api-key  xyz --port 1".to_string(),
        ];
        let out = redacted_command(&shell, &BTreeMap::new(), None);
        assert_eq!(out[2], "OPENAI_API_KEY=*** srv --api-key  *** --port 1");
    }

    #[test]
    fn the_flags_named_secret_are_the_redaction_rules() {
        let argv: Vec<String> = [
            "srv",
            "--db-pass",
            "hunter2222",
            "--auth=abc",
            "--github-pat",
            "ghp_x",
            "--enable-auth",
            "--port",
            "1",
            "--author",
            "me",
            "--enable-prefix-caching",
            "--max-num-batched-tokens",
            "8",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut env = BTreeMap::new();
        env.insert("DB_PASS".to_string(), "pw".to_string());
        env.insert("SESSION_COOKIE".to_string(), "c".to_string());
        let out = redacted_command(&argv, &env, None).join(" ");
        assert_eq!(
            out,
            "DB_PASS=*** SESSION_COOKIE=*** srv --db-pass *** --auth=*** --github-pat *** \
             --enable-auth --port 1 --author me --enable-prefix-caching --max-num-batched-tokens 8"
        );
    }
}
