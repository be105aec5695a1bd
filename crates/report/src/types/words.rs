//! goodput addition: the report's words (failure kinds, what limits a capacity, load
//! modes, SLO forms, notice kinds) as types. Each is written as the snake_case word
//! it has always been, and reads any word: one this version does not know (a newer
//! report) is kept as written in `Unknown` and written back unchanged, so renderers
//! match the known ones exhaustively and show the rest as they are.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::metric::SloMetric;

/// A report word type: its variants and their words, plus `Unknown(String)`; the
/// first variant is the default.
macro_rules! words {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident => $word:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $var,)+
            /// A word this version does not know (a newer report), kept as written.
            Unknown(String),
        }

        impl $name {
            /// Every known word, in order.
            pub const KNOWN: &'static [&'static str] = &[$($word),+];

            /// The word as written in reports.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$var => $word,)+
                    $name::Unknown(w) => w,
                }
            }

            /// The value of a word as written (any word reads).
            pub fn from_word(word: &str) -> Self {
                match word {
                    $($word => $name::$var,)+
                    other => $name::Unknown(other.to_string()),
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::from_word(Self::KNOWN[0])
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = std::borrow::Cow::<'de, str>::deserialize(d)?;
                Ok(Self::from_word(&word))
            }
        }
    };
}

words! {
    /// Why an engine produced no (or fewer) results ([`crate::EngineFailure::kind`]).
    FailureKind {
        /// Its command could not be started (program, port, arguments).
        Launch => "launch",
        /// A server goodput did not launch (`url`) refused or never answered.
        Unreachable => "unreachable",
        /// It did not become ready within `ready_timeout_s`.
        ReadyTimeout => "ready_timeout",
        /// Its process exited before it was ready.
        Exited => "exited",
        /// The run was interrupted while it was starting.
        Interrupted => "interrupted",
        /// It died during a trial (its process exited or stopped answering).
        DiedDuringTrial => "died_during_trial",
        /// It could not be stopped, or its GPU memory was not released.
        Stop => "stop",
        /// Its workload could not be built (a file, a tokenizer).
        Workload => "workload",
        /// The run ended before it started.
        NotRun => "not_run",
    }
}

words! {
    /// What bounds a capacity other than a metric's bound ([`Limit::Other`]).
    LimitWord {
        /// Requests at the failing load reasoned and gave no answer most.
        NoAnswer => "no_answer",
        /// ... failed.
        Errors => "errors",
        /// The failing load missed the SLO with no bound counted (no requests).
        Slo => "slo",
        /// The failing load's requests met the attainment, but too few of its tool
        /// calls were valid (`slo.min_valid_tool_calls`, ...: `slo_check.tool_calls`).
        ToolCalls => "tool_calls",
        /// The search's upper bound met the SLO: the capacity may be higher.
        Max => "max",
        /// The probe budget ran out before the bracket closed.
        MaxProbes => "max_probes",
        /// The engine failed before the search finished.
        Engine => "engine",
    }
}

/// What bounds a capacity ([`crate::Capacity::limited_by`]): written as the
/// metric's key (`ttft`) or the other limit's word; any word reads, an unknown
/// one kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Requests at the failing load missed this metric's bound most.
    Metric(SloMetric),
    /// Anything else ([`LimitWord`], unknown words included).
    Other(LimitWord),
}

impl Limit {
    /// The word as written in reports.
    pub fn as_str(&self) -> &str {
        match self {
            Limit::Metric(m) => m.key(),
            Limit::Other(w) => w.as_str(),
        }
    }

    /// The value of a word as written (any word reads).
    pub fn from_word(word: &str) -> Limit {
        SloMetric::from_key(word)
            .map_or_else(|| Limit::Other(LimitWord::from_word(word)), Limit::Metric)
    }
}

impl Default for Limit {
    fn default() -> Self {
        Limit::Metric(SloMetric::ALL[0])
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Limit::from_word(&word))
    }
}

words! {
    /// What the load levels `x` count ([`crate::RunInfo::load_mode`],
    /// [`crate::Capacity::mode`]).
    LoadMode {
        /// Requests in flight.
        Concurrency => "concurrency",
        /// Requests per second.
        Rate => "rate",
        /// A trace's own arrival times, `x` the speed-up.
        Trace => "trace",
    }
}

