//! What each request says: synthetic prompts of a target token length, or prompts
//! from a JSONL file; bodies are serialised here, before any timing starts.
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

use crate::plan::Workload;
use crate::profile::{Api, TextStyle};

/// Common short English words: about one token each in the usual BPE vocabularies.
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "time", "people", "year",
    "way", "day", "man", "thing", "woman", "life", "child", "world", "school", "state", "family",
    "student", "group", "country", "problem", "hand", "part", "place", "case", "week", "company",
    "system", "program", "question", "work", "number", "night", "point", "home", "water", "room",
    "mother", "area", "money", "story", "fact", "month", "lot", "right", "study", "book", "eye",
    "job", "word", "business", "issue", "side", "kind", "head", "house", "service", "friend",
    "father", "power", "hour", "game", "line", "end", "member", "law", "car", "city", "name",
];

/// A passage repeated by `TextStyle::Repetitive`, so n-gram drafting finds matches.
const PASSAGE: &str = "the quick brown fox jumps over the lazy dog and then the dog runs after the fox around the old red barn";

/// One request, ready to send.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Serialised JSON body.
    pub body: Bytes,
    /// Output tokens asked for.
    pub max_tokens: Option<u32>,
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
}

impl Builder {
    /// `n` requests for a trial, deterministic in (`seed`, `stream`): the same on
    /// every engine, different per trial.
    pub fn build(&self, n: u32, seed: u64, stream: u64) -> Vec<Prepared> {
        let mut rng = StdRng::seed_from_u64(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        (0..n).map(|i| self.one(&mut rng, i)).collect()
    }

    fn one(&self, rng: &mut StdRng, i: u32) -> Prepared {
        let (prompt, max_tokens, fixed) = match &self.workload {
            Workload::Synthetic {
                input_tokens,
                output_tokens,
                range_ratio,
                text,
                ..
            } => {
                let inp = draw_len(rng, *input_tokens, *range_ratio);
                let out = draw_len(rng, *output_tokens, *range_ratio);
                let words = ((inp as f64) / self.tokens_per_word).round().max(1.0) as usize;
                (synthetic_text(rng, words, *text), Some(out), true)
            }
            Workload::Jsonl { prompts, .. } => {
                let p = &prompts[(rng.gen::<u32>() as usize ^ i as usize) % prompts.len()];
                (p.prompt.clone(), p.max_tokens, false)
            }
        };
        Prepared {
            body: Bytes::from(self.body(&prompt, max_tokens, fixed).to_string()),
            max_tokens,
        }
    }

    /// The JSON body of a streaming request.
    pub fn body(&self, prompt: &str, max_tokens: Option<u32>, fixed: bool) -> serde_json::Value {
        let mut body = match self.api {
            Api::Completions => json!({"model": self.model, "prompt": prompt}),
            Api::Chat => {
                json!({"model": self.model, "messages": [{"role": "user", "content": prompt}]})
            }
        };
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
            Workload::Jsonl { .. } => TextStyle::Random,
        };
        synthetic_text(&mut rng, words, style)
    }
}

/// A length drawn uniformly from `[L(1-r), L(1+r)]`, at least 1.
fn draw_len(rng: &mut StdRng, l: u32, r: f64) -> u32 {
    if r <= 0.0 {
        return l;
    }
    let lo = ((l as f64) * (1.0 - r)).round().max(1.0) as u32;
    let hi = ((l as f64) * (1.0 + r)).round().max(lo as f64) as u32;
    rng.gen_range(lo..=hi)
}

fn synthetic_text(rng: &mut StdRng, words: usize, style: TextStyle) -> String {
    let mut s = String::with_capacity(words * 6);
    match style {
        TextStyle::Random => {
            for k in 0..words {
                if k > 0 {
                    s.push(' ');
                }
                s.push_str(WORDS[rng.gen_range(0..WORDS.len())]);
            }
        }
        TextStyle::Repetitive => {
            // A random opening makes every prompt distinct (no prefix-cache hits
            // across requests); the repeated passage after it gives n-gram drafting
            // something to find.
            let passage: Vec<&str> = PASSAGE.split(' ').collect();
            let opening = words.min(8);
            for k in 0..words {
                if k > 0 {
                    s.push(' ');
                }
                if k < opening {
                    s.push_str(WORDS[rng.gen_range(0..WORDS.len())]);
                } else {
                    s.push_str(passage[(k - opening) % passage.len()]);
                }
            }
        }
    }
    s
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
        let v = match resp.json::<serde_json::Value>().await {
            Ok(v) => v,
            Err(e) => {
                why.push(format!("not JSON ({e})"));
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
    let Workload::Synthetic {
        input_tokens,
        calibrate: true,
        ..
    } = &builder.workload
    else {
        return Calibration::NotAsked;
    };
    let words = (*input_tokens as usize).clamp(16, 4096);
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
            },
            model: "m".into(),
            api: Api::Completions,
            tokens_per_word: 1.0,
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
            },
            model: "m".into(),
            api: Api::Completions,
            tokens_per_word: 1.0,
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
}
