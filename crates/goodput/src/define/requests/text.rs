//! Synthetic text: random common words (about one token each), or a repeated
//! passage that n-gram drafting finds; and seeded blocks of words for prefixes.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::define::profile::TextStyle;

/// Common short English words: about one token each in the usual BPE vocabularies.
pub(crate) const WORDS: &[&str] = &[
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

/// A length drawn uniformly from `[L(1-r), L(1+r)]`, at least 1.
pub(super) fn draw_len(rng: &mut StdRng, l: u32, r: f64) -> u32 {
    if r <= 0.0 {
        return l;
    }
    let lo = ((l as f64) * (1.0 - r)).round().max(1.0) as u32;
    let hi = ((l as f64) * (1.0 + r)).round().max(lo as f64) as u32;
    rng.gen_range(lo..=hi)
}

pub(super) fn synthetic_text(rng: &mut StdRng, words: usize, style: TextStyle) -> String {
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

/// `words` random words seeded by `key` alone: the same key gives the same text
/// (a shared prefix block), another key other text.
pub(super) fn block_text(key: u64, words: usize) -> String {
    let mut rng = StdRng::seed_from_u64(key);
    synthetic_text(&mut rng, words, TextStyle::Random)
}
