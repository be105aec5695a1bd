//! How a run was made and how it ended (`run`), and what a predicted report was
//! predicted from.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{NoticeKind, RunStatus};

/// goodput addition: how the run was made and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RunInfo {
    /// Format version, `SCHEMA`.
    pub schema: String,
    /// `complete`, `partial` (interrupted or trials failed) or `running`.
    pub status: RunStatus,
    /// Why the run is not complete, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `concurrency` (x = requests in flight) or `rate` (x = requests per second).
    pub load_mode: super::LoadMode,
    /// Trials planned per load point.
    pub planned_trials: u32,
    /// Measured requests per trial.
    pub requests_per_trial: u32,
    /// Requests sent before each trial and not measured.
    #[serde(default)]
    pub warmup_requests: u32,
    /// Seed of workload and arrival generation; absent when not recorded (a
    /// peer's result file without one), never a made-up 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The workload, as the profile described it.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub workload: Value,
    /// The raw per-request records, relative to the report's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_file: Option<String>,
    /// Unix time (seconds) when the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<f64>,
    /// Unix time (seconds) when the report was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_unix_s: Option<f64>,
    /// What the plan was, as SHA-256 fingerprints of its parts (`slo`, `load`,
    /// `workload`, `telemetry`, `engine.<name>`), compared on resume so that trials
    /// of different plans never mix. Load levels and the number of trials are not
    /// part of it: a resumed run may add either.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub fingerprints: IndexMap<String, String>,
    /// Things the reader should know that are not per point (e.g. "no GPU
    /// telemetry"), each with its kind. Older reports' plain strings read as
    /// notices of kind `other`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<Notice>,
    /// Set when nothing was measured: the figures were predicted by running the
    /// simulator's engine model in virtual time (`goodput run --predict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Predicted>,
    /// goodput addition: the slice of the plan this report holds, when it is one
    /// shard of a sweep split over machines (`goodput run --shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::ShardInfo>,
    /// goodput addition: the shards this report was merged from (`goodput merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<crate::MergedInfo>,
    /// goodput addition: the slice of every load level this report holds, when it
    /// is one of N clients sharing one load (`goodput run --load-shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_shard: Option<crate::LoadShardInfo>,
    /// goodput addition: with several engines, whether their trials interleaved
    /// (`true`: rounds in which every engine ran its next trial, in an order
    /// shuffled per round from the seed, so that drift over the run is not
    /// confounded with the engine) or ran one engine after the other (`false`).
    /// Absent with one engine, and in reports written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved: Option<bool>,
    /// goodput addition: the profile as run, every flag applied and every default
    /// filled (TOML): `goodput run` on it repeats the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// goodput addition: the random string every prompt of the run started with
    /// (`[workload] salt = true`, `--prompt-salt`), drawn from the OS when the run
    /// started, so that no other run's prompts were in the engine's prefix cache; a
    /// resumed run and every shard of a sweep use the run's one salt. Absent when
    /// the prompts were not salted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_salt: Option<String>,
    /// goodput addition: every measured request exported as an OpenTelemetry span
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT` set; docs/otel.md): where to and how many.
    /// Absent when nothing was exported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otel: Option<OtelExport>,
    /// Unknown fields, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// goodput addition: the run's requests exported as OpenTelemetry spans over
/// OTLP/HTTP. The counts are the run's so far while it runs, and final once it
/// ended: `spans` = `exported` + `dropped` + `failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct OtelExport {
    /// Where the spans were sent: the traces endpoint (`.../v1/traces`).
    pub endpoint: String,
    /// `http/protobuf` or `http/json`.
    pub protocol: super::OtlpProtocol,
    /// Spans made: one per measured request.
    pub spans: u64,
    /// Spans the endpoint accepted.
    pub exported: u64,
    /// Spans dropped because the export queue was full (`OTEL_BSP_MAX_QUEUE_SIZE`).
    pub dropped: u64,
    /// Spans in batches the endpoint refused or did not answer in time, or still
    /// queued when the run ended.
    pub failed: u64,
}

/// goodput addition: what a predicted report was predicted from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Predicted {
    /// The engine configuration the model ran (the file given to `--predict`).
    pub engine_config: String,
    /// The report the configuration was fitted from (`goodput fit`), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fitted_from: Option<String>,
    /// How the figures were made.
    pub method: String,
}

/// goodput addition: one thing the reader should know, with its kind and the
/// engine it concerns (the text names the engine too, as it is shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    /// What it is about.
    pub kind: NoticeKind,
    /// The engine it concerns, when one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The notice as shown.
    pub text: String,
}

impl Notice {
    /// A notice about the whole run.
    pub fn new(kind: NoticeKind, text: impl Into<String>) -> Notice {
        Notice {
            kind,
            engine: None,
            text: text.into(),
        }
    }

    /// A notice about one engine.
    pub fn engine(kind: NoticeKind, engine: &str, text: impl Into<String>) -> Notice {
        Notice {
            kind,
            engine: Some(engine.to_string()),
            text: text.into(),
        }
    }
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A notice as written: an object, or an older report's plain string.
#[derive(Deserialize)]
#[serde(untagged)]
enum NoticeWire {
    Text(String),
    Full {
        #[serde(default)]
        kind: NoticeKind,
        #[serde(default)]
        engine: Option<String>,
        text: String,
    },
}

impl<'de> Deserialize<'de> for Notice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match NoticeWire::deserialize(d)? {
            NoticeWire::Text(text) => Notice::new(NoticeKind::Other, text),
            NoticeWire::Full { kind, engine, text } => Notice { kind, engine, text },
        })
    }
}

/// The word that starts the `reason` of an interrupted run (`interrupted by
/// SIGINT`) and is the whole `error` of a trial the interrupt cut short.
pub const INTERRUPTED: &str = "interrupted";

impl RunInfo {
    /// The kind of workload the run sent (`workload.kind`, synthetic when absent).
    pub fn workload_kind(&self) -> crate::WorkloadKind {
        crate::WorkloadKind::of(&self.workload)
    }

    /// The run was interrupted (its `reason` says so).
    pub fn interrupted(&self) -> bool {
        self.reason
            .as_deref()
            .is_some_and(|r| r.starts_with(INTERRUPTED))
    }

    /// Adds `n` unless a notice of its kind about its engine is there already.
    pub fn notice_once(&mut self, n: Notice) {
        if !self
            .notices
            .iter()
            .any(|m| m.kind == n.kind && m.engine == n.engine)
        {
            self.notices.push(n);
        }
    }
}
