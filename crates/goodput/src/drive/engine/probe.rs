//! HTTP questions to an engine: is it ready, what does it serve, which version is
//! it, what do its `/metrics` say.

use std::time::Duration;

use serde_json::Value;

use crate::bounded::{read_bounded, read_json, BodyError, MAX_PROBE_BYTES};
use crate::define::profile::EngineKind;

/// The longest one probe request may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// An engine's base URL with the client and key to ask it with.
#[derive(Clone, Copy)]
pub struct Probe<'a> {
    /// The HTTP client.
    pub client: &'a reqwest::Client,
    /// Base URL, no trailing slash.
    pub base: &'a str,
    /// Bearer token, when the engine wants one.
    pub api_key: Option<&'a str>,
    /// The environment variable the key was read from, for messages (never the
    /// key).
    pub key_var: Option<&'a str>,
}

/// A model an engine serves, as its `/v1/models` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedModel {
    /// The id to send in requests.
    pub id: String,
    /// Its context size in tokens, where the list says (`max_model_len`, as vLLM
    /// and the simulator write it).
    pub max_model_len: Option<u32>,
}

/// One look at an engine that is starting.
#[derive(Debug, Clone, PartialEq)]
pub enum Readiness {
    /// `/health` is fine and `/v1/models` lists these models.
    Ready(Vec<ServedModel>),
    /// It answers but is not ready; why.
    NotYet(String),
    /// Nothing answers (connection refused, DNS, ...); why.
    Unreachable(String),
    /// It answers, but `/v1/models` is not there (HTTP 404): a wrong base URL,
    /// or not an OpenAI-compatible server; why, with the URL asked.
    Missing(String),
    /// It refuses us (HTTP 401/403), or answers in a way waiting will not mend (a
    /// redirect loop, a model list longer than [`MAX_PROBE_BYTES`]).
    Refused(String),
}

impl<'a> Probe<'a> {
    pub(super) fn get(&self, path: &str) -> reqwest::RequestBuilder {
        let req = self
            .client
            .get(format!("{}{path}", self.base))
            .timeout(PROBE_TIMEOUT);
        match self.api_key {
            Some(key) => req.bearer_auth(key),
            None => req,
        }
    }

    /// The body of a successful `GET path` as text; `None` when it fails or is
    /// longer than [`MAX_PROBE_BYTES`] (read no further).
    pub async fn text(&self, path: &str) -> Option<String> {
        let resp = self.get(path).send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let what = format!("GET {}{path}", self.base);
        let body = read_bounded(resp, MAX_PROBE_BYTES, &what).await.ok()?;
        Some(String::from_utf8_lossy(&body).into_owned())
    }

