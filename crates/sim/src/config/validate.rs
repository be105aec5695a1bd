//! Range checks for [`SimConfig`]: each error names the field and its allowed range.

use super::{Acceptance, ConfigError, SimConfig, SpeculativeConfig, ThermalConfig};

fn int_range(field: &str, value: u64, lo: u64, hi: u64) -> Result<(), ConfigError> {
    if value < lo || value > hi {
        return Err(ConfigError::OutOfRange {
            field: field.to_string(),
            value: value.to_string(),
            allowed: format!("{lo}..={hi}"),
        });
    }
    Ok(())
}

/// `lo_open`: whether `lo` itself is excluded.
fn float_range(
    field: &str,
    value: f64,
    lo: f64,
    lo_open: bool,
    hi: f64,
) -> Result<(), ConfigError> {
    let below = if lo_open { value <= lo } else { value < lo };
    if !value.is_finite() || below || value > hi {
        let allowed = if lo_open {
            format!("> {lo} and <= {hi}")
        } else {
            format!("{lo}..={hi}")
        };
        return Err(ConfigError::OutOfRange {
            field: field.to_string(),
            value: value.to_string(),
            allowed,
        });
    }
    Ok(())
}

const MAX_MS: f64 = 3_600_000.0;

/// The largest KV pool, in tokens.
pub(super) const MAX_KV_POOL_TOKENS: u64 = 1 << 31;

/// A duration in milliseconds: `0..=MAX_MS`.
fn ms(field: &str, value: f64) -> Result<(), ConfigError> {
    float_range(field, value, 0.0, false, MAX_MS)
}

/// See [`SimConfig::validate`]: one group of checks a part of the config, in a
/// fixed order; the first bad field is the one reported.
pub(super) fn validate(c: &SimConfig) -> Result<(), ConfigError> {
    if c.model.trim().is_empty() {
        return Err(ConfigError::Invalid {
            field: "model".into(),
            reason: "must not be empty".into(),
        });
    }
    check_memory(c)?;
    check_batching(c)?;
    check_timing(c)?;
    if let Some(s) = &c.speculative {
        check_speculative(s)?;
    }
    if let Some(t) = &c.thermal {
        check_thermal(t)?;
    }
    if let Some(r) = &c.reasoning {
        int_range(
            "reasoning.tokens",
            r.tokens.into(),
            1,
            c.max_model_len.into(),
        )?;
        float_range("reasoning.spread", r.spread, 0.0, false, 1.0)?;
    }
    if let Some(e) = &c.embeddings {
        ms("embeddings.pass_ms", e.pass_ms)?;
        ms("embeddings.per_token_ms", e.per_token_ms)?;
        int_range(
            "embeddings.max_batch_tokens",
            e.max_batch_tokens.into(),
            1,
            u32::MAX.into(),
        )?;
        int_range("embeddings.dimension", e.dimension.into(), 1, 65_536)?;
    }
    if let Some(s) = &c.schedule {
        ms("schedule.ttft_ms", s.ttft_ms)?;
        ms("schedule.itl_ms", s.itl_ms)?;
    }
    if let Some(j) = &c.jitter {
        float_range("jitter.step", j.step, 0.0, false, 1.0)?;
        float_range("jitter.request", j.request, 0.0, false, 1.0)?;
    }
    if let Some(a) = &c.adapters {
        a.validate(&c.model)?;
    }
    for (i, rule) in c.faults.iter().enumerate() {
        int_range(&format!("faults[{i}].every"), rule.every, 1, u64::MAX)?;
    }
    Ok(())
}

/// Blocks, the KV pool (at least one block) and `max_model_len` (one
/// full-length request must fit the pool).
fn check_memory(c: &SimConfig) -> Result<(), ConfigError> {
    float_range(
        "tool_call_invalid_share",
        c.tool_call_invalid_share,
        0.0,
        false,
        1.0,
    )?;
    let schema = c.tool_call_schema_invalid_share;
    let room = 1.0 - c.tool_call_invalid_share;
    float_range("tool_call_schema_invalid_share", schema, 0.0, false, room)?;
    int_range("block_size", c.block_size.into(), 1, 1024)?;
    int_range(
        "kv_pool_tokens",
        c.kv_pool_tokens.into(),
        1,
        MAX_KV_POOL_TOKENS,
    )?;
    if c.kv_pool_tokens < c.block_size {
        return Err(ConfigError::OutOfRange {
            field: "kv_pool_tokens".into(),
            value: c.kv_pool_tokens.to_string(),
            allowed: format!(
                "{}..={MAX_KV_POOL_TOKENS} (at least one block)",
                c.block_size
            ),
        });
    }
    int_range("max_model_len", c.max_model_len.into(), 1, 1 << 24)?;
    if u64::from(c.max_model_len) > c.kv_capacity_tokens() {
        return Err(ConfigError::OutOfRange {
            field: "max_model_len".into(),
            value: c.max_model_len.to_string(),
            allowed: format!(
                "1..={} (the KV pool must hold one full-length request)",
                c.kv_capacity_tokens()
            ),
        });
    }
    Ok(())
}

