//! Deterministic text: the simulator's tokenizer and its generated pseudo-words.
//!
//! Tokenizer: whitespace separates tokens and is dropped; a run of letters and
//! digits is one token; every other character is a token of its own. So about
//! one token per word, consistently for `/tokenize`, usage counts and limits.
//! Token ids: ASCII punctuation is its byte value, words of the simulator's
//! vocabulary are `256 + index`, other words hash into `1024..VOCAB_SIZE`
//! (detokenized as `<unk:ID>`). Generated text is one vocabulary word per
//! token, each with a leading space, chosen by a seeded hash: the same seed
//! gives the same text.

/// Size of the simulated vocabulary (ids are below it).
pub const VOCAB_SIZE: u32 = 32_000;
const WORD_BASE: u32 = 256;
const HASH_BASE: u32 = 1024;

/// The words generated text is made of.
pub const WORDS: &[&str] = &[
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
    "enim",
    "ad",
    "minim",
    "veniam",
    "quis",
    "nostrud",
    "exercitation",
    "ullamco",
    "laboris",
    "nisi",
    "aliquip",
    "ex",
    "ea",
    "commodo",
    "consequat",
    "duis",
    "aute",
    "irure",
    "in",
    "reprehenderit",
    "voluptate",
    "velit",
    "esse",
    "cillum",
    "eu",
    "fugiat",
    "nulla",
    "pariatur",
    "excepteur",
    "sint",
    "occaecat",
    "cupidatat",
    "non",
    "proident",
    "sunt",
    "culpa",
    "qui",
    "officia",
    "deserunt",
    "mollit",
    "anim",
    "id",
    "est",
    "laborum",
    "at",
    "vero",
    "eos",
    "accusamus",
    "iusto",
    "odio",
    "dignissimos",
    "ducimus",
    "blanditiis",
    "praesentium",
    "voluptatum",
    "deleniti",
    "atque",
    "corrupti",
    "quos",
    "dolores",
    "quas",
    "molestias",
    "excepturi",
    "occaecati",
    "cupiditate",
    "provident",
    "similique",
    "mollitia",
    "animi",
    "harum",
    "quidem",
    "rerum",
    "facilis",
    "expedita",
    "distinctio",
    "nam",
    "libero",
    "tempore",
    "cum",
    "soluta",
    "nobis",
    "eligendi",
    "optio",
    "cumque",
    "nihil",
    "impedit",
    "quo",
    "minus",
    "maxime",
    "placeat",
    "facere",
    "possimus",
    "omnis",
    "voluptas",
    "assumenda",
    "repellendus",
    "temporibus",
    "autem",
    "quibusdam",
    "officiis",
    "debitis",
    "aut",
    "necessitatibus",
    "saepe",
    "eveniet",
    "voluptates",
    "repudiandae",
    "recusandae",
    "itaque",
    "earum",
    "hic",
    "tenetur",
    "sapiente",
    "delectus",
];

/// SplitMix64: a fast, well-mixed hash of one word.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// FNV-1a hash of bytes (stable across runs and platforms).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// Split text into token strings.
pub fn split(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            if start.is_none() {
                start = Some(i);
            }
            continue;
        }
        if let Some(s) = start.take() {
            out.push(&text[s..i]);
        }
        if !c.is_whitespace() {
            out.push(&text[i..i + c.len_utf8()]);
        }
    }
    if let Some(s) = start {
        out.push(&text[s..]);
    }
    out
}

/// Number of tokens in `text`.
pub fn count_tokens(text: &str) -> usize {
    split(text).len()
}

/// Each of [`WORDS`] to its first index (a prompt's every token is looked up:
/// a scan of the list per token cost the simulator's one thread ~1 ms for a
/// 4,000-token prompt).
fn word_index() -> &'static std::collections::HashMap<&'static str, u32> {
    static INDEX: std::sync::OnceLock<std::collections::HashMap<&'static str, u32>> =
        std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = std::collections::HashMap::with_capacity(WORDS.len());
        for (i, w) in WORDS.iter().enumerate() {
            index.entry(*w).or_insert(i as u32);
        }
        index
    })
}

fn token_id(token: &str) -> u32 {
    if token.len() == 1 && token.is_ascii() {
        if let Some(b) = token.bytes().next() {
            if !b.is_ascii_alphanumeric() {
                return u32::from(b);
            }
        }
    }
    if let Some(&i) = word_index().get(token) {
        return WORD_BASE + i;
    }
    HASH_BASE + (fnv1a(token.as_bytes()) % u64::from(VOCAB_SIZE - HASH_BASE)) as u32
}

/// Token ids of `text`.
pub fn tokenize(text: &str) -> Vec<u32> {
    split(text).into_iter().map(token_id).collect()
}

