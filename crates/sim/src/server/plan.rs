//! A validated request becomes a [`Plan`]: one [`Job`] per choice (a list
//! of P prompts with `n` choices gives P * n jobs, numbered as vLLM numbers
//! them: `prompt_index * n + i`), each with its prompt length, the exact
//! number of tokens it will produce (after `max_tokens`, the pseudo-EOS point
//! unless `ignore_eos`, `min_tokens` and `stop` strings) and its text seed.
//! Every job is its own sequence in the model.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::openai::{render_chat, ApiError, GenerationRequest, PromptInput, StopInput};
use super::params::{self, Checked, MAX_SEQUENCES, MAX_STOPS, MAX_STOP_BYTES};
use crate::config::SimConfig;
use crate::text;

/// Which endpoint a request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/completions`.
    Completions,
    /// `/v1/chat/completions`.
    Chat,
}

/// One choice of a response; one sequence in the model.
#[derive(Debug, Clone)]
pub struct Job {
    /// `choices[].index`.
    pub index: u32,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Tokens the choice will produce.
    pub output_tokens: u32,
    /// `length` or `stop`.
    pub finish_reason: &'static str,
    /// The stop string that ended the text, if one did.
    pub stop_reason: Option<String>,
    /// Byte length of the returned text when a stop string cut it.
    pub text_limit: Option<usize>,
    /// Seed of the generated words.
    pub text_seed: u64,
    /// The prompt text, when `echo` prepends it.
    pub echo: Option<Arc<str>>,
    /// The prompt's token ids (for the model's prefix cache).
    pub prompt_ids: Arc<[u32]>,
    /// Of `output_tokens`, how many come first as thinking (`delta.reasoning`).
    pub reasoning_tokens: u32,
    /// The answer is this tool call (`delta.tool_calls`), not text.
    pub tool_call: Option<Arc<super::tools::ToolCall>>,
}

/// A validated request.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The endpoint the request came from.
    pub endpoint: Endpoint,
    /// SSE or one JSON.
    pub stream: bool,
    /// Send the usage chunk.
    pub include_usage: bool,
    /// `usage` on every token chunk too (`continuous_usage_stats` with
    /// `include_usage`, as vLLM's `should_include_usage` decides).
    pub continuous_usage: bool,
    /// Top alternatives per token, when logprobs were asked for.
    pub logprobs: Option<u32>,
    /// `usage.prompt_tokens`: each prompt once, however many choices it has.
    pub prompt_tokens: u64,
    /// The choices, in index order.
    pub jobs: Vec<Job>,
}

/// One prompt: its length, a hash of its content (the default text seed)
/// and its text (for `echo`).
struct Prompt {
    tokens: usize,
    hash: u64,
    text: Option<Arc<str>>,
    ids: Arc<[u32]>,
}

fn ids_hash(ids: &[u32]) -> u64 {
    ids.iter()
        .fold(0x1234_5678_u64, |h, &i| text::mix(h ^ u64::from(i)))
}

fn text_prompt(t: &str, echo: bool) -> Prompt {
    Prompt {
        tokens: text::count_tokens(t),
        hash: text::fnv1a(t.as_bytes()),
        text: echo.then(|| t.into()),
        ids: text::tokenize(t).into(),
    }
}

fn ids_prompt(ids: &[u32], echo: bool) -> Result<Prompt, ApiError> {
    if let Some(&bad) = ids.iter().find(|&&i| !text::is_token_id(i)) {
        return Err(ApiError::bad_param(
            "prompt",
            format!("Token id {bad} is out of vocabulary"),
        ));
    }
    // Valid ids (checked above) always detokenize.
    let text = echo.then(|| text::detokenize(ids).unwrap_or_default().into());
    Ok(Prompt {
        tokens: ids.len(),
        hash: ids_hash(ids),
        text,
        ids: ids.into(),
    })
}

