//! `[workload]` as written (every key optional, so a key of another kind is seen
//! and refused) and as it has always been serialised (the report's `workload`, the
//! plan's fingerprint): the two layouts [`WorkloadSpec`] is read from and written as.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{
    stray_key, stray_key_message, ChatControls, ConversationSpec, JsonlSpec, PrefixSpec,
    SharegptSpec, SyntheticSpec, TextStyle, TraceSpec, WorkloadKind, WorkloadSpec,
};

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
    format: Option<super::TraceFormat>,
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
    source: Option<super::ConversationSource>,
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
    #[serde(default)]
    salt: Option<bool>,
    #[serde(default)]
    tools: Option<u32>,
    #[serde(default)]
    tool_choice: Option<String>,
    #[serde(default)]
    adapters: Option<indexmap::IndexMap<String, f64>>,
    #[serde(default)]
    images: Option<u32>,
    #[serde(default)]
    image_size: Option<[u32; 2]>,
    #[serde(default)]
    image_format: Option<String>,
    #[serde(default)]
    inputs: Option<u32>,
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
            ("inputs", w.inputs.is_some()),
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
            salt: w.salt.unwrap_or(false),
            tools: w.tools,
            tool_choice: w.tool_choice,
            adapters: w.adapters,
            images: w.images,
            image_size: w.image_size,
            image_format: w.image_format,
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
                inputs: w.inputs,
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
    format: Option<super::TraceFormat>,
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
    source: Option<super::ConversationSource>,
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
    /// Written only when true, so unsalted workloads keep their fingerprints.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    salt: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    adapters: Option<indexmap::IndexMap<String, f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    images: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image_size: Option<[u32; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image_format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inputs: Option<u32>,
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
            salt: chat.salt,
            tools: chat.tools,
            tool_choice: chat.tool_choice,
            adapters: chat.adapters,
            images: chat.images,
            image_size: chat.image_size,
            image_format: chat.image_format,
            inputs: None,
        };
        match spec {
            WorkloadSpec::Synthetic(w) => {
                (f.input_tokens, f.output_tokens, f.range_ratio) =
                    (w.input_tokens, w.output_tokens, w.range_ratio);
                (f.text, f.calibrate, f.inputs) = (w.text, w.calibrate, w.inputs);
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
