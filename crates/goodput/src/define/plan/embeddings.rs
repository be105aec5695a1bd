//! Embeddings engines (`api = "embeddings"`) and `[workload] inputs`: what a
//! profile may ask of them. They answer whole, so an SLO may bound only what
//! applies to them (E2EL: [`report::metric::Applies`]); their requests carry
//! synthetic texts, so the workload is synthetic.

use indexmap::IndexMap;
use report::Slo;

use super::check::Checker;
use crate::define::profile::{EngineSpec, ProfileError, WorkloadSpec};

/// Most texts one embeddings request may carry.
pub const MAX_INPUTS: u64 = 10_000;

/// `[workload] inputs`, in range.
pub(super) fn check_inputs(
    check: &Checker,
    inputs: Option<u32>,
) -> Result<Option<u32>, ProfileError> {
    inputs
        .map(|n| check.count("workload.inputs", n, 1..=MAX_INPUTS))
        .transpose()
}

/// Refuses what an embeddings engine cannot serve or be judged by: a workload
/// other than synthetic, an SLO bound on a metric it has no value of (TTFT,
/// TPOT, ...), and `inputs` given to an engine that generates.
pub(super) fn check_embeddings(
    check: &Checker,
    workload: &WorkloadSpec,
    engines: &IndexMap<String, EngineSpec>,
    slo: &Slo,
) -> Result<(), ProfileError> {
    let inputs_given = matches!(workload, WorkloadSpec::Synthetic(s) if s.inputs.is_some());
    if inputs_given {
        if let Some((name, e)) = engines.iter().find(|(_, e)| !e.api.embeds()) {
            return Err(check.bad(
                "workload.inputs",
                format!(
                    "is the number of texts an embeddings request carries: engine `{name}` \
                     uses the {} API; set api = \"embeddings\" or drop `inputs`",
                    e.api.name()
                ),
            ));
        }
    }
    let Some(name) = engines.iter().find(|(_, e)| e.api.embeds()).map(|(n, _)| n) else {
        return Ok(());
    };
    if !matches!(workload, WorkloadSpec::Synthetic(_)) {
        return Err(check.bad(
            &format!("engines.{name}.api"),
            format!(
                "\"embeddings\" sends synthetic texts: a {} workload is for generation; \
                 use kind = \"synthetic\" with input_tokens and inputs",
                crate::define::profile::kind_name(workload.kind())
            ),
        ));
    }
    for (metric, _) in slo.bounds.iter() {
        if !metric.def().applies.to(true) {
            return Err(check.bad(
                &format!("slo.{}", metric.field()),
                format!(
                    "bounds the {} ({}), which engine `{name}` (api = \"embeddings\") does not \
                     have: an embeddings answer comes whole, not streamed; bound e2el_ms \
                     (end-to-end latency) instead",
                    metric.def().name,
                    metric.label()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::define::plan::{Plan, Workload};
    use crate::define::profile::{Overrides, Profile, ProfileError};

    fn plan(slo: &str, workload: &str, api: &str) -> Result<Plan, ProfileError> {
        let text = format!(
            "name = \"t\"\n[slo]\n{slo}\n[load]\npoints = [1]\nrequests_per_trial = 3\n\
             [workload]\n{workload}\n\
             [engines.a]\nurl = \"http://127.0.0.1:1\"\napi = \"{api}\"\n"
        );
        Profile::parse(&text, "p.toml")?.into_plan("p.toml", &Overrides::default())
    }

    #[test]
    fn an_embeddings_workload_needs_no_output_length() {
        let p = plan(
            "e2el_ms = 50",
            "input_tokens = 10\ninputs = 4",
            "embeddings",
        )
        .unwrap();
        assert!(matches!(
            p.workload,
            Workload::Synthetic {
                inputs: Some(4),
                ..
            }
        ));
        assert_eq!(p.workload_description["inputs"], 4);
    }

    #[test]
    fn a_bound_an_embeddings_engine_cannot_have_is_refused() {
        for (slo, field) in [
            ("ttft_ms = 50", "slo.ttft_ms"),
            ("tpot_ms = 5", "slo.tpot_ms"),
            ("ttfat_ms = 50", "slo.ttfat_ms"),
        ] {
            let e = plan(slo, "input_tokens = 10\ninputs = 2", "embeddings")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(field) && e.contains("engine `a`") && e.contains("e2el_ms"),
                "{e}"
            );
        }
    }

    #[test]
    fn inputs_go_with_embeddings_and_embeddings_with_synthetic_texts() {
        let e = plan(
            "ttft_ms = 50",
            "input_tokens = 10\noutput_tokens = 5\ninputs = 2",
            "chat",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("workload.inputs") && e.contains("chat API"),
            "{e}"
        );
        let e = plan(
            "e2el_ms = 50",
            "input_tokens = 10\ninputs = 0",
            "embeddings",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("workload.inputs") && e.contains("out of range"),
            "{e}"
        );
        let prefix = "kind = \"prefix\"\ngroups = 2\nprefix_tokens = 10\nsuffix_tokens = 5\noutput_tokens = 4";
        let e = plan("e2el_ms = 50", prefix, "embeddings")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("engines.a.api") && e.contains("synthetic"),
            "{e}"
        );
        let e = plan(
            "e2el_ms = 50",
            "kind = \"prefix\"\ninputs = 2",
            "embeddings",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`inputs` is not a key of a prefix workload"),
            "{e}"
        );
    }
}
