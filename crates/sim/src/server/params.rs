//! Which request fields the simulator accepts, and vLLM's range checks.
//!
//! Field policy, so that a client's mistake is never hidden:
//! - honoured: the field changes the answer the way it does on vLLM
//!   (`n`, `stop`, `logprobs`, `echo`, ...);
//! - validated only: sampling values (`temperature`, `top_p`, penalties, ...)
//!   get vLLM's range checks but cannot change pseudo-text;
//! - harmless: accepted and ignored because ignoring them cannot change the
//!   answer (`user`, `metadata`, `skip_special_tokens`, ...);
//! - tools (chat): a request with `tools` is answered with a tool call
//!   (`super::tools`); on completions `tools` is neutral only;
//! - neutral only: fields the simulator cannot honour (`functions`,
//!   `response_format`, `logit_bias`, `suffix`, ...) are accepted at their
//!   neutral value (`null`, `[]`, `{"type": "text"}`) and otherwise answered
//!   with a 400 that names them;
//! - anything else is unknown and also answered with a 400 naming it (vLLM
//!   ignores unknown fields with a log warning).

use serde_json::{Map, Value};

use super::openai::{ApiError, GenerationRequest};
use super::plan::Endpoint;

/// Most choices per prompt (`n`).
pub const MAX_N: i64 = 128;
/// Most sequences per request (prompts times `n`).
pub const MAX_SEQUENCES: usize = 256;
/// vLLM's default `--max-logprobs`.
pub const MAX_LOGPROBS: i64 = 20;
/// Most stop strings, and the longest one (bounds the stop-string scan).
pub const MAX_STOPS: usize = 16;
/// See [`MAX_STOPS`].
pub const MAX_STOP_BYTES: usize = 256;

const HONOURED: &[&str] = &[
    "model",
    "stream",
    "stream_options",
    "max_tokens",
    "min_tokens",
    "ignore_eos",
    "stop",
    "include_stop_str_in_output",
    "seed",
    "n",
    "best_of",
    "logprobs",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
];
const HONOURED_COMPLETIONS: &[&str] = &["prompt", "echo"];
const HONOURED_CHAT: &[&str] = &[
    "messages",
    "max_completion_tokens",
    "top_logprobs",
    "reasoning_effort",
    "chat_template_kwargs",
    "tools",
    "tool_choice",
];
const HARMLESS: &[&str] = &[
    "user",
    "metadata",
    "store",
    "service_tier",
    "request_id",
    "cache_salt",
    "skip_special_tokens",
    "spaces_between_special_tokens",
    "add_special_tokens",
    "length_penalty",
    "parallel_tool_calls",
];

fn null(v: &Value) -> bool {
    v.is_null()
}
fn null_or_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}
fn null_or_false(v: &Value) -> bool {
    v.is_null() || v == &Value::Bool(false)
}
fn null_or_true(v: &Value) -> bool {
    v.is_null() || v == &Value::Bool(true)
}
fn null_or_zero(v: &Value) -> bool {
    v.is_null() || v.as_i64() == Some(0)
}
fn no_tool_choice(v: &Value) -> bool {
    v.is_null() || v == "none" || v == "auto"
}
fn text_format(v: &Value) -> bool {
    v.is_null() || v.get("type").is_some_and(|t| t == "text")
}
fn text_modality(v: &Value) -> bool {
    v.is_null() || v.as_array().is_some_and(|a| a.iter().all(|m| m == "text"))
}

/// Fields the simulator cannot honour: (name, accepted values, test).
type Neutral = (&'static str, &'static str, fn(&Value) -> bool);
const NEUTRAL: &[Neutral] = &[
    ("functions", "null or []", null_or_empty),
    ("function_call", "null or \"none\"", no_tool_choice),
    (
        "response_format",
        "null or {\"type\": \"text\"}",
        text_format,
    ),
    ("logit_bias", "null or {}", null_or_empty),
    ("stop_token_ids", "null or []", null_or_empty),
    ("bad_words", "null or []", null_or_empty),
    ("allowed_token_ids", "null", null),
    ("prompt_logprobs", "null", null),
    ("return_tokens_as_token_ids", "null or false", null_or_false),
    ("use_beam_search", "null or false", null_or_false),
    ("truncate_prompt_tokens", "null", null),
    ("priority", "null or 0", null_or_zero),
    ("guided_json", "null", null),
    ("guided_regex", "null", null),
    ("guided_choice", "null", null),
    ("guided_grammar", "null", null),
    ("guided_decoding_backend", "null", null),
    ("guided_whitespace_pattern", "null", null),
    ("structured_outputs", "null", null),
    ("modalities", "null or [\"text\"]", text_modality),
    ("audio", "null", null),
    ("prediction", "null", null),
    ("web_search_options", "null", null),
];
const NEUTRAL_COMPLETIONS: &[Neutral] = &[
    ("suffix", "null or \"\"", null_or_empty),
    ("tools", "null or []", null_or_empty),
    ("tool_choice", "null, \"none\" or \"auto\"", no_tool_choice),
];
const NEUTRAL_CHAT: &[Neutral] = &[
    ("echo", "null or false", null_or_false),
    ("add_generation_prompt", "null or true", null_or_true),
    ("continue_final_message", "null or false", null_or_false),
    ("chat_template", "null", null),
    ("documents", "null", null),
];