/// Whether `id` is one [`tokenize`] can produce.
pub fn is_token_id(id: u32) -> bool {
    match id {
        0..128 => {
            let c = char::from(id as u8);
            !c.is_ascii_alphanumeric() && !c.is_whitespace()
        }
        _ if id < WORD_BASE => false,
        _ if id < HASH_BASE => ((id - WORD_BASE) as usize) < WORDS.len(),
        _ => id < VOCAB_SIZE,
    }
}

/// For every hashed id, a word that hashes to it (`x` and a number), found
/// once by counting up: about 330,000 hashes for the 30,976 ids.
fn hashed_words() -> &'static [Box<str>] {
    static TABLE: std::sync::OnceLock<Vec<Box<str>>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let slots = (VOCAB_SIZE - HASH_BASE) as usize;
        let mut table: Vec<Option<Box<str>>> = vec![None; slots];
        let mut left = slots;
        let mut word = String::new();
        // Bounded: the expected count is ~11 * slots; the test checks the fill.
        for k in 0..(slots as u64 * 1000) {
            if left == 0 {
                break;
            }
            word.clear();
            word.push('x');
            word.push_str(&k.to_string());
            let slot = (token_id(&word) - HASH_BASE) as usize;
            if table[slot].is_none() {
                table[slot] = Some(word.as_str().into());
                left -= 1;
            }
        }
        table
            .into_iter()
            .map(|w| w.unwrap_or_else(|| "<unk>".into()))
            .collect()
    })
}

/// The text of one token id, or `None` if [`tokenize`] never produces it.
fn token_text(id: u32) -> Option<&'static str> {
    if !is_token_id(id) {
        return None;
    }
    if id < WORD_BASE {
        // ASCII punctuation: its one-byte string.
        const ASCII: [u8; 128] = {
            let mut a = [0u8; 128];
            let mut i = 0;
            while i < 128 {
                a[i] = i as u8;
                i += 1;
            }
            a
        };
        let i = id as usize;
        return std::str::from_utf8(&ASCII[i..i + 1]).ok();
    }
    if id < HASH_BASE {
        return WORDS.get((id - WORD_BASE) as usize).copied();
    }
    hashed_words().get((id - HASH_BASE) as usize).map(|w| &**w)
}

/// Text of token ids, the inverse of [`tokenize`]: `tokenize(detokenize(ids))
/// == ids` for every list of valid ids, and `detokenize(tokenize(text)) ==
/// text` for text in the tokenizer's normal form (vocabulary words and ASCII
/// punctuation; one space before each word and each opening bracket, none
/// after an opening bracket or before other punctuation). Whitespace is not a token, so
/// other spacing comes back normalized, and a word outside the vocabulary
/// comes back as the word `xN` that has its id. `Err` carries the first id
/// that [`tokenize`] never produces.
pub fn detokenize(ids: &[u32]) -> Result<String, u32> {
    let mut out = String::new();
    for &id in ids {
        let t = token_text(id).ok_or(id)?;
        let opener = matches!(t, "(" | "[" | "{");
        let after_opener = out.ends_with(['(', '[', '{']);
        if (id >= WORD_BASE || opener) && !out.is_empty() && !after_opener {
            out.push(' ');
        }
        out.push_str(t);
    }
    Ok(out)
}

/// The `index`-th generated word (without its leading space) for `seed`.
pub fn word(seed: u64, index: u64) -> &'static str {
    let h = mix(seed ^ mix(index));
    WORDS[(h % WORDS.len() as u64) as usize]
}

/// Text of generated tokens `from..from + count`: `" word"` per token.
pub fn generated_text(seed: u64, from: u64, count: u64) -> String {
    let mut s = String::with_capacity(count as usize * 8);
    for i in from..from + count {
        s.push(' ');
        s.push_str(word(seed, i));
    }
    s
}

/// Where a request without `ignore_eos` produces its pseudo end-of-sequence:
/// after 32..=1055 tokens, fixed by the seed.
pub fn eos_point(seed: u64) -> u32 {
    32 + (mix(seed ^ 0x00E0_5E05) % 1024) as u32
}

/// A stop string found in the generated text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopMatch {
    /// Tokens generated until the stop string is complete.
    pub tokens: u32,
    /// Byte length of the text before the stop string.
    pub cut: usize,
    /// The stop string that matched.
    pub stop: String,
}

