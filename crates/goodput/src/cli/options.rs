//! The parsed flags made the library's typed options, one value per command, and
//! the combinations of flags no command supports refused (exit 2, naming both).

use super::{CommonArgs, FitArgs, LevelArgs, MergeArgs, RunArgs, TrialArgs};
use crate::define::options::Execution;
use crate::define::profile::Overrides;
use crate::distribute::shard::merge::MergeOptions;
use crate::model::fit::FitOptions;
use crate::UsageError;

/// `--concurrency 1,4,16` or `--rate 0.5,2`: load levels, each a finite number.
#[derive(Debug, Clone, PartialEq)]
pub struct Levels(pub Vec<f64>);

impl std::str::FromStr for Levels {
    type Err = crate::define::profile::SpellingError;

    fn from_str(s: &str) -> Result<Levels, Self::Err> {
        crate::define::profile::parse_points(s).map(Levels)
    }
}

impl TrialArgs {
    /// The profile overrides these flags give (the load levels' left unset).
    pub(super) fn overrides(&self) -> Overrides {
        Overrides {
            trials: self.trials,
            requests: self.requests,
            slo: self.slo.clone(),
            engines: self.engines.clone(),
            seed: self.seed,
            usd_per_hour: self.usd_per_hour.clone(),
            interleave: match (self.interleave, self.no_interleave) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            prompt_salt: self.prompt_salt.clone(),
            ..Default::default()
        }
    }

    /// The overrides of `goodput run` (and of a cluster job's shards): these
    /// flags with the load levels'.
    pub(super) fn with_levels(&self, levels: &LevelArgs) -> Overrides {
        Overrides {
            concurrency: levels.concurrency.clone().map(|l| l.0),
            rate: levels.rate.clone().map(|l| l.0),
            ..self.overrides()
        }
    }
}

impl CommonArgs {
    /// Where the run writes and how it treats what is there.
    pub(super) fn execution(&self, output: &std::path::Path) -> Execution {
        Execution {
            output: output.to_path_buf(),
            fresh: self.fresh,
            force: self.force,
            quiet: self.quiet,
            html: !self.no_html,
            ttft_includes_connect: self.ttft_includes_connect,
            ca_certs: self.ca_cert.clone(),
        }
    }
}

impl RunArgs {
    /// Refuses what `run --predict` would ignore. (`--predict` with `--shard`,
    /// `--load-shard` or `--save-result` is refused by the parser, for `search`
    /// too; there, `--fresh` and `--ttft-includes-connect` reach the real
    /// confirmation run.)
    pub(super) fn refuse_unsupported(&self) -> Result<(), UsageError> {
        let c = &self.common;
        if c.predict.is_none() {
            return Ok(());
        }
        let ignored = [
            (
                c.fresh,
                "--fresh",
                "a prediction never resumes; --force overwrites an earlier one",
            ),
            (
                c.ttft_includes_connect,
                "--ttft-includes-connect",
                "a prediction opens no connections",
            ),
            (
                c.client_threads.is_some(),
                "--client-threads",
                "a prediction sends no requests",
            ),
        ];
        match ignored.iter().find(|(given, _, _)| *given) {
            Some((_, flag, why)) => Err(UsageError(format!(
                "run --predict cannot be used with {flag}: {why}"
            ))),
            None => Ok(()),
        }
    }
}

impl FitArgs {
    pub(super) fn options(self) -> FitOptions {
        FitOptions {
            report: self.report,
            engine: self.engine,
            output: self.output,
            force: self.force,
        }
    }
}

impl MergeArgs {
    pub(super) fn options(self) -> MergeOptions {
        MergeOptions {
            shards: self.shards,
            output: self.output,
            force: self.force,
            html: !self.no_html,
        }
    }
}
