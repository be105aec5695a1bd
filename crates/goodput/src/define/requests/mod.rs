//! What each request says: synthetic prompts of a target token length, prompts
//! from a JSONL file, groups sharing a prefix (`prefix`), a replayed trace
//! (`trace`), or multi-turn sessions (`conversation`); bodies are serialised here,
//! before any timing starts (a conversation's later turns, which carry the replies
//! before them, in the think time after those replies).
//!
//! Synthetic requests ask for a fixed output length (`max_tokens` = `min_tokens` =
//! the length, `ignore_eos`), so every engine generates the same number of tokens.
//! Prompt lengths are calibrated through the engine's `/tokenize` when it has one
//! (vLLM, SGLang and llama.cpp shapes); the report carries the actual
//! `usage.prompt_tokens` either way.

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::define::profile::{Api, TextStyle};

pub mod adapters;
pub mod conversation;
pub mod embeddings;
pub mod images;
pub mod prefix;
pub mod salt;
pub mod sharegpt;
pub mod source;
mod text;
pub mod trace;

use text::{draw_len, synthetic_text};

/// One request, ready to send.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Serialised JSON body.
    pub body: Bytes,
    /// What it asks for, copied into its record.
    pub asked: Asked,
    /// The LoRA adapter its `model` names, when the run draws adapters
    /// ([`adapters::assign`]).
    pub adapter: Option<std::sync::Arc<str>>,
}

/// What a request asks for, as the workload planned it (kept in its record beside
/// what happened).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Asked {
    /// Output tokens asked for (`max_tokens`).
    pub max_tokens: Option<u32>,
    /// Prompt tokens meant.
    pub input_tokens: Option<u32>,
    /// Prompt tokens shared with an earlier request of the trial.
    pub shared_tokens: Option<u32>,
    /// Session (prefix group, trace line).
    pub session: Option<u32>,
    /// Turn in the session.
    pub turn: Option<u32>,
    /// `max_tokens` is asked for exactly (`min_tokens`, `ignore_eos`).
    pub exact: bool,
    /// Function definitions carried in `tools`, when the request asks for tool
    /// calls ([`Builder::tools_asked`]).
    pub tools: Option<u32>,
    /// Which functions of the catalogue those are ([`crate::define::tools::offered`]).
    pub tools_offered: u32,
    /// The images carried (`[workload] images`).
    pub images: Option<images::ImagesSent>,
    /// Texts an embeddings request carries in `input` ([`embeddings`]).
    pub inputs: Option<u32>,
}

/// Builds prompts and bodies.
#[derive(Debug, Clone)]
pub struct Builder {
    /// The workload.
    pub workload: Workload,
    /// Model id sent in requests.
    pub model: String,
    /// Which endpoint.
    pub api: Api,
    /// Tokens per word of synthetic text, measured through `/tokenize` (1.0 if unknown).
    pub tokens_per_word: f64,
    /// Chat API: fields every body carries beside the messages (the reasoning
    /// controls, [`crate::define::plan::chat_fields`]); empty for most engines.
    pub chat_fields: serde_json::Map<String, serde_json::Value>,
    /// The run's prompt salt ([`salt`]): every prompt starts with it; `None`: no salt.
    pub salt: Option<String>,
    /// `[workload] images`: the images every chat body carries.
    pub images: Option<images::ImageSpec>,
}

impl Builder {
    /// `n` requests for a trial, deterministic in (`seed`, `sample`): the same on
    /// every engine, different per trial (`sample` numbers the trial's draw: its
    /// point and trial index).
    pub fn build(&self, n: u32, seed: u64, sample: u64) -> Vec<Prepared> {
        let key = seed ^ sample.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut rng = StdRng::seed_from_u64(key);
        match &self.workload {
            Workload::Prefix(p) => prefix::build(self, p, n, key),
            Workload::Trace(t) => trace::build(self, t, n, key),
            Workload::Conversation(_) => conversation::build(self, n, seed, sample),
            Workload::ShareGpt(s) => sharegpt::build(self, s, n, seed, key),
            _ => (0..n).map(|i| self.one(&mut rng, i)).collect(),
        }
    }