fn prompts_of(
    req: &GenerationRequest,
    endpoint: Endpoint,
    echo: bool,
) -> Result<Vec<Prompt>, ApiError> {
    match endpoint {
        Endpoint::Chat => {
            let messages = req
                .messages
                .as_ref()
                .ok_or_else(|| ApiError::bad_param("messages", "`messages` is required"))?;
            let mut prompt = text_prompt(&render_chat(messages), false);
            let images = super::images::images(messages)?;
            if !images.is_empty() {
                let mut ids = prompt.ids.to_vec();
                for im in &images {
                    ids.extend(im.ids());
                    prompt.hash = text::mix(prompt.hash ^ im.hash);
                }
                (prompt.tokens, prompt.ids) = (ids.len(), ids.into());
            }
            Ok(vec![prompt])
        }
        Endpoint::Completions => {
            let prompt = req
                .prompt
                .as_ref()
                .ok_or_else(|| ApiError::bad_param("prompt", "`prompt` is required"))?;
            let count = match prompt {
                PromptInput::Text(_) | PromptInput::Ids(_) => 1,
                PromptInput::Texts(v) => v.len(),
                PromptInput::IdLists(v) => v.len(),
            };
            if count == 0 {
                return Err(ApiError::bad_param("prompt", "The prompt list is empty."));
            }
            if count > MAX_SEQUENCES {
                return Err(ApiError::bad_param(
                    "prompt",
                    format!(
                        "A batch of {count} prompts is more than goodput-sim accepts \
                         ({MAX_SEQUENCES})."
                    ),
                ));
            }
            match prompt {
                PromptInput::Text(t) => Ok(vec![text_prompt(t, echo)]),
                PromptInput::Ids(ids) => Ok(vec![ids_prompt(ids, echo)?]),
                PromptInput::Texts(ts) => Ok(ts.iter().map(|t| text_prompt(t, echo)).collect()),
                PromptInput::IdLists(ls) => ls.iter().map(|l| ids_prompt(l, echo)).collect(),
            }
        }
    }
}

/// vLLM's message for a request longer than the model's context.
fn context_error(max_len: usize, prompt: usize, completion: Option<usize>) -> ApiError {
    let message = match completion {
        Some(k) => format!(
            "This model's maximum context length is {max_len} tokens. However, you requested \
             {} tokens ({prompt} in the messages, {k} in the completion). \
             Please reduce the length of the messages or completion.",
            prompt + k
        ),
        None => format!(
            "This model's maximum context length is {max_len} tokens. However, you requested \
             {prompt} tokens in the messages. Please reduce the length of the messages."
        ),
    };
    ApiError::bad_param("prompt", message)
}

/// Seed of choice `i` from a base seed; choice 0 keeps the base, so a
/// request with `n = 1` generates what it always did.
fn choice_seed(base: u64, i: u64) -> u64 {
    match i {
        0 => base,
        _ => text::mix(base ^ i.wrapping_mul(0xA076_1D64_78BD_642F)),
    }
}

/// Check a request body (fields, then values) and plan its output.
pub fn plan_body(
    body: Map<String, Value>,
    endpoint: Endpoint,
    config: &SimConfig,
) -> Result<Plan, ApiError> {
    params::check_fields(&body, endpoint)?;
    let req: GenerationRequest = serde_json::from_value(Value::Object(body))
        .map_err(|e| ApiError::bad_request(format!("Invalid request body: {e}")))?;
    plan(&req, endpoint, config)
}

