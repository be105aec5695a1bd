//! The simulator's integration tests, one binary with a module per area (one link
//! instead of one per file): `cargo test -p goodput-sim --test it realtime`.
//!
//! - [`config`]: configuration files and their errors;
//! - [`server`]: the server end to end on loopback: timing, shapes, endpoints, errors;
//! - [`openai`]: the OpenAI API's request and response shapes;
//! - [`realtime`]: the real-time server against the model's virtual-time schedule;
//! - [`faults`]: the timing probe and fault injection;
//! - [`reasoning`]: thinking streams (`delta.reasoning`);
//! - [`adapters`]: LoRA adapters: names, 404, slots and load, slowdown;
//! - [`embeddings`]: `/v1/embeddings` of an embedding model;
//! - [`common`]: a server on 127.0.0.1 port 0 and an SSE reader.

mod adapters;
mod common;
mod config;
mod embeddings;
mod faults;
mod openai;
mod realtime;
mod reasoning;
mod server;