    fn one(&self, rng: &mut StdRng, i: u32) -> Prepared {
        let (prompt, asked, fixed) = match &self.workload {
            Workload::Synthetic {
                input_tokens,
                range_ratio,
                text,
                inputs,
                ..
            } if self.api.embeds() => {
                let inputs = inputs.unwrap_or(embeddings::DEFAULT_INPUTS);
                let lengths = (*input_tokens, *range_ratio, *text);
                return embeddings::one(self, rng, lengths, inputs);
            }
            Workload::Synthetic {
                input_tokens,
                output_tokens,
                range_ratio,
                text,
                ..
            } => {
                let inp = draw_len(rng, *input_tokens, *range_ratio);
                let out = draw_len(rng, *output_tokens, *range_ratio);
                let asked = Asked {
                    max_tokens: Some(out),
                    input_tokens: Some(inp),
                    ..Asked::default()
                };
                (synthetic_text(rng, self.words(inp), *text), asked, true)
            }
            Workload::Jsonl { prompts, .. } => {
                let p = &prompts[(rng.gen::<u32>() as usize ^ i as usize) % prompts.len()];
                let asked = Asked {
                    max_tokens: p.max_tokens,
                    ..Asked::default()
                };
                (p.prompt.clone(), asked, false)
            }
            Workload::Prefix(_)
            | Workload::Trace(_)
            | Workload::Conversation(_)
            | Workload::ShareGpt(_) => unreachable!("built by their modules"),
        };
        self.prepared(&prompt, asked, fixed)
    }

    /// The function definitions every chat body carries in `tools` (from
    /// [`crate::define::plan::chat_fields`]), when it asks for tool calls
    /// (`tool_choice` is not `none`).
    pub fn tools_asked(&self) -> Option<u32> {
        if self.api != Api::Chat || self.chat_fields.get("tool_choice") == Some(&json!("none")) {
            return None;
        }
        let n = self.chat_fields.get("tools")?.as_array()?.len();
        u32::try_from(n).ok().filter(|&n| n > 0)
    }

    /// Trace mode: the trace's send offsets at `speedup` (empty for other kinds).
    pub fn trace_offsets(&self, speedup: f64) -> Vec<u64> {
        match &self.workload {
            Workload::Trace(t) => t.offsets(speedup),
            _ => Vec::new(),
        }
    }

    /// Words of synthetic text for about `tokens` tokens on this engine.
    pub(crate) fn words(&self, tokens: u32) -> usize {
        ((tokens as f64) / self.tokens_per_word).round().max(1.0) as usize
    }

    /// A request with its body serialised.
    fn prepared(&self, prompt: &str, mut asked: Asked, fixed: bool) -> Prepared {
        // A tool call ends the model's turn: its length is not asked for exactly.
        asked.tools = self.tools_asked();
        if asked.tools.is_some() {
            let tools = self.chat_fields.get("tools");
            asked.tools_offered = tools.map_or(0, crate::define::tools::offered);
        }
        let fixed = fixed && asked.tools.is_none();
        asked.exact = fixed;
        let mut body = self.body(prompt, asked.max_tokens, fixed);
        if let Some(spec) = self.images.as_ref().filter(|_| self.api == Api::Chat) {
            asked.images = Some(images::attach(&mut body, spec));
        }
        Prepared {
            body: Bytes::from(body.to_string()),
            asked,
            adapter: None,
        }
    }

    /// The JSON body of a streaming request.
    pub fn body(&self, prompt: &str, max_tokens: Option<u32>, fixed: bool) -> serde_json::Value {
        let body = match self.api {
            Api::Embeddings => return embeddings::body(self, &[prompt.to_string()]),
            Api::Completions => json!({"model": self.model, "prompt": prompt}),
            Api::Chat => {
                json!({"model": self.model, "messages": [{"role": "user", "content": prompt}]})
            }
        };
        self.finish_body(body, max_tokens, fixed)
    }

    /// The streaming, sampling and length fields every body carries, and the run's
    /// salt in front of the prompt (the first message's text, for the chat API).
    fn finish_body(
        &self,
        mut body: serde_json::Value,
        max_tokens: Option<u32>,
        fixed: bool,
    ) -> serde_json::Value {
        if let Some(salt) = self.salt.as_deref() {
            let text = match self.api {
                Api::Completions | Api::Embeddings => body.get_mut("prompt"),
                Api::Chat => body
                    .get_mut("messages")
                    .and_then(|m| m.get_mut(0))
                    .and_then(|m| m.get_mut("content")),
            };
            if let Some(t) = text {
                if let Some(s) = t.as_str() {
                    *t = json!(salt::salted(Some(salt), s));
                }
            }
        }
        if self.api == Api::Chat {
            if let Some(o) = body.as_object_mut() {
                o.extend(self.chat_fields.clone());
            }
        }
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        body["temperature"] = json!(0.0);
        if let Some(m) = max_tokens {
            body["max_tokens"] = json!(m);
            if fixed {
                body["min_tokens"] = json!(m);
                body["ignore_eos"] = json!(true);
            }
        }
        body
    }

