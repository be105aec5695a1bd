//! `[workload]`: what each request asks for.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

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

/// The chat API's controls, which every kind takes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatControls {
    /// `reasoning_effort` sent with every request (`low`, `medium`, `high`: what
    /// the model accepts); an engine's own value wins.
    pub reasoning_effort: Option<String>,
    /// `chat_template_kwargs` sent with every request (e.g.
    /// `{ enable_thinking = false }`); an engine's own keys win.
    pub chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
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
    pub format: Option<crate::workload::trace::TraceFormat>,
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
    pub source: Option<crate::workload::conversation::ConversationSource>,
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
const COMMON_KEYS: &[&str] = &["kind", "reasoning_effort", "chat_template_kwargs"];

/// The keys of a kind's `[workload]` (besides `kind` and the chat controls).
pub fn keys(kind: WorkloadKind) -> &'static [&'static str] {
    match kind {
        WorkloadKind::Synthetic => &[
            "input_tokens",
            "output_tokens",
            "range_ratio",
            "text",
            "calibrate",
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

/// `[workload]` as written: every key optional, so that a key of another kind is
/// seen (and refused) rather than defaulted.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrittenWorkload {
    #[serde(default)]
    kind: Option<WorkloadKind>,
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    range_ratio: Option<f64>,
    #[serde(default)]
    text: Option<TextStyle>,
    #[serde(default)]
    path: Option<PathBuf>,
    #[serde(default)]
    calibrate: Option<bool>,
    #[serde(default)]
    groups: Option<u32>,
    #[serde(default)]
    prefix_tokens: Option<u32>,
    #[serde(default)]
    suffix_tokens: Option<u32>,
    #[serde(default)]
    format: Option<crate::workload::trace::TraceFormat>,
    #[serde(default)]
    block_tokens: Option<u32>,
    #[serde(default)]
    max_requests: Option<u32>,
    #[serde(default)]
    start_s: Option<f64>,
    #[serde(default)]
    duration_s: Option<f64>,
    #[serde(default)]
    max_input_tokens: Option<u32>,
    #[serde(default)]
    turns: Option<u32>,
    #[serde(default)]
    think_time_ms: Option<u64>,
    #[serde(default)]
    max_context_tokens: Option<u32>,
    #[serde(default)]
    source: Option<crate::workload::conversation::ConversationSource>,
    #[serde(default)]
    num_prompts: Option<u32>,
    #[serde(default)]
    max_total_tokens: Option<u32>,
    #[serde(default)]
    tokenizer: Option<PathBuf>,
    #[serde(default)]
    reasoning_effort: Option<String>,
    #[serde(default)]
    chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
}

impl WrittenWorkload {
    /// The keys written.
    fn given(&self) -> Vec<&'static str> {
        let w = self;
        [
            ("input_tokens", w.input_tokens.is_some()),
            ("output_tokens", w.output_tokens.is_some()),
            ("range_ratio", w.range_ratio.is_some()),
            ("text", w.text.is_some()),
            ("path", w.path.is_some()),
            ("calibrate", w.calibrate.is_some()),
            ("groups", w.groups.is_some()),
            ("prefix_tokens", w.prefix_tokens.is_some()),
            ("suffix_tokens", w.suffix_tokens.is_some()),
            ("format", w.format.is_some()),
            ("block_tokens", w.block_tokens.is_some()),
            ("max_requests", w.max_requests.is_some()),
            ("start_s", w.start_s.is_some()),
            ("duration_s", w.duration_s.is_some()),
            ("max_input_tokens", w.max_input_tokens.is_some()),
            ("turns", w.turns.is_some()),
            ("think_time_ms", w.think_time_ms.is_some()),
            ("max_context_tokens", w.max_context_tokens.is_some()),
            ("source", w.source.is_some()),
            ("num_prompts", w.num_prompts.is_some()),
            ("max_total_tokens", w.max_total_tokens.is_some()),
            ("tokenizer", w.tokenizer.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, given)| given.then_some(k))
        .collect()
    }
}

impl TryFrom<WrittenWorkload> for WorkloadSpec {
    type Error = String;

    fn try_from(w: WrittenWorkload) -> Result<WorkloadSpec, String> {
        let kind = w.kind.unwrap_or_default();
        if let Some(key) = stray_key(kind, w.given()) {
            return Err(stray_key_message(kind, key));
        }
        let chat = ChatControls {
            reasoning_effort: w.reasoning_effort,
            chat_template_kwargs: w.chat_template_kwargs,
        };
        let range_ratio = w.range_ratio.unwrap_or(0.0);
        let text = w.text.unwrap_or_default();
        let calibrate = w.calibrate.unwrap_or(true);
        Ok(match kind {
            WorkloadKind::Synthetic => WorkloadSpec::Synthetic(SyntheticSpec {
                input_tokens: w.input_tokens,
                output_tokens: w.output_tokens,
                range_ratio,
                text,
                calibrate,
                chat,
            }),
            WorkloadKind::Jsonl => WorkloadSpec::Jsonl(JsonlSpec {
                path: w.path,
                output_tokens: w.output_tokens,
                chat,
            }),
            WorkloadKind::Prefix => WorkloadSpec::Prefix(PrefixSpec {
                groups: w.groups,
                prefix_tokens: w.prefix_tokens,
                suffix_tokens: w.suffix_tokens,
                output_tokens: w.output_tokens,
                calibrate,
                chat,
            }),
            WorkloadKind::Trace => WorkloadSpec::Trace(TraceSpec {
                path: w.path,
                format: w.format,
                block_tokens: w.block_tokens,
                max_requests: w.max_requests,
                start_s: w.start_s,
                duration_s: w.duration_s,
                max_input_tokens: w.max_input_tokens,
                calibrate,
                chat,
            }),
            WorkloadKind::Conversation => WorkloadSpec::Conversation(ConversationSpec {
                turns: w.turns,
                input_tokens: w.input_tokens,
                output_tokens: w.output_tokens,
                range_ratio,
                text,
                calibrate,
                think_time_ms: w.think_time_ms,
                max_context_tokens: w.max_context_tokens,
                source: w.source,
                path: w.path,
                chat,
            }),
            WorkloadKind::Sharegpt => WorkloadSpec::Sharegpt(SharegptSpec {
                path: w.path,
                num_prompts: w.num_prompts,
                output_tokens: w.output_tokens,
                max_input_tokens: w.max_input_tokens,
                max_total_tokens: w.max_total_tokens,
                tokenizer: w.tokenizer,
                chat,
            }),
        })
    }
}

/// `[workload]` in the layout written before workloads were typed by kind: every
/// kind's keys, the first seven always. The report's `workload` and the plan's
/// fingerprint are this, so runs made before still resume.
#[derive(Debug, Clone, Serialize)]
pub struct FlatWorkload {
    kind: WorkloadKind,
    input_tokens: Option<u32>,
    output_tokens: Option<u32>,
    range_ratio: f64,
    text: TextStyle,
    path: Option<PathBuf>,
    calibrate: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    groups: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefix_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    suffix_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<crate::workload::trace::TraceFormat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    block_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_requests: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_input_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turns: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    think_time_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_context_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<crate::workload::conversation::ConversationSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    num_prompts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_total_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokenizer: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    chat_template_kwargs: Option<serde_json::Map<String, serde_json::Value>>,
}

impl From<WorkloadSpec> for FlatWorkload {
    fn from(spec: WorkloadSpec) -> FlatWorkload {
        let kind = spec.kind();
        let chat = spec.chat().clone();
        let mut f = FlatWorkload {
            kind,
            input_tokens: None,
            output_tokens: None,
            range_ratio: 0.0,
            text: TextStyle::default(),
            path: None,
            calibrate: true,
            groups: None,
            prefix_tokens: None,
            suffix_tokens: None,
            format: None,
            block_tokens: None,
            max_requests: None,
            start_s: None,
            duration_s: None,
            max_input_tokens: None,
            turns: None,
            think_time_ms: None,
            max_context_tokens: None,
            source: None,
            num_prompts: None,
            max_total_tokens: None,
            tokenizer: None,
            reasoning_effort: chat.reasoning_effort,
            chat_template_kwargs: chat.chat_template_kwargs,
        };
        match spec {
            WorkloadSpec::Synthetic(w) => {
                (f.input_tokens, f.output_tokens, f.range_ratio) =
                    (w.input_tokens, w.output_tokens, w.range_ratio);
                (f.text, f.calibrate) = (w.text, w.calibrate);
            }
            WorkloadSpec::Jsonl(w) => (f.path, f.output_tokens) = (w.path, w.output_tokens),
            WorkloadSpec::Prefix(w) => {
                (f.groups, f.prefix_tokens, f.suffix_tokens) =
                    (w.groups, w.prefix_tokens, w.suffix_tokens);
                (f.output_tokens, f.calibrate) = (w.output_tokens, w.calibrate);
            }
            WorkloadSpec::Trace(w) => {
                (f.path, f.format, f.block_tokens) = (w.path, w.format, w.block_tokens);
                (f.max_requests, f.start_s, f.duration_s) =
                    (w.max_requests, w.start_s, w.duration_s);
                (f.max_input_tokens, f.calibrate) = (w.max_input_tokens, w.calibrate);
            }
            WorkloadSpec::Conversation(w) => {
                (f.turns, f.input_tokens, f.output_tokens) =
                    (w.turns, w.input_tokens, w.output_tokens);
                (f.range_ratio, f.text, f.calibrate) = (w.range_ratio, w.text, w.calibrate);
                (f.think_time_ms, f.max_context_tokens) = (w.think_time_ms, w.max_context_tokens);
                (f.source, f.path) = (w.source, w.path);
            }
            WorkloadSpec::Sharegpt(w) => {
                (f.path, f.num_prompts, f.output_tokens) = (w.path, w.num_prompts, w.output_tokens);
                (f.max_input_tokens, f.max_total_tokens, f.tokenizer) =
                    (w.max_input_tokens, w.max_total_tokens, w.tokenizer);
            }
        }
        f
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
