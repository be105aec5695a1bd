//! Engines launched, watched and stopped: the simulator, a fake vLLM, real llama.cpp
//! and vLLM's CPU build, their `/metrics`, telemetry sources, vLLM users' flags, and
//! the simulator taking vLLM's engine flags.

mod engine_cleanup;
mod engine_death;
mod engine_launch;
mod llama_cpp;
mod server_metrics;
mod sim_flags;
mod telemetry_sources;
mod vllm_cpu;
mod vllm_recorded;
mod vllm_users;
