//! `[workload]`: what each request asks for.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[workload]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// `synthetic` (default) or `jsonl`.
    #[serde(default)]
    pub kind: WorkloadKind,
    /// Synthetic: prompt length in tokens.
    #[serde(default)]
    pub input_tokens: Option<u32>,
    /// Output length in tokens (synthetic requests ask for exactly this many with
    /// `max_tokens`, `min_tokens` and `ignore_eos`); for JSONL, the default
    /// `max_tokens` of prompts that give none.
    #[serde(default)]
    pub output_tokens: Option<u32>,
    /// Lengths drawn uniformly from `[L(1-r), L(1+r)]`.
    #[serde(default)]
    pub range_ratio: f64,
    /// Synthetic text: `random` words, or `repetitive` text in which n-gram
    /// speculative decoding finds drafts.
    #[serde(default)]
    pub text: TextStyle,
    /// JSONL: path of the prompt file (relative to the profile).
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// Calibrate synthetic prompt lengths through the engine's `/tokenize`.
    #[serde(default = "yes")]
    pub calibrate: bool,
    /// Prefix: number of distinct shared prefixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<u32>,
    /// Prefix: tokens of each shared prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_tokens: Option<u32>,
    /// Prefix: tokens of each request's own text after the prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suffix_tokens: Option<u32>,
    /// Trace: `mooncake` (default) or `azure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<crate::workload::trace::TraceFormat>,
    /// Trace (mooncake): tokens per hash id (default 512).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_tokens: Option<u32>,
    /// Trace: replay at most this many requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u32>,
    /// Trace: skip requests before this many seconds into the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
    /// Trace: replay this many seconds of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// Trace: clip prompts to this many tokens (the report counts the clipped).
    /// ShareGPT: drop prompts longer than this (default 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u32>,
    /// Conversation: turns per session (each a user message of `input_tokens` and a
    /// reply of `output_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// Conversation: ms between a reply's end and the session's next turn (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time_ms: Option<u64>,
    /// Conversation: the engine's context in tokens; a history that would not fit
    /// loses its oldest turns (counted in the report). Default: the engine's
    /// `max_model_len` from `/v1/models`, when it lists one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context_tokens: Option<u32>,
    /// Conversation: where the user messages come from: `synthetic` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::workload::conversation::ConversationSource>,
    /// ShareGPT: conversations to sample (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_prompts: Option<u32>,
    /// ShareGPT: drop pairs whose prompt + output is longer than this (default 2048).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u32>,
    /// ShareGPT: a Hugging Face `tokenizer.json` that counts tokens when the engine
    /// has no `/tokenize` (relative to the profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<PathBuf>,
    /// Chat API: `reasoning_effort` sent with every request (`low`, `medium`,
    /// `high`: what the model accepts); an engine's own value wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Chat API: `chat_template_kwargs` sent with every request (e.g.
    /// `{ enable_thinking = false }`); an engine's own keys win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
}

fn yes() -> bool {
    true
}

/// Kind of workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// Generated prompts of given lengths.
    #[default]
    Synthetic,
    /// Prompts from a JSON Lines file: `{"prompt": "...", "max_tokens": 64}`.
    Jsonl,
    /// Groups of requests sharing a prefix of `prefix_tokens`.
    Prefix,
    /// A timestamped trace replayed at its own times (`[load] mode = "trace"`).
    Trace,
    /// Multi-turn chat sessions; each turn carries the whole history, replies
    /// included.
    Conversation,
    /// Prompts sampled from the ShareGPT V3 conversations as vLLM's benchmark does.
    Sharegpt,
}

/// Style of synthetic text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TextStyle {
    /// Random words from a fixed vocabulary.
    #[default]
    Random,
    /// A short passage repeated, so output can copy from the prompt.
    Repetitive,
}
