//! OpenAI/vLLM request types and the error body shape.
//!
//! A request body is checked field by field first ([`super::params`]), then
//! read into [`GenerationRequest`] and planned ([`super::plan`]).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Value};

/// An error answered as vLLM's current shape,
/// `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// OpenAI error type, e.g. `BadRequestError`.
    pub kind: &'static str,
    /// Human-readable message.
    pub message: String,
    /// The request field at fault, if one is.
    pub param: Option<String>,
}

impl ApiError {
    /// 400 Bad Request.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::with_status(StatusCode::BAD_REQUEST, message)
    }

    /// 400 Bad Request about one field.
    pub fn bad_param(param: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            param: Some(param.to_string()),
            ..ApiError::bad_request(message)
        }
    }

    /// An error with any status; the type follows the status.
    pub fn with_status(status: StatusCode, message: impl Into<String>) -> ApiError {
        let kind = match status.as_u16() {
            400 => "BadRequestError",
            401 => "AuthenticationError",
            403 => "PermissionDeniedError",
            404 => "NotFoundError",
            405 => "MethodNotAllowedError",
            413 => "RequestTooLargeError",
            429 => "RateLimitError",
            503 => "ServiceUnavailableError",
            s if s >= 500 => "InternalServerError",
            _ => "APIError",
        };
        ApiError {
            status,
            kind,
            message: message.into(),
            param: None,
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.status.as_u16(),
        }})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

/// `prompt` of `/v1/completions`: text, token ids, or a batch of either.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum PromptInput {
    /// One text.
    Text(String),
    /// One prompt as token ids.
    Ids(Vec<u32>),
    /// A batch of texts.
    Texts(Vec<String>),
    /// A batch of token id lists.
    IdLists(Vec<Vec<u32>>),
}

/// `stop`: one string or several.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum StopInput {
    /// One stop string.
    One(String),
    /// A list of stop strings.
    Many(Vec<String>),
}

/// `stream_options`: what usage a streamed response carries.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamOptions {
    /// Send a final chunk with usage.
    #[serde(default)]
    pub include_usage: Option<bool>,
    /// With `include_usage`, usage on every token chunk too (as vLLM does).
    #[serde(default)]
    pub continuous_usage_stats: Option<bool>,
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

/// The fields of a completion or chat request the simulator reads. Integers
/// are signed so that out-of-range values get vLLM's messages rather than a
/// parse error; [`super::params`] has already rejected unknown fields.
#[derive(Debug, Default, Deserialize)]
pub struct GenerationRequest {
    /// Requested model id.
    pub model: Option<String>,
    /// `/v1/completions` prompt.
    pub prompt: Option<PromptInput>,
    /// `/v1/chat/completions` messages.
    pub messages: Option<Vec<Message>>,
    /// Output limit, tokens (default: 16 on completions, the rest of the context on chat).
    pub max_tokens: Option<i64>,
    /// Output limit (chat; takes precedence over `max_tokens`).
    pub max_completion_tokens: Option<i64>,
    /// Do not stop before this many tokens.
    pub min_tokens: Option<i64>,
    /// Ignore the pseudo end-of-sequence.
    #[serde(default)]
    pub ignore_eos: Option<bool>,
    /// Stop strings.
    pub stop: Option<StopInput>,
    /// Keep the matched stop string in the text.
    pub include_stop_str_in_output: Option<bool>,
    /// Seed of the generated text.
    pub seed: Option<i64>,
    /// Stream as SSE.
    pub stream: Option<bool>,
    /// Streaming options.
    pub stream_options: Option<StreamOptions>,
    /// Choices per prompt.
    pub n: Option<i64>,
    /// Must equal `n` when given (no hidden extra sequences).
    pub best_of: Option<i64>,
    /// Completions: top alternatives per token (an integer); chat: a bool.
    pub logprobs: Option<Value>,
    /// Chat: top alternatives per token.
    pub top_logprobs: Option<i64>,
    /// Completions: prepend the prompt to the text.
    pub echo: Option<bool>,
    /// Sampling values: validated, no effect on the pseudo-text.
    pub temperature: Option<f64>,
    /// See `temperature`.
    pub top_p: Option<f64>,
    /// See `temperature`.
    pub top_k: Option<i64>,
    /// See `temperature`.
    pub min_p: Option<f64>,
    /// See `temperature`.
    pub presence_penalty: Option<f64>,
    /// See `temperature`.
    pub frequency_penalty: Option<f64>,
    /// See `temperature`.
    pub repetition_penalty: Option<f64>,
    /// Chat: how much a reasoning model thinks (`low`, `medium`, `high`, ...).
    pub reasoning_effort: Option<String>,
    /// Chat: template switches; `enable_thinking` / `thinking` are honoured.
    pub chat_template_kwargs: Option<serde_json::Map<String, Value>>,
    /// Chat: function definitions; a request with some is answered with a tool
    /// call (`server::tools`).
    pub tools: Option<Vec<Value>>,
    /// Chat: `none`, `auto`, `required` or a named function.
    pub tool_choice: Option<Value>,
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