/// Validate a request against the configuration and plan its output.
pub fn plan(
    req: &GenerationRequest,
    endpoint: Endpoint,
    config: &SimConfig,
) -> Result<Plan, ApiError> {
    let Checked { n, logprobs, echo } = params::check_values(req, endpoint)?;
    let prompts = prompts_of(req, endpoint, echo)?;
    check_sequences(prompts.len(), n)?;
    let stops = stops_of(req)?;
    let thinking = super::reasoning::effort(req, endpoint, config)?;
    let key = prompts.first().map_or(0, |p| p.hash);
    let tool_call = super::tools::tool_call(req, endpoint, config, key)?.map(Arc::new);
    let requested = requested_tokens(req, endpoint);
    let mut jobs = Vec::with_capacity(prompts.len() * n as usize);
    let mut prompt_usage = 0u64;
    for (p, prompt) in prompts.iter().enumerate() {
        let bounds = token_bounds(req, endpoint, config, prompt.tokens, requested)?;
        prompt_usage += prompt.tokens as u64;
        for i in 0..n {
            let mut job = job(req, config, prompt, bounds, &stops, p as u32 * n + i, i);
            think(&mut job, req, config, thinking, bounds.0);
            if let Some(call) = &tool_call {
                job.tool_call = Some(call.clone());
                (job.finish_reason, job.stop_reason, job.text_limit) = ("tool_calls", None, None);
            }
            jobs.push(job);
        }
    }
    Ok(Plan {
        endpoint,
        stream: req.stream == Some(true),
        include_usage: req
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
        continuous_usage: req.stream_options.as_ref().is_some_and(|o| {
            o.include_usage == Some(true) && o.continuous_usage_stats == Some(true)
        }),
        logprobs,
        prompt_tokens: prompt_usage,
        jobs,
    })
}

/// At most [`MAX_SEQUENCES`] sequences: `prompts` times `n`.
fn check_sequences(prompts: usize, n: u32) -> Result<(), ApiError> {
    let sequences = prompts * n as usize;
    if sequences > MAX_SEQUENCES {
        return Err(ApiError::bad_param(
            "n",
            format!(
                "{prompts} prompts with n = {n} make {sequences} sequences, more than \
                 goodput-sim accepts ({MAX_SEQUENCES})."
            ),
        ));
    }
    Ok(())
}

/// The request's stop strings, within [`MAX_STOPS`] and [`MAX_STOP_BYTES`].
fn stops_of(req: &GenerationRequest) -> Result<Vec<String>, ApiError> {
    let stops: Vec<String> = match &req.stop {
        None => Vec::new(),
        Some(StopInput::One(s)) => vec![s.clone()],
        Some(StopInput::Many(v)) => v.clone(),
    };
    if stops.len() > MAX_STOPS || stops.iter().any(|s| s.len() > MAX_STOP_BYTES) {
        return Err(ApiError::bad_param(
            "stop",
            format!(
                "goodput-sim accepts at most {MAX_STOPS} stop strings of at most \
                 {MAX_STOP_BYTES} bytes each."
            ),
        ));
    }
    Ok(stops)
}

/// The `max_tokens` the client asked for (`max_completion_tokens` first on chat).
fn requested_tokens(req: &GenerationRequest, endpoint: Endpoint) -> Option<usize> {
    let requested = match endpoint {
        Endpoint::Chat => req.max_completion_tokens.or(req.max_tokens),
        Endpoint::Completions => req.max_tokens,
    };
    // Positive (checked), and anything above max_model_len fails in `token_bounds`.
    requested.map(|m| usize::try_from(m).unwrap_or(usize::MAX))
}

