//! OpenAI/vLLM request parsing and validation, and the error body shape.
//!
//! A request becomes a [`Job`]: prompt length, the exact number of tokens it
//! will produce (after `max_tokens`, the pseudo-EOS point unless `ignore_eos`,
//! `min_tokens` and `stop` strings), and how to format its answer.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::config::SimConfig;
use crate::text;

/// An error answered as `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// OpenAI error type, e.g. `BadRequestError`.
    pub kind: &'static str,
    /// Human-readable message.
    pub message: String,
}

impl ApiError {
    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "BadRequestError",
            message: message.into(),
        }
    }

    /// An error with any status; the type follows the status.
    pub fn with_status(status: StatusCode, message: impl Into<String>) -> ApiError {
        let kind = match status.as_u16() {
            400 => "BadRequestError",
            401 => "AuthenticationError",
            403 => "PermissionDeniedError",
            404 => "NotFoundError",
            429 => "RateLimitError",
            503 => "ServiceUnavailableError",
            s if s >= 500 => "InternalServerError",
            _ => "APIError",
        };
        ApiError {
            status,
            kind,
            message: message.into(),
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": null,
            "code": self.status.as_u16(),
        }})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

/// `prompt` of `/v1/completions`: text, token ids, or a batch of one.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum PromptInput {
    /// Text.
    Text(String),
    /// Token ids.
    Ids(Vec<u32>),
    /// A batch of texts (only one is supported).
    Texts(Vec<String>),
    /// A batch of token id lists (only one is supported).
    IdLists(Vec<Vec<u32>>),
}

/// `stop`: one string or several.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum StopInput {
    /// One stop string.
    One(String),
    /// Several.
    Many(Vec<String>),
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize)]
pub struct StreamOptions {
    /// Send a final chunk with usage.
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// Chat message content: a string or a list of parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Parts; `{"type": "text", "text": ...}` parts are used.
    Parts(Vec<Value>),
}

/// One chat message.
#[derive(Debug, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant`, ...
    pub role: String,
    /// Its content.
    #[serde(default)]
    pub content: Option<Content>,
}

/// The fields of a completion or chat request the simulator honours.
#[derive(Debug, Deserialize)]
pub struct GenerationRequest {
    /// Requested model id.
    pub model: Option<String>,
    /// `/v1/completions` prompt.
    pub prompt: Option<PromptInput>,
    /// `/v1/chat/completions` messages.
    pub messages: Option<Vec<Message>>,
    /// Output limit.
    pub max_tokens: Option<u32>,
    /// Output limit (chat; takes precedence over `max_tokens`).
    pub max_completion_tokens: Option<u32>,
    /// Do not stop before this many tokens.
    pub min_tokens: Option<u32>,
    /// Ignore the pseudo end-of-sequence.
    #[serde(default)]
    pub ignore_eos: bool,
    /// Stop strings.
    pub stop: Option<StopInput>,
    /// Seed of the generated text.
    pub seed: Option<i64>,
    /// Stream as SSE.
    #[serde(default)]
    pub stream: bool,
    /// Streaming options.
    pub stream_options: Option<StreamOptions>,
    /// Number of choices (only 1 is supported).
    pub n: Option<u32>,
}

/// Which endpoint a job came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/completions`.
    Completions,
    /// `/v1/chat/completions`.
    Chat,
}

/// A validated request.
#[derive(Debug, Clone)]
pub struct Job {
    /// Endpoint.
    pub endpoint: Endpoint,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Tokens the request will produce.
    pub output_tokens: u32,
    /// `length` or `stop`.
    pub finish_reason: &'static str,
    /// Byte length of the returned text when a stop string cut it.
    pub text_limit: Option<usize>,
    /// Seed of the generated words.
    pub text_seed: u64,
    /// SSE or one JSON.
    pub stream: bool,
    /// Send the usage chunk.
    pub include_usage: bool,
}

