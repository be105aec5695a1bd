//! What the integration tests share, one module per concern (each test module takes
//! what it needs with `use crate::common;`):
//! - [`cli`]: running the goodput binary and asserting on its exit code and output
//!   (`assert_cmd`), in a scratch directory;
//! - [`server`]: starting a fake server on 127.0.0.1 port 0, stopped when dropped;
//! - [`script`]: the scripted SSE server built on it;
//! - [`fake_engine`]: a misbehaving engine for whole runs of the binary;
//! - [`procs`]: finding the processes a test started (the library's `/proc` scan);
//! - [`require`]: the external programs a test needs, and the variables that skip it;
//! - [`otlp`]: an OTLP/HTTP traces receiver, its spans decoded;
//! - [`records`]: figures recomputed from the raw records of a run;
//! - [`recording`]: a test server that records what it received;
//! - [`load_share`]: load shards against one simulator, and their merged point;
//! - [`profiles`]: the simulator profiles the sweep tests run;
//! - [`reports`]: the report files the render tests read, and the trials a
//!   stopped run completed;
//! - [`request`]: one streaming request through goodput's client;
//! - [`search`]: the search tests' simulator of 3 slots and their profile;
//! - [`stand_in`]: an OpenAI-compatible server not written for goodput (Python);
//! - [`trial`]: one trial of the load generator against a loopback server.

pub mod cli;
pub mod fake_engine;
pub mod load_share;
pub mod otlp;
pub mod procs;
pub mod profiles;
pub mod recording;
pub mod records;
pub mod reports;
pub mod request;
pub mod require;
pub mod script;
pub mod search;
pub mod server;
pub mod stand_in;
pub mod trial;
