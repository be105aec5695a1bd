//! What `run`, `search` and the cluster writers were asked to do, typed and
//! validated: [`crate::cli`] parses the flags into these (and is the only module
//! that knows the parser); the library takes them. Two hops from a flag to the
//! plan: the parsed flags give one [`Overrides`] per command, which
//! `Profile::into_plan` lays over the profile. [`Overrides::argv`] renders them
//! back into `goodput run` flags, for the jobs the cluster writers write.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use crate::define::profile::{format_slo, Overrides};

/// The command line's values over the profile's, as `goodput run`'s flags write
/// them back: the cluster writers give every shard these arguments.
impl Overrides {
    /// These overrides as `goodput run` arguments, which parse back into the same
    /// overrides (numbers are written in Rust's shortest form that reads back
    /// exactly). `search` and `mode` are `goodput search`'s and not written: a
    /// cluster job runs `goodput run`.
    pub fn argv(&self) -> Vec<String> {
        let mut a = Vec::new();
        let mut opt = |flag: &str, v: Option<String>| {
            if let Some(v) = v {
                a.push(flag.to_string());
                a.push(v);
            }
        };
        let levels = |xs: &Vec<f64>| xs.iter().map(f64::to_string).collect::<Vec<_>>().join(",");
        let t = self;
        opt("--concurrency", t.concurrency.as_ref().map(levels));
        opt("--rate", t.rate.as_ref().map(levels));
        opt("--trials", t.trials.map(|v| v.to_string()));
        opt("--requests", t.requests.map(|v| v.to_string()));
        opt("--slo", t.slo.as_ref().map(format_slo));
        opt("--seed", t.seed.map(|v| v.to_string()));
        match t.interleave {
            Some(true) => a.push("--interleave".into()),
            Some(false) => a.push("--no-interleave".into()),
            None => {}
        }
        for e in &t.engines {
            a.push("--engine".into());
            a.push(e.clone());
        }
        for (engine, usd) in &t.usd_per_hour {
            a.push("--usd-per-hour".into());
            a.push(match engine {
                Some(e) => format!("{e}={usd}"),
                None => usd.to_string(),
            });
        }
        use crate::define::profile::PromptSalt;
        match &t.prompt_salt {
            Some(PromptSalt::Draw) => a.push("--prompt-salt".into()),
            Some(PromptSalt::Given(s)) => a.push(format!("--prompt-salt={s}")),
            None => {}
        }
        a
    }
}

/// Where a run or search writes, and how it treats what is there.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// The report file.
    pub output: PathBuf,
    /// `--fresh`: start over instead of resuming.
    pub fresh: bool,
    /// `--force`: overwrite whatever is at the output.
    pub force: bool,
    /// `--quiet`: no progress bars or status lines.
    pub quiet: bool,
    /// Write the HTML page beside the report (not `--no-html`).
    pub html: bool,
    /// `--ttft-includes-connect`.
    pub ttft_includes_connect: bool,
    /// `--ca-cert FILE`s.
    pub ca_certs: Vec<PathBuf>,
}

impl Execution {
    /// The run's options (the one place they are built): progress on a terminal
    /// unless quiet, five seconds of grace after an interrupt.
    pub fn run_options(
        &self,
        shard: Option<report::ShardInfo>,
        load_shard: Option<LoadShare>,
    ) -> RunOptions {
        RunOptions {
            output: self.output.clone(),
            fresh: self.fresh,
            force: self.force,
            progress: !self.quiet && std::io::stderr().is_terminal(),
            verbose: !self.quiet,
            html: self.html,
            grace: Duration::from_secs(5),
            shard,
            load_shard,
            ttft_includes_connect: self.ttft_includes_connect,
            ca_certs: self.ca_certs.clone(),
        }
    }
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The report file.
    pub output: PathBuf,
    /// Start afresh instead of resuming an incomplete report (a complete one still
    /// needs `force`).
    pub fresh: bool,
    /// Overwrite whatever is at the output: a complete report, a file that is not a
    /// report, a stray requests file or HTML page.
    pub force: bool,
    /// Show progress bars (only drawn on a terminal).
    pub progress: bool,
    /// Print status lines to stderr.
    pub verbose: bool,
    /// Write `<report>.html` beside the report.
    pub html: bool,
    /// Grace period for in-flight requests after an interrupt.
    pub grace: Duration,
    /// The slice of a whole plan this run is (`--shard I/N`; `plan` is then the
    /// slice), written to the report's `run.shard`.
    pub shard: Option<report::ShardInfo>,
    /// This client's share of every load level (`--load-shard I/N`), written to
    /// the report's `run.load_shard`.
    pub load_shard: Option<LoadShare>,
    /// Count a request's connection set-up (when it needed a new connection) in its
    /// TTFT, as most peers do; by default TTFT starts when the request is sent.
    pub ttft_includes_connect: bool,
    /// PEM files of CA certificates trusted for `https` engines beside the built-in
    /// roots (`--ca-cert`; engines' `ca_cert`, `SSL_CERT_FILE` and `SSL_CERT_DIR` are
    /// added: [`crate::drive::client::tls`]).
    pub ca_certs: Vec<PathBuf>,
}

impl RunOptions {
    /// A run into `output` that starts afresh over whatever is there, prints
    /// nothing and writes no HTML: what the benchmarks measure with.
    pub fn fresh_and_silent(output: PathBuf) -> RunOptions {
        RunOptions {
            output,
            fresh: true,
            force: true,
            progress: false,
            verbose: false,
            html: false,
            grace: Duration::from_secs(5),
            shard: None,
            load_shard: None,
            ttft_includes_connect: false,
            ca_certs: Vec::new(),
        }
    }
}

/// This client's place among those sharing the load (`--load-shard I/N`; how a
/// level is split: `crate::drive::load::share`).
#[derive(Debug, Clone)]
pub struct LoadShare {
    /// This client, from 0.
    pub index: u32,
    /// How many clients.
    pub count: u32,
    /// The start barrier's folder, when the clients start each trial together.
    pub barrier: Option<PathBuf>,
}