/// Reject unknown fields and unsupported values of known ones (module docs).
pub fn check_fields(body: &Map<String, Value>, endpoint: Endpoint) -> Result<(), ApiError> {
    let (honoured, neutral) = match endpoint {
        Endpoint::Completions => (HONOURED_COMPLETIONS, NEUTRAL_COMPLETIONS),
        Endpoint::Chat => (HONOURED_CHAT, NEUTRAL_CHAT),
    };
    for (key, value) in body {
        let k = key.as_str();
        if HONOURED.contains(&k) || honoured.contains(&k) || HARMLESS.contains(&k) {
            continue;
        }
        if let Some((name, accepted, ok)) = NEUTRAL.iter().chain(neutral).find(|n| n.0 == k) {
            if ok(value) {
                continue;
            }
            return Err(ApiError::bad_param(
                name,
                format!("`{name}` is not supported by goodput-sim (it accepts only {accepted})."),
            ));
        }
        return Err(ApiError::bad_param(
            k,
            format!(
                "Unknown field `{k}`: goodput-sim rejects fields it does not support \
                 rather than ignore them."
            ),
        ));
    }
    Ok(())
}

/// What the range checks leave for planning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Choices per prompt.
    pub n: u32,
    /// Top alternatives per token when logprobs were asked for.
    pub logprobs: Option<u32>,
    /// Prepend the prompt (completions).
    pub echo: bool,
}

fn float_in(
    name: &str,
    v: Option<f64>,
    ok: impl Fn(f64) -> bool,
    range: &str,
) -> Result<(), ApiError> {
    match v {
        Some(x) if !ok(x) => Err(ApiError::bad_param(
            name,
            format!("{name} must be {range}, got {x}."),
        )),
        _ => Ok(()),
    }
}

/// vLLM's checks of sampling values, `n`, `best_of` and logprobs, with its
/// messages.
pub fn check_values(req: &GenerationRequest, endpoint: Endpoint) -> Result<Checked, ApiError> {
    check_sampling(req)?;
    let n = check_n(req)?;
    check_lengths(req)?;
    if req.stream_options.is_some() && req.stream != Some(true) {
        return Err(ApiError::bad_param(
            "stream_options",
            "Stream options can only be defined when `stream=True`.",
        ));
    }
    Ok(Checked {
        n,
        logprobs: logprobs(req, endpoint)?,
        echo: req.echo == Some(true),
    })
}

/// Temperature, nucleus, penalties and `top_k`.
fn check_sampling(req: &GenerationRequest) -> Result<(), ApiError> {
    float_in("temperature", req.temperature, |t| t >= 0.0, "non-negative")?;
    float_in("top_p", req.top_p, |p| p > 0.0 && p <= 1.0, "in (0, 1]")?;
    float_in(
        "min_p",
        req.min_p,
        |p| (0.0..=1.0).contains(&p),
        "in [0, 1]",
    )?;
    for (name, v) in [
        ("presence_penalty", req.presence_penalty),
        ("frequency_penalty", req.frequency_penalty),
    ] {
        float_in(name, v, |x| (-2.0..=2.0).contains(&x), "in [-2, 2]")?;
    }
    float_in(
        "repetition_penalty",
        req.repetition_penalty,
        |x| x > 0.0,
        "greater than zero",
    )?;
    if let Some(k) = req.top_k {
        if k < -1 {
            return Err(ApiError::bad_param(
                "top_k",
                format!("top_k must be -1 (disable), 0 (disable), or at least 1, got {k}."),
            ));
        }
    }
    Ok(())
}

/// `n` within 1..=[`MAX_N`], and `best_of` (if given) equal to it.
fn check_n(req: &GenerationRequest) -> Result<u32, ApiError> {
    let n = req.n.unwrap_or(1);
    if n < 1 {
        return Err(ApiError::bad_param(
            "n",
            format!("n must be at least 1, got {n}."),
        ));
    }
    if n > MAX_N {
        return Err(ApiError::bad_param(
            "n",
            format!("n must be at most {MAX_N} on goodput-sim, got {n}."),
        ));
    }
    if let Some(b) = req.best_of {
        if b < n {
            return Err(ApiError::bad_param(
                "best_of",
                format!("best_of must be greater than or equal to n, got n={n} and best_of={b}."),
            ));
        }
        if b > n {
            return Err(ApiError::bad_param(
                "best_of",
                "best_of > n is not supported by goodput-sim.",
            ));
        }
    }
    // 1..=MAX_N (checked above).
    Ok(n as u32)
}

/// `max_tokens`, `max_completion_tokens` and `min_tokens` signs; their
/// bounds against the context are the plan's.
fn check_lengths(req: &GenerationRequest) -> Result<(), ApiError> {
    for (name, v) in [
        ("max_tokens", req.max_tokens),
        ("max_completion_tokens", req.max_completion_tokens),
    ] {
        if let Some(m) = v {
            if m < 1 {
                return Err(ApiError::bad_param(
                    name,
                    format!("{name} must be at least 1, got {m}."),
                ));
            }
        }
    }
    if let Some(m) = req.min_tokens {
        if m < 0 {
            return Err(ApiError::bad_param(
                "min_tokens",
                format!("min_tokens must be greater than or equal to 0, got {m}."),
            ));
        }
    }
    Ok(())
}