    /// A synthetic prompt of about `tokens` tokens (for calibration).
    pub fn sample_prompt(&self, words: usize) -> String {
        let mut rng = StdRng::seed_from_u64(7);
        let style = match &self.workload {
            Workload::Synthetic { text, .. } => *text,
            _ => TextStyle::Random,
        };
        synthetic_text(&mut rng, words, style)
    }
}

/// Asks the engine how many tokens `text` is: vLLM/SGLang (`{"prompt"}` → `count`)
/// then llama.cpp (`{"content"}` → `tokens`). The error says why neither answered.
pub async fn count_tokens(
    client: &reqwest::Client,
    base_url: &str,
    model: &str,
    text: &str,
) -> Result<u64, String> {
    let url = format!("{}/tokenize", base_url.trim_end_matches('/'));
    let mut why = Vec::new();
    for body in [
        json!({"model": model, "prompt": text}),
        json!({"content": text}),
    ] {
        let resp = client
            .post(&url)
            .json(&body)
            .timeout(std::time::Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| format!("POST {url}: {e}"))?;
        let status = resp.status();
        if !status.is_success() {
            why.push(format!("HTTP {}", status.as_u16()));
            continue;
        }
        let what = format!("POST {url}");
        let limit = crate::bounded::MAX_PROBE_BYTES;
        let v = match crate::bounded::read_json::<serde_json::Value>(resp, limit, &what).await {
            Ok(v) => v,
            Err(e @ crate::bounded::BodyError::TooLarge { .. }) => return Err(e.to_string()),
            Err(e) => {
                why.push(e.to_string());
                continue;
            }
        };
        if let Some(c) = v.get("count").and_then(|c| c.as_u64()) {
            return Ok(c);
        }
        // llama.cpp answers the vLLM shape with an empty list: try the next shape.
        if let Some(t) = v.get("tokens").and_then(|t| t.as_array()) {
            if !t.is_empty() || text.is_empty() {
                return Ok(t.len() as u64);
            }
        }
        why.push("no token count in the answer".into());
    }
    Err(format!("POST {url}: {}", why.join(", then ")))
}

/// How synthetic prompt lengths are set on an engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Calibration {
    /// Not asked for (`calibrate = false`, or not a synthetic workload).
    NotAsked,
    /// Measured through `/tokenize`: tokens per word of the synthetic text.
    Calibrated(f64),
    /// Asked for and failed (why); lengths assume one token per word.
    Failed(String),
}

/// Tokens per word of synthetic text on this engine, via `/tokenize`.
pub async fn calibrate(builder: &Builder, client: &reqwest::Client, base_url: &str) -> Calibration {
    // Every generated kind sets lengths in words: the same calibration serves them.
    let input_tokens = match &builder.workload {
        Workload::Synthetic {
            input_tokens,
            calibrate: true,
            ..
        } => *input_tokens,
        Workload::Prefix(p) if p.calibrate => p.prefix_tokens + p.suffix_tokens,
        Workload::Trace(t) if t.calibrate => 512,
        Workload::Conversation(c) if c.calibrate => c.input_tokens,
        _ => return Calibration::NotAsked,
    };
    let words = (input_tokens as usize).clamp(16, 4096);
    let n = match count_tokens(
        client,
        base_url,
        &builder.model,
        &builder.sample_prompt(words),
    )
    .await
    {
        Ok(n) => n,
        Err(why) => return Calibration::Failed(why),
    };
    let empty = count_tokens(client, base_url, &builder.model, "")
        .await
        .unwrap_or(0);
    let per_word = n.saturating_sub(empty) as f64 / words as f64;
    if per_word > 0.05 && per_word < 20.0 {
        Calibration::Calibrated(per_word)
    } else {
        Calibration::Failed(format!(
            "/tokenize counted {n} tokens for {words} words ({per_word:.3} per word), which is not plausible"
        ))
    }
}

/// The validated workload.
#[derive(Debug, Clone)]
pub enum Workload {
    /// Generated prompts.
    Synthetic {
        /// Prompt tokens (centre of the range).
        input_tokens: u32,
        /// Output tokens (centre of the range).
        output_tokens: u32,
        /// Relative spread of lengths.
        range_ratio: f64,
        /// Text style.
        text: TextStyle,
        /// Use `/tokenize` to hit the length.
        calibrate: bool,
        /// Texts an embeddings request carries (`[workload] inputs`); `None`: not
        /// given (one, for an embeddings engine).
        inputs: Option<u32>,
    },
    /// Prompts from a file.
    Jsonl {
        /// The file.
        path: std::path::PathBuf,
        /// The prompts.
        prompts: Vec<JsonlPrompt>,
    },
    /// Groups of requests sharing a prefix.
    Prefix(prefix::PrefixWorkload),
    /// A replayed trace.
    Trace(trace::TraceWorkload),
    /// Multi-turn chat sessions.
    Conversation(conversation::ConversationWorkload),
    /// Prompts sampled from ShareGPT conversations.
    ShareGpt(sharegpt::ShareGptWorkload),
}

