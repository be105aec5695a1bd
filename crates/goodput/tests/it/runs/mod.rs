//! Whole runs of the binary: the sweep, resume after a kill, capacity search, fit and
//! what-if prediction, cost and energy, a cache-warm second run and the prompt salt,
//! OpenTelemetry export of every request, embeddings engines.

mod adapters;
mod cache_warm;
mod cost_energy;
mod embeddings;
mod fit_predict;
mod history;
mod images;
mod interleave;
mod otel;
mod resume;
mod run_sim;
mod search;
mod stand_in;
mod tool_calls;
mod tune;
