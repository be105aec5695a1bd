//! Engines launched, watched and stopped: the simulator, a fake vLLM, real llama.cpp
//! and vLLM's CPU build, their `/metrics`, telemetry sources, vLLM users' flags, and
//! reaching a server by URL (`url_readiness`), the simulator taking vLLM's engine
//! flags (`sim_flags`), vLLM serving embeddings (`vllm_embed`).

mod engine_cleanup;
mod engine_death;
mod engine_launch;
mod llama_cpp;
mod server_metrics;
mod sim_flags;
mod telemetry_sources;
mod url_readiness;
mod vllm_cpu;
mod vllm_embed;
mod vllm_lora;
mod vllm_recorded;
mod vllm_tools;
mod vllm_tune;
mod vllm_users;
