//! vLLM's engine flags, each mapped onto the [`SimConfig`] key it stands for, so
//! that tuning the simulator is tuning vLLM: `--max-num-seqs 8` sets
//! `max_num_seqs`, `--num-gpu-blocks-override 100` sets the pool to 100 blocks.
//!
//! [`VllmFlags`] holds the flags as given (parsed by the command line; the value
//! parsers of the two flags that are not plain numbers are here:
//! [`parse_speculative_config`], [`parse_human_int`]); [`VllmFlags::apply`]
//! overrides a configuration with them and validates the result, so a value the
//! simulator cannot take is refused with the flag and the key named.

use super::validate::MAX_KV_POOL_TOKENS;
use super::{presets, ConfigError, SimConfig};

/// Each flag and the key it overrides, in the order [`VllmFlags::apply`] applies
/// them (`--block-size` before `--num-gpu-blocks-override`, which counts blocks
/// of the new size).
pub const FLAG_KEYS: &[(&str, &str)] = &[
    ("--max-num-seqs", "max_num_seqs"),
    ("--max-num-batched-tokens", "max_num_batched_tokens"),
    ("--async-scheduling", "async_scheduling"),
    ("--block-size", "block_size"),
    ("--num-gpu-blocks-override", "kv_pool_tokens"),
    ("--max-model-len", "max_model_len"),
    ("--enable-prefix-caching", "prefix_caching"),
    ("--speculative-config", "speculative"),
];

/// The speculative methods the simulator models.
pub const SPECULATIVE_METHODS: &[&str] = &["ngram"];

/// vLLM's engine flags the simulator models; `None` leaves the key as the
/// configuration (`--config` or `--preset`) has it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VllmFlags {
    /// `--max-num-seqs`: `max_num_seqs`.
    pub max_num_seqs: Option<u32>,
    /// `--max-num-batched-tokens`: `max_num_batched_tokens`.
    pub max_num_batched_tokens: Option<u32>,
    /// `--async-scheduling` / `--no-async-scheduling`: `async_scheduling`.
    pub async_scheduling: Option<bool>,
    /// `--block-size`: `block_size`. Alone it keeps the pool's tokens (vLLM's KV
    /// memory does not change with the block size), in whole blocks of the new size.
    pub block_size: Option<u32>,
    /// `--num-gpu-blocks-override`: `kv_pool_tokens` = blocks × block size.
    pub num_gpu_blocks_override: Option<u32>,
    /// `--max-model-len`: `max_model_len`.
    pub max_model_len: Option<u32>,
    /// `--enable-prefix-caching` / `--no-enable-prefix-caching`: `prefix_caching`.
    pub enable_prefix_caching: Option<bool>,
    /// `--speculative-config`: `speculative`.
    pub speculative_config: Option<SpeculativeFlag>,
}

/// `--speculative-config '{"method": "ngram", "num_speculative_tokens": K}'`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeculativeFlag {
    /// `num_speculative_tokens`: drafts proposed per decoding step.
    pub num_speculative_tokens: u32,
}

/// A configuration the flags made invalid: the flags to blame and the check that
/// failed (which names the key and what it allows).
#[derive(Debug, thiserror::Error)]
#[error("{flags}: {error}")]
pub struct VllmFlagError {
    /// The flags, as given (`--max-num-seqs 0`), comma-separated.
    pub flags: String,
    /// The configuration's own check.
    pub error: ConfigError,
}

impl VllmFlags {
    /// Whether no flag was given.
    pub fn is_empty(&self) -> bool {
        *self == VllmFlags::default()
    }

    /// `config` with every given flag's key overridden, validated. On a failed
    /// check the error names the flag of the key that failed, or, when the key is
    /// none of theirs (`max_model_len` too long for a pool the blocks shrank), every
    /// flag given.
    pub fn apply(&self, mut config: SimConfig) -> Result<SimConfig, VllmFlagError> {
        if let Some(n) = self.max_num_seqs {
            config.max_num_seqs = n;
        }
        if let Some(n) = self.max_num_batched_tokens {
            config.max_num_batched_tokens = n;
        }
        if let Some(on) = self.async_scheduling {
            config.async_scheduling = on;
        }
        if let Some(n) = self.block_size {
            config.block_size = n;
        }
        if let Some(blocks) = self.num_gpu_blocks_override {
            let tokens = u64::from(blocks) * u64::from(config.block_size);
            config.kv_pool_tokens = match u32::try_from(tokens) {
                Ok(t) => t,
                Err(_) => {
                    return Err(self.blame(ConfigError::OutOfRange {
                        field: "kv_pool_tokens".into(),
                        value: tokens.to_string(),
                        allowed: format!("1..={MAX_KV_POOL_TOKENS}"),
                    }))
                }
            };
        }
        if let Some(n) = self.max_model_len {
            config.max_model_len = n;
        }
        if let Some(on) = self.enable_prefix_caching {
            config.prefix_caching = on;
        }
        if let Some(s) = self.speculative_config {
            let mut spec = config
                .speculative
                .take()
                .unwrap_or_else(|| presets::ngram(s.num_speculative_tokens));
            spec.num_speculative_tokens = s.num_speculative_tokens;
            config.speculative = Some(spec);
        }
        config.validate().map_err(|e| self.blame(e))?;
        Ok(config)
    }

