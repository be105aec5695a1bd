//! `[workload]`: what each request asks for.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod layout;
pub use layout::{FlatWorkload, WrittenWorkload};

/// `[workload]`: one variant per kind, each with its own keys. A key of another
/// kind is refused, naming the key and the kind ([`stray_key`]; with its line
/// when read from a file). Read through [`WrittenWorkload`] (every key as written,
/// `kind` defaulting to `synthetic`), written as [`FlatWorkload`], the one layout
/// the report's `workload` and the plan's fingerprint have always had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "WrittenWorkload", into = "FlatWorkload")]
pub enum WorkloadSpec {
    /// Generated prompts of given lengths.
    Synthetic(SyntheticSpec),
    /// Prompts from a JSON Lines file.
    Jsonl(JsonlSpec),
    /// Groups of requests sharing a prefix.
    Prefix(PrefixSpec),
    /// A timestamped trace replayed at its own times.
    Trace(TraceSpec),
    /// Multi-turn chat sessions.
    Conversation(ConversationSpec),
    /// Prompts sampled from ShareGPT.
    Sharegpt(SharegptSpec),
}

/// The chat API's controls, and the prompt salt: the keys every kind takes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatControls {
    /// `reasoning_effort` sent with every request (`low`, `medium`, `high`: what
    /// the model accepts); an engine's own value wins.
    pub reasoning_effort: Option<String>,
    /// `chat_template_kwargs` sent with every request (e.g.
    /// `{ enable_thinking = false }`); an engine's own keys win.
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
    /// `salt = true`: every prompt starts with a random string drawn for the run
    /// ([`crate::define::requests::salt`]), so no run finds another's prompts in the
    /// engine's prefix cache.
    pub salt: bool,
    /// `tools = N`: every chat request carries N function definitions in `tools`,
    /// drawn from the run's seed ([`crate::define::plan::tools`]).
    pub tools: Option<u32>,
    /// `tool_choice` sent with them: `auto` (the default), `required` or `none`.
    pub tool_choice: Option<String>,
    /// `[workload.adapters]`: LoRA adapter name -> weight; each request names one
    /// in `model`, drawn by weight ([`crate::define::plan`]'s adapter checks).
    pub adapters: Option<indexmap::IndexMap<String, f64>>,
    /// `images = N`: every chat request carries N generated images
    /// ([`crate::define::requests::images`]).
    pub images: Option<u32>,
    /// `image_size = [W, H]` of each image, pixels (default 512 × 512).
    pub image_size: Option<[u32; 2]>,
    /// `image_format`: `png` (the default) or `jpeg`.
    pub image_format: Option<String>,
}

/// `kind = "synthetic"`.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    /// Prompt length in tokens (required).
    pub input_tokens: Option<u32>,
    /// Output length in tokens (required): asked for exactly, with `max_tokens`,
    /// `min_tokens` and `ignore_eos`.
    pub output_tokens: Option<u32>,
    /// Lengths drawn uniformly from `[L(1-r), L(1+r)]`.
    pub range_ratio: f64,
    /// `random` words, or `repetitive` text in which n-gram speculative decoding
    /// finds drafts.
    pub text: TextStyle,
    /// Calibrate prompt lengths through the engine's `/tokenize`.
    pub calibrate: bool,
    /// `api = "embeddings"` engines: texts (each of `input_tokens`) a request
    /// carries in `input` (default 1).
    pub inputs: Option<u32>,
    /// The chat API's controls.
    pub chat: ChatControls,
}

/// `kind = "jsonl"`.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonlSpec {
    /// Path of the prompt file (relative to the profile; required).
    pub path: Option<PathBuf>,
    /// The `max_tokens` of prompts that give none.
    pub output_tokens: Option<u32>,
    /// The chat API's controls.
    pub chat: ChatControls,
}

/// `kind = "prefix"`.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixSpec {
    /// Number of distinct shared prefixes.
    pub groups: Option<u32>,
    /// Tokens of each shared prefix.
    pub prefix_tokens: Option<u32>,
    /// Tokens of each request's own text after the prefix.
    pub suffix_tokens: Option<u32>,
    /// Output length in tokens.
    pub output_tokens: Option<u32>,
    /// Calibrate prompt lengths through the engine's `/tokenize`.
    pub calibrate: bool,
    /// The chat API's controls.
    pub chat: ChatControls,
}

