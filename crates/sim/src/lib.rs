//! `goodput-sim`: a simulated OpenAI-compatible LLM serving engine.
pub mod config;
pub mod faults;
pub mod model;
pub use config::{preset, SimConfig, PRESETS};