/// The (max, min) output tokens of one prompt's choices, after checking that
/// the prompt fits the context and the KV cache and that `min_tokens` fits.
fn token_bounds(
    req: &GenerationRequest,
    endpoint: Endpoint,
    config: &SimConfig,
    prompt_len: usize,
    requested: Option<usize>,
) -> Result<(u32, u32), ApiError> {
    let max_len = config.max_model_len as usize;
    let kv = config.kv_capacity_tokens() as usize;
    if prompt_len == 0 {
        return Err(ApiError::bad_param(
            "prompt",
            "The prompt is empty (0 tokens).",
        ));
    }
    match requested {
        Some(k) if prompt_len.saturating_add(k) > max_len => {
            return Err(context_error(max_len, prompt_len, Some(k)))
        }
        None if prompt_len >= max_len => return Err(context_error(max_len, prompt_len, None)),
        _ => {}
    }
    if prompt_len > kv {
        // Unreachable with a validated config (max_model_len <= KV capacity).
        return Err(ApiError::bad_param(
            "prompt",
            format!(
                "The prompt ({prompt_len} tokens) is larger than the KV cache ({kv} tokens); \
                 it can never be scheduled."
            ),
        ));
    }
    let max_tokens = match (requested, endpoint) {
        (Some(m), _) => m,
        (None, Endpoint::Completions) => 16.min(max_len - prompt_len),
        (None, Endpoint::Chat) => max_len - prompt_len,
    };
    let min_tokens = usize::try_from(req.min_tokens.unwrap_or(0)).unwrap_or(usize::MAX);
    if min_tokens > max_tokens {
        return Err(ApiError::bad_param(
            "min_tokens",
            format!(
                "min_tokens must be less than or equal to max_tokens={max_tokens}, \
                 got {min_tokens}."
            ),
        ));
    }
    // Both fit in u32: bounded by max_model_len.
    Ok((max_tokens as u32, min_tokens as u32))
}

/// Choice `i` of a prompt, response index `index`: its seed, and where the
/// pseudo-EOS point or a stop string ends it.
fn job(
    req: &GenerationRequest,
    config: &SimConfig,
    prompt: &Prompt,
    (max_tokens, min_tokens): (u32, u32),
    stops: &[String],
    index: u32,
    i: u32,
) -> Job {
    let text_seed = match req.seed {
        Some(s) => choice_seed(text::mix(s as u64 ^ config.seed), u64::from(index)),
        None => choice_seed(text::mix(prompt.hash ^ config.seed), u64::from(i)),
    };
    let mut job = Job {
        index,
        prompt_tokens: prompt.tokens as u32,
        output_tokens: max_tokens,
        finish_reason: "length",
        stop_reason: None,
        text_limit: None,
        text_seed,
        echo: prompt.text.clone(),
        prompt_ids: prompt.ids.clone(),
        reasoning_tokens: 0,
        tool_call: None,
    };
    if req.ignore_eos != Some(true) {
        let eos = text::eos_point(text_seed).max(min_tokens).max(1);
        if eos < job.output_tokens {
            job.output_tokens = eos;
            job.finish_reason = "stop";
        }
    }
    let floor = min_tokens.max(1);
    if let Some(m) = text::find_stop(text_seed, job.output_tokens, stops, floor) {
        job.output_tokens = m.tokens;
        job.finish_reason = "stop";
        job.text_limit = Some(match req.include_stop_str_in_output {
            Some(true) => m.cut + m.stop.len(),
            _ => m.cut,
        });
        job.stop_reason = Some(m.stop);
    }
    job
}