/// `kind = "trace"`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSpec {
    /// The trace file (relative to the profile; required).
    pub path: Option<PathBuf>,
    /// `mooncake` (default) or `azure`.
    pub format: Option<TraceFormat>,
    /// Mooncake: tokens per hash id (default 512).
    pub block_tokens: Option<u32>,
    /// Replay at most this many requests.
    pub max_requests: Option<u32>,
    /// Skip requests before this many seconds into the trace.
    pub start_s: Option<f64>,
    /// Replay this many seconds of it.
    pub duration_s: Option<f64>,
    /// Clip prompts to this many tokens (the report counts the clipped).
    pub max_input_tokens: Option<u32>,
    /// Calibrate prompt lengths through the engine's `/tokenize`.
    pub calibrate: bool,
    /// The chat API's controls.
    pub chat: ChatControls,
}

/// `kind = "conversation"`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationSpec {
    /// Turns per session (required).
    pub turns: Option<u32>,
    /// Tokens of each user message (required).
    pub input_tokens: Option<u32>,
    /// Tokens of each reply (required).
    pub output_tokens: Option<u32>,
    /// Lengths drawn uniformly from `[L(1-r), L(1+r)]`.
    pub range_ratio: f64,
    /// Style of the synthetic user messages.
    pub text: TextStyle,
    /// Calibrate message lengths through the engine's `/tokenize`.
    pub calibrate: bool,
    /// ms between a reply's end and the session's next turn (default 0).
    pub think_time_ms: Option<u64>,
    /// The engine's context in tokens; a history that would not fit loses its
    /// oldest turns. Default: the engine's `max_model_len`, when it lists one.
    pub max_context_tokens: Option<u32>,
    /// Where the user messages come from: `synthetic` (default) or `sharegpt`.
    pub source: Option<ConversationSource>,
    /// `source = "sharegpt"`: the ShareGPT file (default: the installed one).
    pub path: Option<PathBuf>,
    /// The chat API's controls.
    pub chat: ChatControls,
}

/// `kind = "sharegpt"`.
#[derive(Debug, Clone, PartialEq)]
pub struct SharegptSpec {
    /// The ShareGPT file (default: the installed one).
    pub path: Option<PathBuf>,
    /// Conversations to sample (default 1000).
    pub num_prompts: Option<u32>,
    /// Output length in tokens, instead of each conversation's reply length.
    pub output_tokens: Option<u32>,
    /// Drop prompts longer than this (default 1024).
    pub max_input_tokens: Option<u32>,
    /// Drop pairs whose prompt + output is longer than this (default 2048).
    pub max_total_tokens: Option<u32>,
    /// A Hugging Face `tokenizer.json` that counts tokens when the engine has no
    /// `/tokenize` (relative to the profile).
    pub tokenizer: Option<PathBuf>,
    /// The chat API's controls.
    pub chat: ChatControls,
}

/// The keys every kind takes.
const COMMON_KEYS: &[&str] = &[
    "kind",
    "reasoning_effort",
    "chat_template_kwargs",
    "salt",
    "tools",
    "tool_choice",
    "adapters",
    "images",
    "image_size",
    "image_format",
];

/// The keys of a kind's `[workload]` (besides `kind` and the chat controls).
pub fn keys(kind: WorkloadKind) -> &'static [&'static str] {
    match kind {
        WorkloadKind::Synthetic => &[
            "input_tokens",
            "output_tokens",
            "range_ratio",
            "text",
            "calibrate",
            "inputs",
        ],
        WorkloadKind::Jsonl => &["path", "output_tokens"],
        WorkloadKind::Prefix => &[
            "groups",
            "prefix_tokens",
            "suffix_tokens",
            "output_tokens",
            "calibrate",
        ],
        WorkloadKind::Trace => &[
            "path",
            "format",
            "block_tokens",
            "max_requests",
            "start_s",
            "duration_s",
            "max_input_tokens",
            "calibrate",
        ],
        WorkloadKind::Conversation => &[
            "turns",
            "input_tokens",
            "output_tokens",
            "range_ratio",
            "text",
            "calibrate",
            "think_time_ms",
            "max_context_tokens",
            "source",
            "path",
        ],
        WorkloadKind::Sharegpt => &[
            "path",
            "num_prompts",
            "output_tokens",
            "max_input_tokens",
            "max_total_tokens",
            "tokenizer",
        ],
    }
}

/// A `[workload]` key (among `given`) that a workload of `kind` does not take.
pub fn stray_key<'a>(
    kind: WorkloadKind,
    given: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    given
        .into_iter()
        .find(|k| !COMMON_KEYS.contains(k) && !keys(kind).contains(k))
}

/// The key of `[workload]` (as a TOML table) that its kind does not take, and the
/// kind; `None` when every key is the kind's, or the kind is not one.
pub fn stray_in_table(workload: &toml::Table) -> Option<(WorkloadKind, String)> {
    let kind = match workload.get("kind") {
        None => WorkloadKind::default(),
        Some(k) => k.clone().try_into().ok()?,
    };
    stray_key(kind, workload.keys().map(String::as_str)).map(|k| (kind, k.to_string()))
}