words! {
    /// How a point's SLO is judged ([`crate::SloCheck::form`]).
    SloForm {
        /// The share of good requests against the attainment target.
        Attainment => "attainment",
        /// Each bounded metric's p-th percentile against its bound.
        Percentile => "percentile",
    }
}

words! {
    /// The metric a request is an outlier in ([`crate::Outlier::metric`]).
    OutlierMetric {
        /// Time to first token.
        Ttft => "ttft",
        /// End-to-end latency.
        E2el => "e2el",
    }
}

words! {
    /// What a notice is about ([`crate::Notice::kind`]).
    NoticeKind {
        /// Anything else, and every notice of a report written before notices
        /// had kinds.
        Other => "other",
        /// Which tool wrote a converted peer's result file (the first notice).
        Converted => "converted",
        /// What a converted peer's result file lacks or measures differently.
        Peer => "peer",
        /// The simulator ran at a `--time-scale` other than 1.
        TimeScale => "time_scale",
        /// What the engine's launch found (the KV pool, served models).
        Engine => "engine",
        /// An engine could not be stopped cleanly, or its GPU memory was not released.
        EngineStop => "engine_stop",
        /// Where GPU telemetry came from, or why there is none (once per run).
        Telemetry => "telemetry",
        /// The engine's `/metrics` could not be read (once per engine).
        ServerMetrics => "server_metrics",
        /// The speculative-decoding counters could not be read.
        SpecDecode => "spec_decode",
        /// The workload file was cut short (once per run).
        Workload => "workload",
        /// Prompt lengths could not be calibrated against the engine's tokenizer.
        PromptLengths => "prompt_lengths",
        /// How conversation histories are cut to the context.
        Context => "context",
        /// TTFT counts connection set-up (`--ttft-includes-connect`; once per run).
        TtftConnect => "ttft_connect",
        /// Connections could not be opened before a trial.
        Connections => "connections",
        /// A load shard's trial started without waiting for the others.
        LoadShard => "load_shard",
        /// A trial was abandoned after requests in a row got no answer.
        Abandoned => "abandoned",
        /// The client was paused or starved during a trial (its timer woke late).
        ClientStall => "client_stall",
        /// A trial's streams broke a rule the client handles, counted: data after
        /// `[DONE]` (ignored), choices other than index 0 (not counted).
        Stream => "stream",
        /// A trial did not complete and was not retried.
        NotRetried => "not_retried",
        /// The report was merged from shards or load shards.
        Merged => "merged",
        /// A prediction's knee and verdict (`search --predict`).
        Predicted => "predicted",
        /// The engines ran one after the other, not interleaved: drift over the
        /// run is confounded with the engine (docs/statistics.md, "Design against
        /// drift").
        Sequential => "sequential",
        /// Requests exported as OpenTelemetry spans: a setting refused, spans
        /// dropped or not exported.
        Otel => "otel",
    }
}

