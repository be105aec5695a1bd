//! `kind = "prefix"`: `groups` groups of requests, each group sharing a prefix of
//! `prefix_tokens` (a system prompt), then `suffix_tokens` of its own text.
//!
//! Request `i` of a trial belongs to group `i % groups`, so the first `groups`
//! requests each bring a new prefix and every later one repeats one. Prefixes are
//! seeded by the trial (a trial starts with a cold cache, whatever ran before).

use super::text::block_text;
use super::{Asked, Builder, Prepared};

/// The validated prefix workload.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixWorkload {
    /// Number of distinct prefixes.
    pub groups: u32,
    /// Tokens of each shared prefix.
    pub prefix_tokens: u32,
    /// Tokens of each request's own text after it.
    pub suffix_tokens: u32,
    /// Output tokens asked for (exactly: `min_tokens`, `ignore_eos`).
    pub output_tokens: u32,
    /// Calibrate words to tokens through `/tokenize`.
    pub calibrate: bool,
}

impl PrefixWorkload {
    /// The share of a trial's prompt tokens that repeat an earlier request's prefix
    /// (what a perfect prefix cache would not prefill again) over `n` requests:
    /// `(n - min(groups, n)) * prefix / (n * (prefix + suffix))`. An engine caches
    /// whole blocks only (vLLM: 16 tokens), so it reports a little less.
    pub fn expected_hit_share(&self, n: u32) -> f64 {
        let n = n.max(1) as f64;
        let repeats = n - (self.groups as f64).min(n);
        let per = (self.prefix_tokens + self.suffix_tokens).max(1) as f64;
        repeats * self.prefix_tokens as f64 / (n * per)
    }
}

/// `n` requests of a trial seeded by `key`.
pub(super) fn build(b: &Builder, p: &PrefixWorkload, n: u32, key: u64) -> Vec<Prepared> {
    let prefixes: Vec<String> = (0..p.groups.min(n.max(1)))
        .map(|g| {
            block_text(
                key ^ (u64::from(g) + 1).wrapping_mul(0xA24B_AED4_963E_E407),
                b.words(p.prefix_tokens),
            )
        })
        .collect();
    (0..n)
        .map(|i| {
            let g = i % p.groups;
            let own = block_text(
                !key ^ (u64::from(i) + 1).wrapping_mul(0x9FB2_1C65_1E98_DF25),
                b.words(p.suffix_tokens),
            );
            let asked = Asked {
                max_tokens: Some(p.output_tokens),
                input_tokens: Some(p.prefix_tokens + p.suffix_tokens),
                shared_tokens: Some(if i >= p.groups { p.prefix_tokens } else { 0 }),
                session: Some(g),
                turn: None,
                exact: true,
                tools: None,
                tools_offered: 0,
                images: None,
                inputs: None,
            };
            b.prepared(&format!("{} {own}", prefixes[g as usize]), asked, true)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::define::plan::Workload;
    use crate::define::profile::Api;

    fn prompts(p: PrefixWorkload, n: u32, sample: u64) -> Vec<(String, Asked)> {
        let b = Builder {
            workload: Workload::Prefix(p),
            model: "m".into(),
            api: Api::Completions,
            tokens_per_word: 1.0,
            chat_fields: Default::default(),
            salt: None,
            images: None,
        };
        b.build(n, 1, sample)
            .into_iter()
            .map(|r| {
                let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
                (v["prompt"].as_str().unwrap().to_string(), r.asked)
            })
            .collect()
    }

    const P: PrefixWorkload = PrefixWorkload {
        groups: 3,
        prefix_tokens: 40,
        suffix_tokens: 10,
        output_tokens: 4,
        calibrate: false,
    };

    #[test]
    fn a_group_shares_its_prefix_and_nothing_else() {
        let reqs = prompts(P, 9, 0);
        let head = |s: &str| s.split(' ').take(40).collect::<Vec<_>>().join(" ");
        for (i, (text, asked)) in reqs.iter().enumerate() {
            assert_eq!(text.split(' ').count(), 50);
            assert_eq!(asked.session, Some(i as u32 % 3));
            assert_eq!(asked.shared_tokens, Some(if i >= 3 { 40 } else { 0 }));
            for (j, (other, _)) in reqs.iter().enumerate().skip(i + 1) {
                assert_eq!(head(text) == head(other), i % 3 == j % 3, "{i} {j}");
                assert_ne!(text, other, "suffixes are distinct");
            }
        }
        let other_trial = prompts(P, 9, 1);
        assert_ne!(
            head(&reqs[0].0),
            head(&other_trial[0].0),
            "a trial starts cold"
        );
    }

    #[test]
    fn the_expected_hit_share_counts_the_repeats() {
        // 9 requests, 3 groups: 6 repeats of 40 of 50 tokens.
        assert!((P.expected_hit_share(9) - 6.0 * 40.0 / (9.0 * 50.0)).abs() < 1e-12);
        assert_eq!(P.expected_hit_share(2), 0.0);
    }
}