fn logprobs(req: &GenerationRequest, endpoint: Endpoint) -> Result<Option<u32>, ApiError> {
    let (name, top) = match endpoint {
        Endpoint::Completions => match &req.logprobs {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => match v.as_i64() {
                Some(k) => ("logprobs", k),
                None => {
                    return Err(ApiError::bad_param(
                        "logprobs",
                        format!("`logprobs` must be an integer, got {v}."),
                    ))
                }
            },
        },
        Endpoint::Chat => {
            let on = match &req.logprobs {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(v) => {
                    return Err(ApiError::bad_param(
                        "logprobs",
                        format!("`logprobs` must be a boolean, got {v}."),
                    ))
                }
            };
            let top = req.top_logprobs.unwrap_or(0);
            if top > 0 && !on {
                return Err(ApiError::bad_param(
                    "top_logprobs",
                    "when using `top_logprobs`, `logprobs` must be set to true.",
                ));
            }
            if !on {
                return Ok(None);
            }
            ("top_logprobs", top)
        }
    };
    if top < 0 {
        return Err(ApiError::bad_param(
            name,
            format!("`{name}` must be a positive value."),
        ));
    }
    if top > MAX_LOGPROBS {
        return Err(ApiError::bad_param(
            name,
            format!(
                "Requested sample logprobs of {top}, which is greater than max allowed: \
                 {MAX_LOGPROBS}"
            ),
        ));
    }
    Ok(Some(top as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value, e: Endpoint) -> Result<(), ApiError> {
        check_fields(v.as_object().unwrap(), e)
    }

    fn values(v: Value, e: Endpoint) -> Result<Checked, ApiError> {
        check_values(&serde_json::from_value(v).unwrap(), e)
    }

    #[test]
    fn unknown_and_unsupported_fields_are_named() {
        let c = Endpoint::Completions;
        assert!(fields(json!({"prompt": "x", "user": "u", "suffix": null}), c).is_ok());
        let e = fields(json!({"prompt": "x", "suffix": "end"}), c).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("suffix"));
        assert!(
            e.message.contains("`suffix` is not supported"),
            "{}",
            e.message
        );
        let e = fields(json!({"prompt": "x", "frobnicate": 1}), c).unwrap_err();
        assert!(e.message.contains("Unknown field `frobnicate`"));
        // `messages` belongs to chat, `echo` to completions only when true.
        assert!(fields(json!({"messages": []}), c).is_err());
        let chat = Endpoint::Chat;
        assert!(fields(json!({"messages": [], "tools": [], "echo": false}), chat).is_ok());
        let e = fields(
            json!({"messages": [], "response_format": {"type": "json_object"}}),
            chat,
        )
        .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("response_format"));
        assert!(fields(
            json!({"messages": [], "response_format": {"type": "text"}}),
            chat
        )
        .is_ok());
    }

    #[test]
    fn out_of_range_values_get_vllm_messages() {
        let c = Endpoint::Completions;
        let e = values(json!({"temperature": -0.5}), c).unwrap_err();
        assert_eq!(e.message, "temperature must be non-negative, got -0.5.");
        assert_eq!(e.param.as_deref(), Some("temperature"));
        assert!(values(json!({"temperature": 0.0, "top_p": 1.0}), c).is_ok());
        assert!(values(json!({"top_p": 0.0}), c).is_err());
        assert!(values(json!({"n": 0}), c).is_err());
        assert!(values(json!({"n": MAX_N + 1}), c).is_err());
        assert!(values(json!({"n": 2, "best_of": 1}), c).is_err());
        assert!(values(json!({"n": 2, "best_of": 3}), c).is_err());
        assert_eq!(values(json!({"n": 2, "best_of": 2}), c).unwrap().n, 2);
        assert!(values(json!({"max_tokens": 0}), c).is_err());
        assert!(values(json!({"max_tokens": -3}), c).is_err());
        assert!(values(json!({"presence_penalty": 2.5}), c).is_err());
        assert!(values(json!({"stream_options": {"include_usage": true}}), c).is_err());
        assert_eq!(values(json!({"logprobs": 3}), c).unwrap().logprobs, Some(3));
        assert!(values(json!({"logprobs": 21}), c).is_err());
        assert!(values(json!({"logprobs": -1}), c).is_err());
        let chat = Endpoint::Chat;
        assert_eq!(
            values(json!({"logprobs": true}), chat).unwrap().logprobs,
            Some(0)
        );
        assert!(values(json!({"top_logprobs": 2}), chat).is_err());
        assert_eq!(
            values(json!({"logprobs": true, "top_logprobs": 2}), chat)
                .unwrap()
                .logprobs,
            Some(2)
        );
        assert!(values(json!({"logprobs": 2}), chat).is_err());
    }
}