/// Render chat messages the way the simulator's chat template does.
pub fn render_chat(messages: &[Message]) -> String {
    let mut s = String::new();
    for m in messages {
        s.push_str("<|");
        s.push_str(&m.role);
        s.push_str("|>\n");
        match &m.content {
            Some(Content::Text(t)) => s.push_str(t),
            Some(Content::Parts(parts)) => {
                for p in parts {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        s.push_str(t);
                        s.push('\n');
                    }
                }
            }
            None => {}
        }
        s.push('\n');
    }
    s.push_str("<|assistant|>\n");
    s
}

/// Prompt length and a hash of its content (the default text seed).
fn prompt_of(req: &GenerationRequest, endpoint: Endpoint) -> Result<(usize, u64), ApiError> {
    match endpoint {
        Endpoint::Chat => {
            let messages = req
                .messages
                .as_ref()
                .ok_or_else(|| ApiError::bad_request("`messages` is required"))?;
            let rendered = render_chat(messages);
            Ok((
                text::count_tokens(&rendered),
                text::fnv1a(rendered.as_bytes()),
            ))
        }
        Endpoint::Completions => {
            let prompt = req
                .prompt
                .as_ref()
                .ok_or_else(|| ApiError::bad_request("`prompt` is required"))?;
            let one = |n: usize| {
                if n == 1 {
                    Ok(())
                } else {
                    Err(ApiError::bad_request(
                        "batched prompts are not supported by goodput-sim; send one prompt per request",
                    ))
                }
            };
            match prompt {
                PromptInput::Text(t) => Ok((text::count_tokens(t), text::fnv1a(t.as_bytes()))),
                PromptInput::Ids(ids) => Ok((ids.len(), ids_hash(ids))),
                PromptInput::Texts(ts) => {
                    one(ts.len())?;
                    let t = &ts[0];
                    Ok((text::count_tokens(t), text::fnv1a(t.as_bytes())))
                }
                PromptInput::IdLists(ls) => {
                    one(ls.len())?;
                    Ok((ls[0].len(), ids_hash(&ls[0])))
                }
            }
        }
    }
}

fn ids_hash(ids: &[u32]) -> u64 {
    ids.iter()
        .fold(0x1234_5678_u64, |h, &i| text::mix(h ^ u64::from(i)))
}

