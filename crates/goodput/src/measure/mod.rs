//! **Measure**: every metric derived from the records in one place ([`metrics`]);
//! what is sampled beside each trial: GPU power and memory ([`telemetry`]), the
//! engine's own `/metrics` ([`server_metrics`]) and the samplers' loop
//! ([`sampling`]); what ran where ([`environment`]); and every measured request
//! exported as an OpenTelemetry span ([`otel`]).

pub mod environment;
pub mod metrics;
pub mod otel;
pub mod sampling;
pub mod server_metrics;
pub mod telemetry;