/// The words of `kind = "..."`.
pub fn kind_name(kind: WorkloadKind) -> &'static str {
    match kind {
        WorkloadKind::Synthetic => "synthetic",
        WorkloadKind::Jsonl => "jsonl",
        WorkloadKind::Prefix => "prefix",
        WorkloadKind::Trace => "trace",
        WorkloadKind::Conversation => "conversation",
        WorkloadKind::Sharegpt => "sharegpt",
    }
}

/// What is wrong with a key of `[workload]`, said once for every reader.
pub fn stray_key_message(kind: WorkloadKind, key: &str) -> String {
    format!(
        "`{key}` is not a key of a {} workload (its keys: {})",
        kind_name(kind),
        keys(kind).join(", ")
    )
}

impl WorkloadSpec {
    /// The kind.
    pub fn kind(&self) -> WorkloadKind {
        match self {
            WorkloadSpec::Synthetic(_) => WorkloadKind::Synthetic,
            WorkloadSpec::Jsonl(_) => WorkloadKind::Jsonl,
            WorkloadSpec::Prefix(_) => WorkloadKind::Prefix,
            WorkloadSpec::Trace(_) => WorkloadKind::Trace,
            WorkloadSpec::Conversation(_) => WorkloadKind::Conversation,
            WorkloadSpec::Sharegpt(_) => WorkloadKind::Sharegpt,
        }
    }

    /// The chat API's controls.
    pub fn chat(&self) -> &ChatControls {
        match self {
            WorkloadSpec::Synthetic(w) => &w.chat,
            WorkloadSpec::Jsonl(w) => &w.chat,
            WorkloadSpec::Prefix(w) => &w.chat,
            WorkloadSpec::Trace(w) => &w.chat,
            WorkloadSpec::Conversation(w) => &w.chat,
            WorkloadSpec::Sharegpt(w) => &w.chat,
        }
    }

    /// Salts every prompt (`--prompt-salt`).
    pub fn set_salt(&mut self) {
        match self {
            WorkloadSpec::Synthetic(w) => w.chat.salt = true,
            WorkloadSpec::Jsonl(w) => w.chat.salt = true,
            WorkloadSpec::Prefix(w) => w.chat.salt = true,
            WorkloadSpec::Trace(w) => w.chat.salt = true,
            WorkloadSpec::Conversation(w) => w.chat.salt = true,
            WorkloadSpec::Sharegpt(w) => w.chat.salt = true,
        }
    }

    /// The files it names (`path`, `tokenizer`), to resolve against the profile's
    /// folder.
    pub fn paths_mut(&mut self) -> Vec<&mut PathBuf> {
        let (path, tokenizer) = match self {
            WorkloadSpec::Synthetic(_) | WorkloadSpec::Prefix(_) => (None, None),
            WorkloadSpec::Jsonl(w) => (w.path.as_mut(), None),
            WorkloadSpec::Trace(w) => (w.path.as_mut(), None),
            WorkloadSpec::Conversation(w) => (w.path.as_mut(), None),
            WorkloadSpec::Sharegpt(w) => (w.path.as_mut(), w.tokenizer.as_mut()),
        };
        path.into_iter().chain(tokenizer).collect()
    }
}

/// Most characters of a given prompt salt.
pub const MAX_SALT_LEN: usize = 64;

/// Whether and how prompts are salted (`[workload] salt = true`, `--prompt-salt`;
/// [`crate::define::requests::salt`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSalt {
    /// Draw a salt for the run (a resumed run keeps the one it drew).
    Draw,
    /// This salt (the shards of one sweep share one).
    Given(String),
}

/// `--prompt-salt[=SALT]`: empty draws one; otherwise 1 to 64 characters of
/// `a-z`, `A-Z`, `0-9`, `-` and `_`.
pub fn parse_prompt_salt(s: &str) -> Result<PromptSalt, String> {
    if s.is_empty() {
        return Ok(PromptSalt::Draw);
    }
    let ok = s.len() <= MAX_SALT_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(PromptSalt::Given(s.to_string()))
    } else {
        Err(format!(
            "a prompt salt is 1 to {MAX_SALT_LEN} letters, digits, '-' or '_' (got {s:?})"
        ))
    }
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

/// Trace file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// Mooncake's JSON lines with hash ids.
    #[default]
    Mooncake,
    /// Azure's CSV.
    Azure,
}

/// Where a conversation workload's user messages come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ConversationSource {
    /// Generated text of `input_tokens` per message.
    #[default]
    Synthetic,
    /// ShareGPT's human turns: each session is one conversation's user messages (at
    /// most `turns`), the conversations in the order vLLM's sampler shuffles them
    /// with seed 0; every reply asks for `output_tokens`.
    Sharegpt,
}
