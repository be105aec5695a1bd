//! The HTTP server: an axum app that speaks vLLM's OpenAI-compatible API and
//! drives the [`crate::model`] in real time.
//!
//! Layout:
//! - [`arrival`]: connections that stamp each request with its kernel receive
//!   time, so its clock starts when it arrived.
//! - `driver`: the task that owns the engine and runs steps on the wall clock.
//! - `generate`: `/v1/completions` and `/v1/chat/completions` handlers.
//! - `stream`: response bodies (SSE or JSON), timing probe, stream faults;
//!   `source`: where their tokens come from (the driver, a fixed schedule).
//! - `format`: vLLM's chunk and response shapes; `logprobs`: fake logprobs.
//! - [`openai`]: request types and error bodies.
//! - [`params`]: which fields are accepted, and vLLM's range checks.
//! - [`plan`]: a request becomes one job per choice (prompts times `n`).
//! - `routes`: health, models, tokenize, version, metrics, `/sim/gpu`, and
//!   the JSON 404/405 fallbacks.
//! - [`timer`]: a sub-millisecond timer for absolute deadlines.
//! - `probe_stats`: the probe's lateness, summed up for the log at shutdown.
//! - `adapters`: LoRA adapters: names a request may give, resident slots and
//!   loads, each adapter's slowdown (`[adapters]` in the configuration).

mod adapters;
pub mod arrival;
pub(crate) mod driver;
mod embeddings;
mod format;
mod generate;
pub mod images;
mod logprobs;
pub mod openai;
pub mod params;
pub mod plan;
mod probe_stats;
mod reasoning;
mod routes;
mod source;
mod stream;
pub mod timer;
mod tools;

use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::{get, post};
use axum::Router;
use goodput_stamped::MonoClock;
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

use crate::config::SimConfig;
use crate::model::{Counters, Engine};
use driver::{Command, Driver, Published, SimClock};
pub use generate::{FAULT_HEADER, PROBE_HEADER};

/// Counters of fixed-schedule mode (no model).
#[derive(Debug, Default)]
pub(crate) struct ScheduleStats {
    pub running: AtomicI64,
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    /// Embeddings requests answered (`vllm:request_success`).
    pub embedded: AtomicU64,
}

pub(crate) struct Inner {
    pub config: SimConfig,
    pub clock: SimClock,
    pub ready_at: Instant,
    pub mono: MonoClock,
    pub commands: Option<mpsc::UnboundedSender<Command>>,
    pub published: Arc<Mutex<Published>>,
    pub schedule_stats: Arc<ScheduleStats>,
    pub probe_stats: Arc<probe_stats::ProbeStats>,
    /// Request numbers (response ids, fault rules).
    pub next_id: AtomicU64,
    /// Sequence ids in the model (one per choice).
    pub next_seq: AtomicU64,
    pub shutdown_tx: watch::Sender<bool>,
    pub shutdown: watch::Receiver<bool>,
    /// The resident LoRA adapters (`[adapters]`).
    pub adapter_slots: adapters::Slots,
    /// The embedding engine, when the configuration is an embedding model.
    pub embeddings: Option<embeddings::Batcher>,
}

/// Shared state of one simulated engine: configuration, the driver task's
/// command channel, and what `/metrics` reads. Cheap to clone.
#[derive(Clone)]
pub struct SimState {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for SimState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimState")
            .field("model", &self.inner.config.model)
            .finish_non_exhaustive()
    }
}

