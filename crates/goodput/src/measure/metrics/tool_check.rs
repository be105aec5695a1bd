//! A point's requirements on valid tool calls (`[slo] min_valid_tool_calls`,
//! `min_schema_valid_tool_calls`), judged as the attainment is: the pooled share of
//! the calls judged with its interval that allows for the spread between trials
//! (Wilson on the effective sample size, `report::stats::dispersed`), read at the
//! point's level; `meets` when the interval's lower end is at or above the
//! requirement, `fails` when its upper end is below, else `undecided` (more
//! calls would tell: `report::slo::decide::tool_calls_undecided`). A requirement
//! of 1 is a rule on the calls measured. A point whose requests made no call that
//! could be judged fails it: it showed no valid call. The point's judgement is
//! [`super::judgement::all_of`] its requests' and these.

use report::slo::judge_trials;
use report::{Judgement, Slo, ToolCallCheck};

use super::slo::TrialSlo;

/// Each requirement of `slo` judged on the trials' calls, at the normal quantile `z`.
pub fn tool_call_checks(trials: &[TrialSlo], slo: &Slo, z: f64) -> Vec<ToolCallCheck> {
    slo.tool_calls
        .iter()
        .map(|(_, share, required)| {
            let counts: Vec<(u64, u64)> = trials
                .iter()
                .map(|t| {
                    let c = t.tool_calls;
                    let valid = if share == "schema_valid" {
                        c.schema_valid
                    } else {
                        c.valid
                    };
                    (valid, c.judged)
                })
                .collect();
            let judged = judge_trials(&counts, required, z);
            ToolCallCheck {
                share: share.to_string(),
                required,
                valid: counts.iter().map(|c| c.0).sum(),
                judged: counts.iter().map(|c| c.1).sum(),
                interval: super::tool_calls::interval_of(&counts, z),
                judgement: judged.map_or(Judgement::Fails, |(j, _)| j),
            }
        })
        .collect()
}

/// True when the point estimate of every share meets its requirement (some call
/// judged).
pub fn estimates_meet(checks: &[ToolCallCheck]) -> bool {
    checks
        .iter()
        .all(|c| c.judged > 0 && c.valid as f64 >= c.required * c.judged as f64 - 1e-9)
}

/// A trial's calls judged, and of them the valid and the schema-valid ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Calls judged (kept whole).
    pub judged: u64,
    /// Valid JSON.
    pub valid: u64,
    /// Valid against their function's schema.
    pub schema_valid: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::stats::Z95;

    fn trial(judged: u64, valid: u64, schema_valid: u64) -> TrialSlo {
        TrialSlo {
            tool_calls: CallCounts {
                judged,
                valid,
                schema_valid,
            },
            ..TrialSlo::default()
        }
    }

    #[test]
    fn a_share_meets_fails_or_cannot_tell_by_its_interval() {
        let mut slo = Slo::default();
        slo.tool_calls.valid = Some(0.9);
        slo.tool_calls.schema_valid = Some(0.5);
        // 200 of 200 valid JSON: Wilson's lower end 0.981 ≥ 0.9; 150 of 200
        // schema-valid: [0.686, 0.805], above 0.5.
        let c = tool_call_checks(&[trial(200, 200, 150)], &slo, Z95);
        assert_eq!(c[0].share, "valid");
        assert_eq!(
            (c[0].judgement, c[1].judgement),
            (Judgement::Meets, Judgement::Meets)
        );
        assert!(estimates_meet(&c));
        let i = c[1].interval.unwrap();
        assert!(i.low < 0.75 && 0.75 < i.high && i.low > 0.5, "{i:?}");
        // 150 of 200 valid against 0.9: the upper end 0.805 < 0.9 fails.
        let c = tool_call_checks(&[trial(200, 150, 150)], &slo, Z95);
        assert_eq!(c[0].judgement, Judgement::Fails);
        assert!(!estimates_meet(&c));
        // 19 of 20 against 0.9: [0.764, 0.991] straddles it.
        let c = tool_call_checks(&[trial(20, 19, 19)], &slo, Z95);
        assert_eq!(c[0].judgement, Judgement::Undecided);
        assert!(estimates_meet(&c), "95% ≥ 90% as an estimate");
        // No call judged: fails.
        let c = tool_call_checks(&[trial(0, 0, 0)], &slo, Z95);
        assert_eq!(c[0].judgement, Judgement::Fails);
        assert!(c[0].interval.is_none());
    }
}
