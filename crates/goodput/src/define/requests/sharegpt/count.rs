//! Token counters for ShareGPT sampling, and the seeded shuffle vLLM uses.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::StreamExt;

/// Tokens per whitespace-separated word when nothing better counts them (English
/// text in a BPE vocabulary of 32k-150k: about 1.3).
pub const TOKENS_PER_WORD: f64 = 1.3;

/// Requests to `/tokenize` in flight at once while sampling.
const IN_FLIGHT: usize = 16;

/// A Hugging Face `tokenizer.json`, loaded.
#[derive(Clone)]
pub struct TokenizerFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// The tokenizer.
    pub tokenizer: Arc<tokenizers::Tokenizer>,
}

impl std::fmt::Debug for TokenizerFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenizerFile({})", self.path.display())
    }
}

impl TokenizerFile {
    /// Loads `path`; the error names the file and why it does not load.
    pub fn load(path: &Path) -> Result<TokenizerFile, String> {
        if !path.is_file() {
            return Err(format!("{}: no such file", path.display()));
        }
        let tokenizer = tokenizers::Tokenizer::from_file(path).map_err(|e| {
            format!(
                "{}: does not load as a Hugging Face tokenizer.json: {e}",
                path.display()
            )
        })?;
        Ok(TokenizerFile {
            path: path.to_path_buf(),
            tokenizer: Arc::new(tokenizer),
        })
    }
}

/// What counts tokens, in the order goodput tries them.
pub enum Counter<'a> {
    /// The engine's `/tokenize` (vLLM, SGLang, llama.cpp shapes).
    Tokenize {
        /// HTTP client.
        client: &'a reqwest::Client,
        /// The engine's base URL.
        base_url: &'a str,
        /// The model id.
        model: &'a str,
    },
    /// The profile's `tokenizer` file.
    File(&'a TokenizerFile),
    /// `words * TOKENS_PER_WORD`.
    Estimate,
}

impl Counter<'_> {
    /// How the report names it (no URL: a port differs from run to run, and two
    /// reports of the same workload must describe it alike).
    pub fn describe(&self) -> String {
        match self {
            Counter::Tokenize { model, .. } => format!("the engine's /tokenize (model {model})"),
            Counter::File(t) => format!("tokenizer file {}", t.path.display()),
            Counter::Estimate => format!("estimate: whitespace words x {TOKENS_PER_WORD}"),
        }
    }

    /// Token counts of `texts`, in order (special tokens included, as vLLM's
    /// benchmark counts `tokenizer(text).input_ids`).
    pub async fn count(&self, texts: &[&str]) -> Result<Vec<u32>, String> {
        match self {
            Counter::Tokenize {
                client,
                base_url,
                model,
            } => {
                let counts: Vec<Result<u64, String>> = futures_util::stream::iter(texts)
                    .map(|t| crate::define::requests::count_tokens(client, base_url, model, t))
                    .buffered(IN_FLIGHT)
                    .collect()
                    .await;
                counts
                    .into_iter()
                    .map(|c| c.map(|n| n.min(u64::from(u32::MAX)) as u32))
                    .collect()
            }
            Counter::File(t) => t
                .tokenizer
                .encode_batch(texts.to_vec(), true)
                .map(|encs| encs.iter().map(|e| e.len() as u32).collect())
                .map_err(|e| format!("{}: {e}", t.path.display())),
            Counter::Estimate => Ok(texts.iter().map(|t| estimate(t)).collect()),
        }
    }
}

/// `words * TOKENS_PER_WORD`, rounded.
pub fn estimate(text: &str) -> u32 {
    (text.split_whitespace().count() as f64 * TOKENS_PER_WORD).round() as u32
}

/// The order of `0..n` after Python's `random.seed(seed); random.shuffle(x)`: the
/// order in which vLLM's benchmark (`ShareGPTDataset`, `--seed`) walks the
/// conversations. Python seeds its Mersenne Twister with `init_by_array` of the
/// seed's 32-bit words, and `shuffle` swaps `x[i]` with `x[randbelow(i + 1)]` from
/// the end, `randbelow(m)` drawing `bit_length(m)` bits until one is below `m`.
pub fn python_shuffle(n: usize, seed: u64) -> Vec<usize> {
    let key: Vec<u32> = if seed >> 32 == 0 {
        vec![seed as u32]
    } else {
        vec![seed as u32, (seed >> 32) as u32]
    };
    let mut mt = rand_mt::Mt::new_with_key(key);
    let mut x: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let m = (i + 1) as u32;
        let bits = 32 - m.leading_zeros();
        let j = loop {
            let r = mt.next_u32() >> (32 - bits);
            if r < m {
                break r;
            }
        };
        x.swap(i, j as usize);
    }
    x
}

/// The value of a future that needs no I/O (the file and estimate counters): it
/// is ready on its first poll; `None` if it was not.
pub fn ready_now<F: std::future::Future>(f: F) -> Option<F::Output> {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => Some(v),
        std::task::Poll::Pending => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shuffle_is_pythons() {
        // Python 3.11: x = list(range(n)); random.seed(seed); random.shuffle(x)
        assert_eq!(python_shuffle(10, 0), vec![7, 8, 1, 5, 3, 4, 2, 0, 9, 6]);
        assert_eq!(python_shuffle(7, 42), vec![1, 3, 4, 2, 6, 0, 5]);
        assert_eq!(
            python_shuffle(20, 7),
            vec![17, 15, 11, 18, 7, 6, 19, 3, 14, 0, 9, 5, 16, 8, 13, 2, 1, 12, 4, 10]
        );
        assert_eq!(python_shuffle(6, (1 << 33) + 5), vec![0, 3, 4, 1, 2, 5]);
        assert_eq!(python_shuffle(2, 0), vec![0, 1]);
        assert_eq!(python_shuffle(1, 0), vec![0]);
        assert!(python_shuffle(0, 0).is_empty());
    }

    #[test]
    fn the_estimate_counts_words() {
        assert_eq!(estimate("one two  three\nfour"), 5);
        assert_eq!(estimate(""), 0);
    }
}