/// One line of a JSONL workload.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct JsonlPrompt {
    /// The prompt text.
    pub prompt: String,
    /// Output limit for this prompt.
    #[serde(default)]
    pub max_tokens: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder(text: TextStyle) -> Builder {
        Builder {
            workload: Workload::Synthetic {
                input_tokens: 100,
                output_tokens: 32,
                range_ratio: 0.5,
                text,
                calibrate: false,
                inputs: None,
            },
            model: "m".into(),
            api: Api::Completions,
            tokens_per_word: 1.0,
            chat_fields: Default::default(),
            salt: None,
            images: None,
        }
    }

    #[test]
    fn synthetic_bodies_ask_for_a_fixed_length_and_stream_usage() {
        let b = builder(TextStyle::Random);
        let reqs = b.build(50, 1, 0);
        for r in &reqs {
            let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
            let m = v["max_tokens"].as_u64().unwrap();
            assert!((16..=48).contains(&m));
            assert_eq!(v["min_tokens"], v["max_tokens"]);
            assert_eq!(v["ignore_eos"], true);
            assert_eq!(v["stream"], true);
            assert_eq!(v["stream_options"]["include_usage"], true);
            let words = v["prompt"].as_str().unwrap().split(' ').count();
            assert!((50..=150).contains(&words), "{words}");
        }
    }

    #[test]
    fn same_seed_same_requests_other_trial_other_requests() {
        let b = builder(TextStyle::Repetitive);
        assert_eq!(
            b.build(5, 3, 1)
                .iter()
                .map(|p| p.body.clone())
                .collect::<Vec<_>>(),
            b.build(5, 3, 1)
                .iter()
                .map(|p| p.body.clone())
                .collect::<Vec<_>>()
        );
        assert_ne!(b.build(5, 3, 1)[0].body, b.build(5, 3, 2)[0].body);
    }

    #[test]
    fn repetitive_prompts_are_distinct_from_their_first_words() {
        let b = Builder {
            workload: Workload::Synthetic {
                input_tokens: 64,
                output_tokens: 8,
                range_ratio: 0.0,
                text: TextStyle::Repetitive,
                calibrate: false,
                inputs: None,
            },
            model: "m".into(),
            api: Api::Completions,
            tokens_per_word: 1.0,
            chat_fields: Default::default(),
            salt: None,
            images: None,
        };
        let prompts: Vec<String> = b
            .build(50, 1, 0)
            .iter()
            .map(|p| {
                serde_json::from_slice::<serde_json::Value>(&p.body).unwrap()["prompt"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let openings: std::collections::HashSet<String> = prompts
            .iter()
            .map(|p| p.split(' ').take(8).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            openings.len(),
            50,
            "no two prompts share a prefix a cache could reuse"
        );
        assert!(
            prompts[0].matches("quick brown fox").count() >= 2,
            "the passage repeats"
        );
    }

    #[test]
    fn chat_bodies_use_messages() {
        let mut b = builder(TextStyle::Random);
        b.api = Api::Chat;
        let v: serde_json::Value = serde_json::from_slice(&b.build(1, 0, 0)[0].body).unwrap();
        assert_eq!(v["messages"][0]["role"], "user");
        assert!(v.get("prompt").is_none());
    }

    #[test]
    fn a_salt_starts_every_prompt_and_the_first_chat_message() {
        let body = |b: &Builder| -> Vec<serde_json::Value> {
            b.build(3, 1, 0)
                .iter()
                .map(|p| serde_json::from_slice(&p.body).unwrap())
                .collect()
        };
        let mut b = builder(TextStyle::Random);
        let plain = body(&b);
        b.salt = Some("k3x9".into());
        for (p, s) in plain.iter().zip(body(&b)) {
            let p = p["prompt"].as_str().unwrap();
            assert_eq!(s["prompt"].as_str().unwrap(), format!("k3x9 {p}"));
        }
        b.api = Api::Chat;
        for v in body(&b) {
            let text = v["messages"][0]["content"].as_str().unwrap();
            assert!(text.starts_with("k3x9 "), "{text}");
        }
    }
}