    /// [`Probe::text`], telling a failure of the exchange (`Err`: no answer in
    /// time, a broken connection, an answer over the bound) from an answer that is
    /// not a success (`Ok(None)`: the endpoint is not there).
    pub async fn text_checked(&self, path: &str) -> Result<Option<String>, String> {
        let what = format!("GET {}{path}", self.base);
        let resp = self
            .get(path)
            .send()
            .await
            .map_err(|e| format!("{what}: {}", error_chain(&e.without_url())))?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        let body = read_bounded(resp, MAX_PROBE_BYTES, &what)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Some(String::from_utf8_lossy(&body).into_owned()))
    }

    /// The body of a successful `GET path` as JSON.
    pub async fn json(&self, path: &str) -> Option<Value> {
        serde_json::from_str(&self.text(path).await?).ok()
    }

    /// Looks once: `GET /health` (200, or 404 for servers without it), then
    /// `GET /v1/models` with at least one model. Every message names the URL asked.
    pub async fn readiness(&self) -> Readiness {
        match self.get("/health").send().await {
            Err(e) if e.is_redirect() => return Readiness::Refused(self.redirected("/health", &e)),
            // A certificate the client does not trust stays untrusted: no wait.
            Err(e) if error_chain(&e).contains("certificate") => {
                return Readiness::Refused(format!(
                    "GET {}/health: {} (a server behind a private CA: --ca-cert FILE, an \
                     engine's `ca_cert`, or SSL_CERT_FILE)",
                    self.base,
                    error_chain(&e)
                ))
            }
            Err(e) if e.is_connect() || e.is_request() => {
                return Readiness::Unreachable(format!(
                    "GET {}/health: {}",
                    self.base,
                    error_chain(&e)
                ))
            }
            Err(e) => {
                return Readiness::NotYet(format!(
                    "GET {}/health: {}",
                    self.base,
                    error_chain(&e.without_url())
                ))
            }
            Ok(resp) => {
                let code = resp.status().as_u16();
                if !(resp.status().is_success() || code == 404 || code == 405) {
                    return Readiness::NotYet(format!(
                        "GET {}/health answered HTTP {code}",
                        self.base
                    ));
                }
            }
        }
        let what = format!("GET {}/v1/models", self.base);
        let resp = match self.get("/v1/models").send().await {
            Ok(r) => r,
            Err(e) if e.is_redirect() => {
                return Readiness::Refused(self.redirected("/v1/models", &e))
            }
            Err(e) => {
                return Readiness::NotYet(format!("{what}: {}", error_chain(&e.without_url())))
            }
        };
        let code = resp.status().as_u16();
        if code == 401 || code == 403 {
            let why = match self.key_var.filter(|_| self.api_key.is_some()) {
                Some(var) => format!("the server refused the key from {var}"),
                None => "the server wants a key: set OPENAI_API_KEY or api_key_env".to_string(),
            };
            return Readiness::Refused(format!("{what} answered HTTP {code}: {why}"));
        }
        if code == 404 {
            let hint = if self.base.ends_with("/v1") {
                "the URL ends in /v1, and goodput adds /v1/models itself: give the server's root"
            } else {
                "is the URL the server's root, and is it OpenAI-compatible?"
            };
            return Readiness::Missing(format!("{what} answered HTTP 404 ({hint})"));
        }
        if !resp.status().is_success() {
            return Readiness::NotYet(format!("{what} answered HTTP {code}"));
        }
        match read_json::<Value>(resp, MAX_PROBE_BYTES, &what).await {
            Ok(body) => {
                let models = served_models(&body);
                if models.is_empty() {
                    Readiness::NotYet(format!(
                        "{what} lists no model (ids longer than {MAX_MODEL_ID_BYTES} bytes are not used)"
                    ))
                } else {
                    Readiness::Ready(models)
                }
            }
            Err(e @ BodyError::TooLarge { .. }) => Readiness::Refused(e.to_string()),
            Err(e) => Readiness::NotYet(e.to_string()),
        }
    }

    /// The message for a `GET path` that ended in too many redirects.
    fn redirected(&self, path: &str, e: &reqwest::Error) -> String {
        let last = e
            .url()
            .map(|u| format!(", the last to {}", u.path()))
            .unwrap_or_default();
        format!(
            "GET {}{path}: redirected too many times{last} (a redirect loop): give the server's own address",
            self.base
        )
    }

    /// The engine's own version string, best effort: vLLM and the simulator answer
    /// `GET /version`, SGLang `GET /get_server_info` (or `/server_info`), llama.cpp
    /// `GET /props` (`build_info`). Other kinds try each.
    pub async fn version(&self, kind: EngineKind) -> Option<String> {
        let tries: &[(&str, &str)] = match kind {
            EngineKind::Vllm | EngineKind::Sim => &[("/version", "version")],
            EngineKind::Sglang => &[("/get_server_info", "version"), ("/server_info", "version")],
            EngineKind::LlamaCpp => &[("/props", "build_info")],
            EngineKind::Url | EngineKind::Command => &[
                ("/version", "version"),
                ("/get_server_info", "version"),
                ("/props", "build_info"),
            ],
        };
        for (path, key) in tries {
            if let Some(v) = self
                .json(path)
                .await
                .as_ref()
                .and_then(|b| string_field(b, key))
            {
                return Some(v);
            }
        }
        None
    }
}

pub use crate::define::plan::MAX_MODEL_ID_BYTES;

/// The models of an OpenAI `/v1/models` list with a non-empty `id` of at most
/// [`MAX_MODEL_ID_BYTES`], in order; a `max_model_len` that is not a whole number
/// of `u32` range is left out.
pub fn served_models(body: &Value) -> Vec<ServedModel> {
    let Some(items) = body.get("data").and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|m| {
            let id = m
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty() && id.len() <= MAX_MODEL_ID_BYTES)?;
            let max_model_len = m
                .get("max_model_len")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok());
            Some(ServedModel {
                id: id.to_string(),
                max_model_len,
            })
        })
        .collect()
}

fn string_field(body: &Value, key: &str) -> Option<String> {
    match body.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An error with its causes, `a: b: c`.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_and_versions() {
        let body = serde_json::json!({"object": "list", "data": [
            {"id": "Qwen/Qwen2.5-0.5B-Instruct", "object": "model"}, {"id": ""}, {"object": "model"}]});
        let ids =
            |b: &Value| -> Vec<String> { served_models(b).into_iter().map(|m| m.id).collect() };
        assert_eq!(ids(&body), ["Qwen/Qwen2.5-0.5B-Instruct"]);
        assert!(ids(&serde_json::json!({"data": null})).is_empty());
        let vllm = serde_json::json!({"data": [{"id": "a", "max_model_len": 4096},
            {"id": "b", "max_model_len": -1}, {"id": "c", "max_model_len": 1e12}]});
        let lens: Vec<_> = served_models(&vllm)
            .iter()
            .map(|m| m.max_model_len)
            .collect();
        assert_eq!(lens, [Some(4096), None, None]);
        assert_eq!(
            string_field(
                &serde_json::json!({"build_info": "b11434-3f2a1c0"}),
                "build_info"
            )
            .as_deref(),
            Some("b11434-3f2a1c0")
        );
        assert_eq!(
            string_field(&serde_json::json!({"version": " "}), "version"),
            None
        );
    }

    #[tokio::test]
    async fn nothing_listening_is_unreachable() {
        let port = super::super::command::free_port().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let probe = Probe {
            client: &client,
            base: &base,
            api_key: None,
            key_var: None,
        };
        assert!(matches!(probe.readiness().await, Readiness::Unreachable(_)));
        assert_eq!(probe.version(EngineKind::Url).await, None);
    }
}