    /// The flags given, as written on a command line, each with its key.
    fn given(&self) -> Vec<(String, &'static str)> {
        /// A flag's value, in the order of [`FLAG_KEYS`].
        enum Given {
            Number(u32),
            Switch(bool),
            Speculative(u32),
        }
        let values = [
            self.max_num_seqs.map(Given::Number),
            self.max_num_batched_tokens.map(Given::Number),
            self.async_scheduling.map(Given::Switch),
            self.block_size.map(Given::Number),
            self.num_gpu_blocks_override.map(Given::Number),
            self.max_model_len.map(Given::Number),
            self.enable_prefix_caching.map(Given::Switch),
            self.speculative_config
                .map(|s| Given::Speculative(s.num_speculative_tokens)),
        ];
        FLAG_KEYS
            .iter()
            .zip(values)
            .filter_map(|(&(flag, key), value)| {
                let shown = match value? {
                    Given::Number(n) => format!("{flag} {n}"),
                    Given::Switch(true) => flag.to_string(),
                    Given::Switch(false) => flag.replacen("--", "--no-", 1),
                    Given::Speculative(k) => {
                        format!(r#"{flag} '{{"method": "ngram", "num_speculative_tokens": {k}}}'"#)
                    }
                };
                Some((shown, key))
            })
            .collect()
    }

    /// The error of a check, with the flags that set its key (or all given).
    fn blame(&self, error: ConfigError) -> VllmFlagError {
        let field = match &error {
            ConfigError::OutOfRange { field, .. } | ConfigError::Invalid { field, .. } => {
                field.as_str()
            }
            ConfigError::Io { .. } | ConfigError::Parse { .. } => "",
        };
        let given = self.given();
        let owns = |key: &str| field == key || field.starts_with(&format!("{key}."));
        let mut named: Vec<String> = given
            .iter()
            .filter(|(_, key)| owns(key))
            .map(|(shown, _)| shown.clone())
            .collect();
        if named.is_empty() {
            named = given.into_iter().map(|(shown, _)| shown).collect();
        }
        VllmFlagError {
            flags: named.join(", "),
            error,
        }
    }
}

/// `--speculative-config`'s JSON, as vLLM takes it: an object with `method`
/// (only `ngram` is modelled) and `num_speculative_tokens` (at least 1).
pub fn parse_speculative_config(text: &str) -> Result<SpeculativeFlag, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let serde_json::Value::Object(map) = value else {
        return Err(
            r#"must be a JSON object, e.g. {"method": "ngram", "num_speculative_tokens": 5}"#
                .into(),
        );
    };
    if let Some(key) = map
        .keys()
        .find(|k| !matches!(k.as_str(), "method" | "num_speculative_tokens"))
    {
        return Err(format!(
            "`{key}` is not modelled by the simulator; the keys it takes: method, num_speculative_tokens"
        ));
    }
    let supported = SPECULATIVE_METHODS.join(", ");
    match map.get("method") {
        Some(serde_json::Value::String(m)) if SPECULATIVE_METHODS.contains(&m.as_str()) => {}
        Some(serde_json::Value::String(m)) => {
            return Err(format!(
                "method `{m}` is not modelled by the simulator; supported: {supported}"
            ))
        }
        Some(other) => {
            return Err(format!(
                "method must be a string ({supported}), not {other}"
            ))
        }
        None => return Err(format!("needs a `method` ({supported})")),
    }
    let k = match map.get("num_speculative_tokens") {
        Some(v) => v
            .as_u64()
            .and_then(|k| u32::try_from(k).ok())
            .filter(|&k| k >= 1)
            .ok_or_else(|| {
                format!("num_speculative_tokens must be a whole number >= 1, not {v}")
            })?,
        None => return Err("needs `num_speculative_tokens`".into()),
    };
    Ok(SpeculativeFlag {
        num_speculative_tokens: k,
    })
}

