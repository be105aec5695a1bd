//! Driving load: the SSE client, workloads, reasoning streams, and hostile or broken
//! servers and input.

mod bad_files;
mod client_bounds;
mod client_connections;
mod client_sse;
mod client_stall;
mod conversation;
mod exit_status;
mod faults;
mod fd_limit;
mod fuzz_readers;
mod hardening;
mod hostile_run;
mod hostile_server;
mod images;
mod reasoning;
mod redaction;
mod secrets;
mod sharegpt;
mod stream_rules;
mod tls;
mod tool_calls;
mod workloads;