/// Validate a request against the configuration and plan its output.
pub fn plan(
    req: &GenerationRequest,
    endpoint: Endpoint,
    config: &SimConfig,
) -> Result<Job, ApiError> {
    if let Some(n) = req.n {
        if n != 1 {
            return Err(ApiError::bad_request(
                "only n = 1 is supported by goodput-sim",
            ));
        }
    }
    let (prompt_len, prompt_hash) = prompt_of(req, endpoint)?;
    let max_len = config.max_model_len as usize;
    let kv = config.kv_capacity_tokens() as usize;
    if prompt_len == 0 {
        return Err(ApiError::bad_request("The prompt is empty (0 tokens)."));
    }
    if prompt_len > kv {
        return Err(ApiError::bad_request(format!(
            "The prompt ({prompt_len} tokens) is larger than the KV cache ({kv} tokens); \
             it can never be scheduled."
        )));
    }
    if prompt_len >= max_len {
        return Err(ApiError::bad_request(format!(
            "The decoder prompt (length {prompt_len}) is longer than the maximum model length \
             of {max_len}. Make sure that `max_model_len` is no smaller than the number of text tokens."
        )));
    }
    let requested = match endpoint {
        Endpoint::Chat => req.max_completion_tokens.or(req.max_tokens),
        Endpoint::Completions => req.max_tokens,
    };
    let max_tokens = match (requested, endpoint) {
        (Some(m), _) => m as usize,
        (None, Endpoint::Completions) => 16.min(max_len - prompt_len),
        (None, Endpoint::Chat) => max_len - prompt_len,
    };
    if max_tokens == 0 {
        return Err(ApiError::bad_request(
            "max_tokens must be at least 1, got 0.",
        ));
    }
    if prompt_len + max_tokens > max_len {
        return Err(ApiError::bad_request(format!(
            "This model's maximum context length is {max_len} tokens. However, you requested \
             {} tokens ({prompt_len} in the messages, {max_tokens} in the completion). \
             Please reduce the length of the messages or completion.",
            prompt_len + max_tokens
        )));
    }
    let min_tokens = req.min_tokens.unwrap_or(0) as usize;
    if min_tokens > max_tokens {
        return Err(ApiError::bad_request(format!(
            "min_tokens must be less than or equal to max_tokens={max_tokens}, got {min_tokens}."
        )));
    }
    let text_seed = match req.seed {
        Some(s) => text::mix(s as u64 ^ config.seed),
        None => text::mix(prompt_hash ^ config.seed),
    };
    // Both fit in u32: bounded by max_model_len.
    let max_tokens = max_tokens as u32;
    let min_tokens = min_tokens as u32;
    let mut output = max_tokens;
    let mut finish_reason = "length";
    if !req.ignore_eos {
        let eos = text::eos_point(text_seed).max(min_tokens).max(1);
        if eos < output {
            output = eos;
            finish_reason = "stop";
        }
    }
    let stops: Vec<String> = match &req.stop {
        None => Vec::new(),
        Some(StopInput::One(s)) => vec![s.clone()],
        Some(StopInput::Many(v)) => v.clone(),
    };
    let mut text_limit = None;
    if let Some((tokens, cut)) = text::find_stop(text_seed, output, &stops) {
        if tokens >= min_tokens.max(1) {
            output = tokens;
            finish_reason = "stop";
            text_limit = Some(cut);
        }
    }
    Ok(Job {
        endpoint,
        prompt_tokens: prompt_len as u32,
        output_tokens: output,
        finish_reason,
        text_limit,
        text_seed,
        stream: req.stream,
        include_usage: req
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: Value) -> GenerationRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn plans_lengths_and_limits() {
        let c = SimConfig::default();
        let j = plan(
            &req(json!({"prompt": "a b c", "max_tokens": 50, "ignore_eos": true})),
            Endpoint::Completions,
            &c,
        )
        .unwrap();
        assert_eq!(
            (j.prompt_tokens, j.output_tokens, j.finish_reason),
            (3, 50, "length")
        );
        let j = plan(
            &req(json!({"prompt": [1, 2, 3, 4]})),
            Endpoint::Completions,
            &c,
        )
        .unwrap();
        assert_eq!((j.prompt_tokens, j.output_tokens), (4, 16));
        let j = plan(
            &req(
                json!({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 5,
                        "ignore_eos": true}),
            ),
            Endpoint::Chat,
            &c,
        )
        .unwrap();
        assert_eq!(j.output_tokens, 5);
        assert_eq!(
            j.prompt_tokens as usize,
            text::count_tokens("<|user|>\nhi\n<|assistant|>\n")
        );
    }

    #[test]
    fn eos_never_before_min_tokens() {
        let c = SimConfig::default();
        for seed in 0..50 {
            let j = plan(
                &req(json!({"prompt": "x", "max_tokens": 3000, "min_tokens": 1500, "seed": seed})),
                Endpoint::Completions,
                &c,
            )
            .unwrap();
            assert!(j.output_tokens >= 1500);
            assert_eq!(j.finish_reason, "stop");
        }
    }

    #[test]
    fn oversize_requests_are_rejected_with_vllm_messages() {
        let c = crate::config::preset("vllm-fast-b").unwrap();
        let long = "w ".repeat(3000);
        let e = plan(&req(json!({"prompt": long})), Endpoint::Completions, &c).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("KV cache"), "{}", e.message);
        let e = plan(
            &req(json!({"prompt": "w ".repeat(2000), "max_tokens": 100})),
            Endpoint::Completions,
            &c,
        )
        .unwrap_err();
        assert!(
            e.message.contains("maximum context length is 2048"),
            "{}",
            e.message
        );
        assert_eq!(e.body()["error"]["code"], 400);
    }
}