/// Scan the first `limit` generated tokens for a stop string that completes
/// at token `min_tokens` or later (vLLM does not stop before `min_tokens`).
/// The earliest match wins; at the same position, the first in `stops`.
pub fn find_stop(seed: u64, limit: u32, stops: &[String], min_tokens: u32) -> Option<StopMatch> {
    let stops: Vec<&String> = stops.iter().filter(|s| !s.is_empty()).collect();
    if stops.is_empty() {
        return None;
    }
    let longest = stops.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut text = String::new();
    for i in 0..u64::from(limit) {
        let before = text.len();
        text.push(' ');
        text.push_str(word(seed, i));
        if i + 1 < u64::from(min_tokens) {
            continue;
        }
        // Only matches ending in the new token are new (earlier ones were
        // found before, or came before `min_tokens`).
        let from = before.saturating_sub(longest);
        let from = (0..=from)
            .rev()
            .find(|&p| text.is_char_boundary(p))
            .unwrap_or(0);
        let mut best: Option<(usize, &String)> = None;
        for s in &stops {
            let ends_here = text[from..]
                .match_indices(s.as_str())
                .map(|(p, _)| from + p)
                .find(|p| p + s.len() > before);
            if let Some(p) = ends_here {
                if best.is_none_or(|(b, _)| p < b) {
                    best = Some((p, s));
                }
            }
        }
        if let Some((cut, stop)) = best {
            return Some(StopMatch {
                tokens: i as u32 + 1,
                cut,
                stop: stop.clone(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index gives what a scan of the list gives (its first position).
    #[test]
    fn word_ids_are_first_positions_in_the_list() {
        for (i, w) in WORDS.iter().enumerate() {
            let first = WORDS.iter().position(|x| x == w).unwrap();
            assert!(first <= i);
            assert_eq!(token_id(w), WORD_BASE + first as u32);
        }
        assert!(token_id("notaword") >= HASH_BASE);
    }

    #[test]
    fn splits_words_and_punctuation() {
        assert_eq!(
            split("Hello, world!  a1b"),
            vec!["Hello", ",", "world", "!", "a1b"]
        );
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("héllo wörld"), 2);
    }

    #[test]
    fn vocabulary_roundtrips() {
        let text = generated_text(7, 0, 20);
        let ids = tokenize(&text);
        assert_eq!(ids.len(), 20);
        assert_eq!(format!(" {}", detokenize(&ids).unwrap()), text);
        assert_eq!(
            detokenize(&tokenize("lorem, ipsum")).unwrap(),
            "lorem, ipsum"
        );
        let unk = tokenize("zebra");
        assert!(unk[0] >= HASH_BASE && unk[0] < VOCAB_SIZE);
    }

    #[test]
    fn detokenize_inverts_tokenize_on_ids() {
        // Unknown words, capitals, non-ASCII punctuation, odd spacing.
        let text = "Hello,  world!\n\t(zebra) — naïve 42 lorem…ipsum \u{1}";
        let ids = tokenize(text);
        let back = detokenize(&ids).unwrap();
        assert_eq!(tokenize(&back), ids, "{back:?}");
        // Every id tokenize can produce comes back as itself.
        let all: Vec<u32> = (0..VOCAB_SIZE).filter(|&i| is_token_id(i)).collect();
        assert_eq!(
            all.len(),
            128 - 62 - 6 + WORDS.len() + (VOCAB_SIZE - HASH_BASE) as usize
        );
        assert_eq!(tokenize(&detokenize(&all).unwrap()), all);
        assert_eq!(detokenize(&[97]), Err(97));
        assert_eq!(detokenize(&[VOCAB_SIZE]), Err(VOCAB_SIZE));
        assert_eq!(detokenize(&[256, 200]), Err(200));
    }

    #[test]
    fn generation_is_deterministic() {
        assert_eq!(generated_text(1, 0, 10), generated_text(1, 0, 10));
        assert_ne!(generated_text(1, 0, 10), generated_text(2, 0, 10));
        assert_eq!(
            generated_text(1, 0, 10),
            generated_text(1, 0, 4) + &generated_text(1, 4, 6)
        );
        assert!((32..1056).contains(&eos_point(99)));
    }

    #[test]
    fn stop_strings_cut_the_text() {
        let text = generated_text(3, 0, 50);
        let target = word(3, 10);
        let stop = vec![format!(" {target}")];
        let m = find_stop(3, 50, &stop, 0).unwrap();
        let first = text.find(&stop[0]).unwrap();
        assert_eq!(m.cut, first);
        assert_eq!(m.stop, stop[0]);
        assert!(m.tokens <= 11);
        assert_eq!(find_stop(3, 50, &["no such".to_string()], 0), None);
        // Not before min_tokens: the match found is a later one, if any.
        if let Some(later) = find_stop(3, 50, &stop, m.tokens + 1) {
            assert!(later.tokens > m.tokens && later.cut > m.cut);
        }
    }
}