/// A count as vLLM's `--max-model-len` reads it: `2048`, or with a suffix,
/// `k`/`m` decimal (`1k` = 1,000, `1.5k` = 1,500), `K`/`M` binary (`2K` = 2,048;
/// whole numbers only).
pub fn parse_human_int(text: &str) -> Result<u32, String> {
    let t = text.trim();
    let too_big = || format!("{t} is too large");
    let (number, suffix) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], Some(c)),
        _ => (t, None),
    };
    let value: u64 = match suffix {
        None => number
            .parse()
            .map_err(|_| format!("{t} is not a whole number"))?,
        Some(c @ ('k' | 'm' | 'g')) => {
            let x: f64 = number
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("{t} is not a number with a `{c}` suffix"))?;
            let scale = match c {
                'k' => 1e3,
                'm' => 1e6,
                _ => 1e9,
            };
            let v = (x * scale).trunc();
            if v > f64::from(u32::MAX) {
                return Err(too_big());
            }
            v as u64
        }
        Some(c @ ('K' | 'M' | 'G')) => {
            let n: u64 = number.parse().map_err(|_| {
                format!(
                    "{t}: decimals are not allowed with binary suffixes like {c}; \
                     did you mean {number}{}?",
                    c.to_ascii_lowercase()
                )
            })?;
            let shift = match c {
                'K' => 10,
                'M' => 20,
                _ => 30,
            };
            n.checked_mul(1 << shift).ok_or_else(too_big)?
        }
        Some(c) => return Err(format!("{t}: unknown suffix `{c}` (k, m, g, K, M, G)")),
    };
    u32::try_from(value).map_err(|_| too_big())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::preset;

    fn flags() -> VllmFlags {
        VllmFlags::default()
    }

    #[test]
    fn each_flag_sets_its_key() {
        let base = preset("vllm-fast-b").unwrap();
        let c = VllmFlags {
            max_num_seqs: Some(8),
            max_num_batched_tokens: Some(512),
            async_scheduling: Some(false),
            max_model_len: Some(1024),
            enable_prefix_caching: Some(false),
            ..flags()
        }
        .apply(base.clone())
        .unwrap();
        assert_eq!(c.max_num_seqs, 8);
        assert_eq!(c.max_num_batched_tokens, 512);
        assert!(!c.async_scheduling);
        assert_eq!(c.max_model_len, 1024);
        assert!(!c.prefix_caching);
        // Nothing else moved.
        let back = SimConfig {
            max_num_seqs: base.max_num_seqs,
            max_num_batched_tokens: base.max_num_batched_tokens,
            async_scheduling: base.async_scheduling,
            max_model_len: base.max_model_len,
            prefix_caching: base.prefix_caching,
            ..c
        };
        assert_eq!(back, base);
        // No flag: the configuration as it was.
        assert!(flags().is_empty());
        assert_eq!(flags().apply(base.clone()).unwrap(), base);
        // And the switches turn on what a configuration has off.
        let off = SimConfig {
            async_scheduling: false,
            prefix_caching: false,
            ..SimConfig::default()
        };
        let on = VllmFlags {
            async_scheduling: Some(true),
            enable_prefix_caching: Some(true),
            ..flags()
        }
        .apply(off)
        .unwrap();
        assert!(on.async_scheduling && on.prefix_caching);
    }

    #[test]
    fn blocks_and_block_size_shape_the_pool() {
        let base = preset("vllm-fast-b").unwrap(); // 183 blocks of 16
        let blocks = |b: VllmFlags| {
            let c = b.apply(base.clone()).unwrap();
            (c.block_size, c.num_gpu_blocks(), c.kv_capacity_tokens())
        };
        let over = VllmFlags {
            num_gpu_blocks_override: Some(200),
            ..flags()
        };
        assert_eq!(blocks(over.clone()), (16, 200, 3200));
        // The override counts blocks of the new size.
        let both = VllmFlags {
            block_size: Some(32),
            ..over
        };
        assert_eq!(blocks(both), (32, 200, 6400));
        // A new block size alone keeps the pool's memory, in whole blocks.
        let size = VllmFlags {
            block_size: Some(32),
            ..flags()
        };
        assert_eq!(blocks(size), (32, 91, 2912));
    }

    #[test]
    fn speculative_config_sets_k_and_keeps_or_brings_the_ngram_model() {
        let k3 = VllmFlags {
            speculative_config: Some(
                parse_speculative_config(r#"{"method": "ngram", "num_speculative_tokens": 3}"#)
                    .unwrap(),
            ),
            ..flags()
        };
        // On the ngram preset: its acceptance and costs, three drafts.
        let ngram = preset("vllm-ngram").unwrap();
        let c = k3.apply(ngram.clone()).unwrap();
        let (before, after) = (ngram.speculative.unwrap(), c.speculative.unwrap());
        assert_eq!(after.num_speculative_tokens, 3);
        assert_eq!(after.acceptance, before.acceptance);
        assert_eq!(after.verify_cost_ms, before.verify_cost_ms);
        // On a configuration without speculation: the ngram preset's model.
        let c = k3.apply(preset("vllm-fast-b").unwrap()).unwrap();
        assert_eq!(c.speculative, Some(presets::ngram(3)));
    }

    #[test]
    fn speculative_config_errors_say_what_is_supported() {
        let err = |s: &str| parse_speculative_config(s).unwrap_err();
        assert_eq!(
            err(r#"{"method": "eagle", "num_speculative_tokens": 3}"#),
            "method `eagle` is not modelled by the simulator; supported: ngram"
        );
        assert_eq!(
            err(r#"{"num_speculative_tokens": 3}"#),
            "needs a `method` (ngram)"
        );
        assert_eq!(
            err(r#"{"method": "ngram"}"#),
            "needs `num_speculative_tokens`"
        );
        assert!(err(r#"{"method": "ngram", "num_speculative_tokens": 0}"#)
            .starts_with("num_speculative_tokens must be a whole number >= 1"));
        assert!(err(r#"{"method": "ngram", "num_speculative_tokens": "3"}"#)
            .starts_with("num_speculative_tokens must be a whole number >= 1"));
        assert!(
            err(r#"{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}"#)
                .starts_with("`prompt_lookup_max` is not modelled")
        );
        assert!(err("ngram").starts_with("not JSON"));
        assert!(err("[1]").starts_with("must be a JSON object"));
    }

    #[test]
    fn an_invalid_override_names_the_flag_and_the_key() {
        let base = preset("vllm-fast-b").unwrap();
        let msg = |f: VllmFlags| f.apply(base.clone()).unwrap_err().to_string();
        assert_eq!(
            msg(VllmFlags {
                max_num_seqs: Some(0),
                max_num_batched_tokens: Some(64),
                ..flags()
            }),
            "--max-num-seqs 0: max_num_seqs = 0 is out of range: must be 1..=65536"
        );
        assert_eq!(
            msg(VllmFlags {
                block_size: Some(2048),
                ..flags()
            }),
            "--block-size 2048: block_size = 2048 is out of range: must be 1..=1024"
        );
        assert_eq!(
            msg(VllmFlags {
                max_model_len: Some(4000),
                ..flags()
            }),
            "--max-model-len 4000: max_model_len = 4000 is out of range: must be 1..=2928 \
             (the KV pool must hold one full-length request)"
        );
        assert!(msg(VllmFlags {
            speculative_config: Some(SpeculativeFlag {
                num_speculative_tokens: 65
            }),
            ..flags()
        })
        .starts_with("--speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 65}': speculative.num_speculative_tokens = 65"));
        // A pool the blocks shrank below max_model_len: every flag given is named.
        assert_eq!(
            msg(VllmFlags {
                num_gpu_blocks_override: Some(10),
                enable_prefix_caching: Some(false),
                ..flags()
            }),
            "--num-gpu-blocks-override 10, --no-enable-prefix-caching: max_model_len = 2048 \
             is out of range: must be 1..=160 (the KV pool must hold one full-length request)"
        );
        assert!(msg(VllmFlags {
            num_gpu_blocks_override: Some(0),
            ..flags()
        })
        .starts_with("--num-gpu-blocks-override 0: kv_pool_tokens = 0 is out of range"));
        assert_eq!(
            msg(VllmFlags {
                num_gpu_blocks_override: Some(u32::MAX),
                block_size: Some(16),
                ..flags()
            }),
            "--num-gpu-blocks-override 4294967295: kv_pool_tokens = \
             68719476720 is out of range: must be 1..=2147483648"
        );
        // Together the two are valid.
        VllmFlags {
            num_gpu_blocks_override: Some(10),
            max_model_len: Some(160),
            ..flags()
        }
        .apply(base.clone())
        .unwrap();
    }

    #[test]
    fn model_len_reads_vllms_suffixes() {
        assert_eq!(parse_human_int("2048"), Ok(2048));
        assert_eq!(parse_human_int("1k"), Ok(1000));
        assert_eq!(parse_human_int("1.5k"), Ok(1500));
        assert_eq!(parse_human_int("2K"), Ok(2048));
        assert_eq!(parse_human_int("1M"), Ok(1 << 20));
        assert_eq!(parse_human_int("1m"), Ok(1_000_000));
        assert!(parse_human_int("1.5K")
            .unwrap_err()
            .contains("did you mean 1.5k"));
        assert!(parse_human_int("-1").is_err());
        assert!(parse_human_int("5G").unwrap_err().contains("too large"));
        assert!(parse_human_int("2x")
            .unwrap_err()
            .contains("unknown suffix"));
        assert!(parse_human_int("").is_err());
    }
}