/// The scheduler's batch limits.
fn check_batching(c: &SimConfig) -> Result<(), ConfigError> {
    int_range("max_num_seqs", c.max_num_seqs.into(), 1, 65_536)?;
    int_range(
        "max_num_batched_tokens",
        c.max_num_batched_tokens.into(),
        1,
        1 << 24,
    )
}

/// Load time, time scale and the step cost model.
fn check_timing(c: &SimConfig) -> Result<(), ConfigError> {
    ms("load_time_ms", c.load_time_ms)?;
    float_range("time_scale", c.time_scale, 0.0, true, 1000.0)?;
    for (field, value) in [
        ("step_fixed_ms", c.step_fixed_ms),
        ("per_prefill_token_ms", c.per_prefill_token_ms),
        ("per_decode_seq_ms", c.per_decode_seq_ms),
        ("per_kv_token_ms", c.per_kv_token_ms),
        ("prefill_step_ms", c.prefill_step_ms),
        ("per_prefill_seq_ms", c.per_prefill_seq_ms),
        ("frontend_ms", c.frontend_ms),
        ("frontend_chunk_ms", c.frontend_chunk_ms),
        ("sched_cpu_ms", c.sched_cpu_ms),
    ] {
        ms(field, value)?;
    }
    Ok(())
}

/// The `[speculative]` section and its acceptance distribution.
fn check_speculative(s: &SpeculativeConfig) -> Result<(), ConfigError> {
    int_range(
        "speculative.num_speculative_tokens",
        s.num_speculative_tokens.into(),
        1,
        64,
    )?;
    ms("speculative.verify_cost_ms", s.verify_cost_ms)?;
    ms("speculative.per_draft_token_ms", s.per_draft_token_ms)?;
    match s.acceptance {
        Acceptance::Beta { alpha, beta } => {
            float_range("speculative.acceptance.alpha", alpha, 0.0, true, 1000.0)?;
            float_range("speculative.acceptance.beta", beta, 0.0, true, 1000.0)
        }
        Acceptance::Uniform { mean, spread } => {
            float_range("speculative.acceptance.mean", mean, 0.0, false, 1.0)?;
            float_range("speculative.acceptance.spread", spread, 0.0, false, 1.0)
        }
    }
}

/// The `[thermal]` section: throttled below boost, hot above idle.
fn check_thermal(t: &ThermalConfig) -> Result<(), ConfigError> {
    float_range("thermal.boost_mhz", t.boost_mhz, 0.0, true, 10_000.0)?;
    float_range(
        "thermal.throttled_mhz",
        t.throttled_mhz,
        0.0,
        true,
        t.boost_mhz,
    )?;
    float_range("thermal.heat_after_s", t.heat_after_s, 0.0, true, 86_400.0)?;
    float_range(
        "thermal.recover_after_s",
        t.recover_after_s,
        0.0,
        true,
        86_400.0,
    )?;
    float_range("thermal.idle_temp_c", t.idle_temp_c, -50.0, false, 150.0)?;
    float_range(
        "thermal.hot_temp_c",
        t.hot_temp_c,
        t.idle_temp_c,
        false,
        150.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_messages() {
        let c = SimConfig {
            time_scale: 0.0,
            ..SimConfig::default()
        };
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "time_scale = 0 is out of range: must be > 0 and <= 1000"
        );
        let c = SimConfig {
            step_fixed_ms: f64::NAN,
            ..SimConfig::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("step_fixed_ms = NaN"));
    }

    #[test]
    fn max_model_len_must_fit_pool() {
        let c = SimConfig {
            kv_pool_tokens: 1000,
            max_model_len: 2000,
            ..SimConfig::default()
        };
        let msg = c.validate().unwrap_err().to_string();
        assert!(msg.starts_with("max_model_len = 2000"), "{msg}");
    }

    #[test]
    fn nested_fields_named() {
        let mut c = crate::config::preset("vllm-fast-b").unwrap();
        if let Some(t) = c.thermal.as_mut() {
            t.throttled_mhz = 99_999.0;
        }
        let msg = c.validate().unwrap_err().to_string();
        assert!(msg.starts_with("thermal.throttled_mhz = 99999"), "{msg}");
    }
}