/// A thinking job (`thinking`: the request's factor on the reasoning phase): its
/// thinking tokens come first, and its pseudo end of sequence falls after them, in
/// the answer; `max_tokens` still bounds the whole, thinking included.
fn think(job: &mut Job, req: &GenerationRequest, config: &SimConfig, thinking: f64, max: u32) {
    let r = super::reasoning::tokens(config, thinking, job.text_seed);
    if r == 0 {
        return;
    }
    if job.finish_reason == "stop" && job.stop_reason.is_none() && req.ignore_eos != Some(true) {
        // The pseudo end of sequence counts answer tokens.
        job.output_tokens = job.output_tokens.saturating_add(r).min(max);
        if job.output_tokens == max {
            job.finish_reason = "length";
        }
    }
    job.reasoning_tokens = r.min(job.output_tokens);
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use serde_json::json;

    fn req(v: Value) -> GenerationRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn plans_lengths_and_limits() {
        let c = SimConfig::default();
        let p = plan(
            &req(json!({"prompt": "a b c", "max_tokens": 50, "ignore_eos": true})),
            Endpoint::Completions,
            &c,
        )
        .unwrap();
        let j = &p.jobs[0];
        assert_eq!(
            (j.prompt_tokens, j.output_tokens, j.finish_reason),
            (3, 50, "length")
        );
        let p = plan(
            &req(json!({"prompt": [1, 2, 3, 4]})),
            Endpoint::Completions,
            &c,
        )
        .unwrap();
        assert_eq!((p.jobs[0].prompt_tokens, p.jobs[0].output_tokens), (4, 16));
        let p = plan(
            &req(
                json!({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 5,
                        "ignore_eos": true}),
            ),
            Endpoint::Chat,
            &c,
        )
        .unwrap();
        assert_eq!(p.jobs[0].output_tokens, 5);
        assert_eq!(
            p.jobs[0].prompt_tokens as usize,
            text::count_tokens("<|user|>\nhi\n<|assistant|>\n")
        );
    }

    #[test]
    fn prompt_lists_and_n_make_one_job_per_choice() {
        let c = SimConfig::default();
        let p = plan(
            &req(json!({"prompt": ["a", "b c", "d e f"], "n": 2, "max_tokens": 4, "seed": 1})),
            Endpoint::Completions,
            &c,
        )
        .unwrap();
        let idx: Vec<u32> = p.jobs.iter().map(|j| j.index).collect();
        assert_eq!(idx, [0, 1, 2, 3, 4, 5]);
        let lens: Vec<u32> = p.jobs.iter().map(|j| j.prompt_tokens).collect();
        assert_eq!(lens, [1, 1, 2, 2, 3, 3]);
        assert_eq!(p.prompt_tokens, 6);
        let mut seeds: Vec<u64> = p.jobs.iter().map(|j| j.text_seed).collect();
        seeds.dedup();
        assert_eq!(seeds.len(), 6, "every choice has its own text");
        let e = plan(
            &req(json!({"prompt": vec!["x"; 3], "n": 100})),
            Endpoint::Completions,
            &c,
        )
        .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("n"));
        assert!(plan(&req(json!({"prompt": []})), Endpoint::Completions, &c).is_err());
        assert!(plan(&req(json!({"prompt": [99999]})), Endpoint::Completions, &c).is_err());
    }

    #[test]
    fn eos_never_before_min_tokens() {
        let c = SimConfig::default();
        for seed in 0..50 {
            let p = plan(
                &req(json!({"prompt": "x", "max_tokens": 3000, "min_tokens": 1500, "seed": seed})),
                Endpoint::Completions,
                &c,
            )
            .unwrap();
            assert!(p.jobs[0].output_tokens >= 1500);
            assert_eq!(p.jobs[0].finish_reason, "stop");
        }
    }

    #[test]
    fn over_long_prompts_get_one_vllm_message() {
        let c = crate::config::preset("vllm-fast-b").unwrap();
        for body in [
            json!({"prompt": "w ".repeat(3000)}),
            json!({"prompt": "w ".repeat(2048)}),
            json!({"prompt": "w ".repeat(2000), "max_tokens": 100}),
            json!({"prompt": "w ".repeat(3000), "max_tokens": 1}),
        ] {
            let e = plan(&req(body), Endpoint::Completions, &c).unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST);
            assert!(
                e.message
                    .starts_with("This model's maximum context length is 2048 tokens."),
                "{}",
                e.message
            );
            assert_eq!(e.body()["error"]["code"], 400);
        }
        let e = plan(
            &req(json!({"prompt": "w ".repeat(2000), "max_tokens": 100})),
            Endpoint::Completions,
            &c,
        )
        .unwrap_err();
        assert!(
            e.message.contains(
                "you requested 2100 tokens (2000 in the messages, 100 in the completion)"
            ),
            "{}",
            e.message
        );
    }
}