impl SimState {
    /// Start an engine for `config`: its clock starts now (and `/health`
    /// answers 503 for `load_time_ms`). Outside fixed-schedule mode this
    /// spawns the driver task, so it must be called inside a tokio runtime; on a
    /// current-thread runtime it installs that thread's local timer
    /// ([`timer::install_local`]).
    pub fn new(config: SimConfig) -> SimState {
        // On one thread, that thread's own timer (a `timerfd` on its runtime).
        timer::install_local();
        let start = Instant::now();
        let clock = SimClock {
            start,
            time_scale: config.time_scale,
        };
        let load = Duration::try_from_secs_f64(config.load_time_ms / 1000.0 / config.time_scale)
            .unwrap_or(Duration::ZERO);
        let engine = Engine::new(&config);
        let published = Arc::new(Mutex::new(Published {
            running: 0,
            waiting: 0,
            kv_usage: 0.0,
            counters: Counters::default(),
            gpu: engine.gpu().clone(),
        }));
        let (shutdown_tx, shutdown) = watch::channel(false);
        let commands = if config.schedule.is_none() {
            let (tx, rx) = mpsc::unbounded_channel();
            let driver = Driver {
                engine,
                commands: rx,
                published: published.clone(),
                clock,
                shutdown: shutdown.clone(),
            };
            tokio::spawn(driver.run());
            Some(tx)
        } else {
            None
        };
        let embed = config
            .embeddings
            .clone()
            .map(|e| embeddings::Batcher::start(e, config.time_scale, shutdown.clone()));
        SimState {
            inner: Arc::new(Inner {
                config,
                clock,
                ready_at: start + load,
                mono: MonoClock::new(),
                commands,
                published,
                schedule_stats: Arc::new(ScheduleStats::default()),
                probe_stats: Arc::new(probe_stats::ProbeStats::new()),
                next_id: AtomicU64::new(1),
                next_seq: AtomicU64::new(1),
                shutdown_tx,
                shutdown,
                adapter_slots: adapters::Slots::new(),
                embeddings: embed,
            }),
        }
    }

    /// The configuration served.
    pub fn config(&self) -> &SimConfig {
        &self.inner.config
    }

    /// Stop the driver and end stalled or endless streams (idempotent).
    pub fn shutdown(&self) {
        let _ = self.inner.shutdown_tx.send(true);
    }

    /// The timing probe's lateness since the start, as one line; `None` when no
    /// chunk was probed.
    pub fn probe_summary(&self) -> Option<String> {
        self.inner.probe_stats.summary()
    }

    /// Whether the simulated model has finished loading.
    pub fn is_ready(&self) -> bool {
        Instant::now() >= self.inner.ready_at
    }
}

/// The axum router of the simulated engine.
pub fn app(state: SimState) -> Router {
    Router::new()
        .route("/v1/completions", post(generate::completions))
        .route("/v1/chat/completions", post(generate::chat_completions))
        .route("/v1/embeddings", post(embeddings::embeddings))
        .route("/v1/models", get(routes::models))
        .route("/health", get(routes::health))
        .route("/tokenize", post(routes::tokenize))
        .route("/detokenize", post(routes::detokenize))
        .route("/version", get(routes::version))
        .route("/metrics", get(routes::metrics))
        .route("/sim/gpu", get(routes::gpu))
        .fallback(routes::not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .with_state(state)
}

/// Connections the kernel queues for `accept` ([`listen`]'s backlog). The default
/// of `std`'s and tokio's `bind` (128) overflows when a benchmark opens more
/// connections at once than that: the rest wait for a SYN retransmit (1 s), which
/// every client counts as TTFT. The kernel caps it at `net.core.somaxconn` (4096 on
/// current Linux).
pub const LISTEN_BACKLOG: u32 = 65_535;

/// A listener on `addr` with a backlog of [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, so
/// a restarted simulator can take its port back at once). Inside a tokio runtime.
pub fn listen(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Serve `config` on `listener` until `shutdown` completes; then stalled and
/// endless streams are ended and open connections are let finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: SimConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let state = SimState::new(config);
    serve_state(listener, state, shutdown).await
}

/// [`serve`] with a state the caller built (to keep a handle on it).
pub async fn serve_state(
    listener: tokio::net::TcpListener,
    state: SimState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = app(state.clone()).into_make_service_with_connect_info::<arrival::Arrival>();
    // TCP_NODELAY, and each request stamped with its arrival time.
    let listener = arrival::StampedListener::new(listener);
    let signal = async move {
        shutdown.await;
        state.shutdown();
    };
    axum::serve(listener, router)
        .with_graceful_shutdown(signal)
        .await
}