words! {
    /// How spans travel to an OTLP endpoint ([`crate::OtelExport::protocol`],
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`).
    OtlpProtocol {
        /// Protocol buffers over HTTP, the default.
        HttpProtobuf => "http/protobuf",
        /// JSON over HTTP.
        HttpJson => "http/json",
    }
}

words! {
    /// Why a point with `trials = "auto"` got no more trials; the rule is in
    /// docs/statistics.md ("Adaptive trials").
    TrialsStopped {
        /// The point's SLO judgement is `meets` or `fails`: more trials would not
        /// change the answer.
        Decisive => "decisive",
        /// The interval of the point's key metrics (median TTFT and TPOT over trials)
        /// is narrower than the target width.
        Narrow => "narrow",
        /// The most trials allowed ran, and neither of the above holds.
        Budget => "budget",
    }
}

words! {
    /// The kind of workload a run sent (`run.workload.kind`; a workload without
    /// one is synthetic).
    WorkloadKind {
        /// Generated prompts of set lengths.
        Synthetic => "synthetic",
        /// Prompts from a JSONL file.
        Jsonl => "jsonl",
        /// Groups of requests sharing a prompt prefix.
        Prefix => "prefix",
        /// A trace's requests at its own arrival times (Mooncake, Azure).
        Trace => "trace",
        /// Multi-turn sessions, each turn carrying the history.
        Conversation => "conversation",
        /// Prompts sampled from the ShareGPT file.
        Sharegpt => "sharegpt",
    }
}

impl WorkloadKind {
    /// The kind a report's `workload` object names (synthetic when it names none).
    pub fn of(workload: &serde_json::Value) -> WorkloadKind {
        workload
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .map_or_else(WorkloadKind::default, WorkloadKind::from_word)
    }
}

words! {
    /// What an adapter's latency is against the other adapters'
    /// ([`crate::AdapterJudgement::outcome`]).
    AdapterOutcome {
        /// The interval cannot tell (it spans zero and more than the least effect).
        Undecided => "undecided",
        /// Higher than the others' by at least the least effect, beyond noise.
        Higher => "higher",
        /// Lower than the others' by at least the least effect, beyond noise.
        Lower => "lower",
        /// Within the least effect of the others', the whole interval.
        Same => "same",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_words_round_trip_and_unknown_ones_are_kept() {
        for w in FailureKind::KNOWN {
            let k: FailureKind = serde_json::from_str(&format!("\"{w}\"")).unwrap();
            assert!(!matches!(k, FailureKind::Unknown(_)), "{w}");
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{w}\""));
        }
        assert_eq!(
            serde_json::from_str::<Limit>("\"max_probes\"").unwrap(),
            Limit::Other(LimitWord::MaxProbes)
        );
        assert_eq!(LoadMode::from_word("rate"), LoadMode::Rate);
        let newer: FailureKind = serde_json::from_str("\"oom_killed\"").unwrap();
        assert_eq!(newer, FailureKind::Unknown("oom_killed".into()));
        assert_eq!(serde_json::to_string(&newer).unwrap(), "\"oom_killed\"");
        assert_eq!(LoadMode::default(), LoadMode::Concurrency);
        assert_eq!(SloForm::from_word("quantile").to_string(), "quantile");
        for w in TrialsStopped::KNOWN {
            assert_eq!(TrialsStopped::from_word(w).as_str(), *w);
        }
        assert_eq!(
            serde_json::to_string(&TrialsStopped::from_word("patience")).unwrap(),
            "\"patience\""
        );
    }

    #[test]
    fn a_workload_kind_is_read_from_the_workload_and_synthetic_without_one() {
        use serde_json::json;
        assert_eq!(WorkloadKind::of(&json!({})), WorkloadKind::Synthetic);
        assert_eq!(
            WorkloadKind::of(&serde_json::Value::Null),
            WorkloadKind::Synthetic
        );
        assert_eq!(
            WorkloadKind::of(&json!({"kind": "conversation"})),
            WorkloadKind::Conversation
        );
        assert_eq!(
            WorkloadKind::of(&json!({"kind": "replay"})),
            WorkloadKind::Unknown("replay".into())
        );
    }

    #[test]
    fn notices_read_as_objects_or_as_older_strings_and_keep_newer_kinds() {
        let v = serde_json::json!([
            "GPU telemetry from NVML",
            {"kind": "abandoned", "engine": "a", "text": "a: x=1 trial 1: abandoned"},
            {"kind": "newer_kind", "text": "t"}
        ]);
        let n: Vec<crate::Notice> = serde_json::from_value(v).unwrap();
        assert_eq!(
            n[0],
            crate::Notice::new(NoticeKind::Other, "GPU telemetry from NVML")
        );
        assert_eq!(
            n[1],
            crate::Notice::engine(NoticeKind::Abandoned, "a", "a: x=1 trial 1: abandoned")
        );
        assert_eq!(n[2].kind, NoticeKind::Unknown("newer_kind".into()));
        let back = serde_json::to_value(&n).unwrap();
        assert_eq!(
            back[0],
            serde_json::json!({"kind": "other", "text": "GPU telemetry from NVML"})
        );
        assert_eq!(
            back[2],
            serde_json::json!({"kind": "newer_kind", "text": "t"})
        );
        let mut run = crate::RunInfo::default();
        run.notice_once(crate::Notice::engine(
            NoticeKind::ServerMetrics,
            "a",
            "a: server metrics: 1",
        ));
        run.notice_once(crate::Notice::engine(
            NoticeKind::ServerMetrics,
            "a",
            "a: server metrics: 2",
        ));
        run.notice_once(crate::Notice::engine(
            NoticeKind::ServerMetrics,
            "b",
            "b: server metrics: 1",
        ));
        assert_eq!(run.notices.len(), 2);
    }
}
