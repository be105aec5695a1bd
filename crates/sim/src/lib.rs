//! `goodput-sim`: a simulated OpenAI-compatible LLM serving engine.
//!
//! It serves vLLM's API (streaming completions and chat, `/metrics`,
//! `/tokenize`, `/health`, ...) from a model of a continuous-batching engine:
//! a KV pool in blocks, FCFS admission, chunked prefill, preemption, async
//! scheduling, n-gram speculative decoding and a thermally throttling GPU.
//! Presets mimic the engines of the reference report, so `goodput` can be
//! developed and tested without a GPU. It can also run a fixed schedule
//! (exact TTFT and ITL) with a timing probe, to measure a client's fidelity,
//! and inject faults.
//!
//! # Layout
//! - [`config`]: [`SimConfig`] (TOML), validation, presets, vLLM's engine flags
//!   ([`VllmFlags`]).
//! - [`model`]: the engine as a pure state machine in explicit simulated time,
//!   and a virtual-time closed-loop driver used to calibrate the presets.
//! - [`server`]: the axum app; a driver task runs the model on the wall clock.
//! - [`faults`]: fault-injection specs (`x-goodput-fault` header, `faults` config).
//! - [`text`]: the deterministic tokenizer and generated words.
//!
//! Its clock (`CLOCK_MONOTONIC` ns, the timing probe's) and its stamped reads (a
//! request's clock started at the kernel's receive time) are `goodput-stamped`'s,
//! shared with goodput's client.

#![warn(missing_docs)]

pub mod config;
pub mod faults;
pub mod model;
pub mod server;
pub mod text;

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};

use anyhow::Context as _;

pub use config::{
    preset, ConfigError, EmbeddingsConfig, ReasoningConfig, SimConfig, VllmFlags, PRESETS,
};
pub use faults::FaultSpec;
pub use server::{app, listen, serve, SimState};

/// Options of the `goodput sim` subcommand.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// The engine to simulate.
    pub config: SimConfig,
    /// Address to bind (loopback unless you mean to expose it).
    pub host: IpAddr,
    /// Port to bind (0 picks a free one).
    pub port: u16,
    /// Runtime worker threads (`None`: one per CPU); see [`run_standalone`].
    pub threads: Option<usize>,
}

/// `MM-DD HH:MM:SS` in UTC, as vLLM's log prefix.
fn log_time() -> String {
    let fmt = time::macros::format_description!("[month]-[day] [hour]:[minute]:[second]");
    time::OffsetDateTime::now_utc()
        .format(&fmt)
        .unwrap_or_default()
}

/// `2928` -> `2,928`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The startup lines, in vLLM's log format.
pub fn banner(config: &SimConfig, addr: SocketAddr) -> Vec<String> {
    let t = log_time();
    let kv = config.kv_capacity_tokens();
    let mut lines = vec![
        format!(
            "INFO {t} [goodput-sim] goodput-sim {} serving model {:?} (simulated engine)",
            env!("CARGO_PKG_VERSION"),
            config.model
        ),
        format!(
            "INFO {t} [kv_cache_utils.py] GPU KV cache size: {} tokens",
            thousands(kv)
        ),
        format!(
            "INFO {t} [kv_cache_utils.py] Maximum concurrency for {} tokens per request: {:.2}x",
            thousands(u64::from(config.max_model_len)),
            kv as f64 / f64::from(config.max_model_len)
        ),
    ];
    if let Some(th) = &config.thermal {
        // A user who sees TPOT rise and a "thermally throttled" warning must know
        // the heat is the model's, and how to turn it off.
        lines.push(format!(
            "INFO {t} [goodput-sim] the simulated GPU models thermal throttling: after {} s \
             of load its clock drops from {} to {} MHz, and steps slow with it; \
             `goodput sim --no-thermal` keeps the boost clock",
            th.heat_after_s, th.boost_mhz, th.throttled_mhz
        ));
    }
    if !addr.ip().is_loopback() {
        lines.push(format!(
            "WARNING {t} [goodput-sim] listening on {addr}, which is not a loopback address: \
             the simulator is exposed to the network"
        ));
    }
    lines.push(format!(
        "INFO {t} [goodput-sim] listening on http://{addr} (Press CTRL+C to quit)"
    ));
    lines
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {},
                _ = term.recv() => {},
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Bytes of heap [`warm_allocator`] makes ready: what the first wave of about
/// a thousand requests and their connections takes.
const WARM_HEAP: usize = 16 << 20;

/// Makes the calling thread's allocator ready for a first wave of requests,
/// before serving. glibc grows a thread's arena (not the main thread's) one
/// `mprotect` at a time, a page or so each, and hands freed memory back above a
/// small threshold: measured at 500 streams, the first wave of requests paid
/// ~1,570 `mprotect` calls (6 MB) and their page faults, on the thread that also
/// writes every stream's chunks. Here the arena grows once by 16 MiB, its
/// pages are touched, and freed memory is kept (trim threshold 64 MiB). Nothing
/// outside glibc on Linux.
pub fn warm_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only sets one of glibc's malloc parameters.
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
        }
        // Blocks under the mmap threshold (128 KiB), so they come from the arena.
        let block = 64 << 10;
        let blocks: Vec<Vec<u8>> = (0..WARM_HEAP / block).map(|_| vec![1u8; block]).collect();
        drop(std::hint::black_box(blocks));
    }
}

/// Bind `host:port`, print the startup banner, serve until Ctrl-C or SIGTERM, on a
/// runtime of its own: one thread (tokio's current-thread runtime, so "one core"
/// means one thread) when `threads` is 1, else that many workers (one per CPU
/// when `None`). Blocks the calling thread; call it outside a runtime's workers.
pub fn run_standalone(opts: SimOptions) -> anyhow::Result<()> {
    opts.config.validate()?;
    // On one thread, the runtime runs on this one.
    warm_allocator();
    let runtime = match opts.threads {
        Some(0) => anyhow::bail!("--threads: 0 threads"),
        // Its timer armed only before it parks (see `server::timer`).
        Some(1) => tokio::runtime::Builder::new_current_thread()
            .on_thread_park(server::timer::before_park)
            .enable_all()
            .build(),
        Some(n) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build(),
        None => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
    }
    .context("cannot start the simulator's runtime")?;
    runtime.block_on(serve_standalone(opts))
}

async fn serve_standalone(opts: SimOptions) -> anyhow::Result<()> {
    let addr = SocketAddr::new(opts.host, opts.port);
    let listener = listen(addr).with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("no local address")?;
    {
        let mut out = std::io::stdout().lock();
        for line in banner(&opts.config, local) {
            writeln!(out, "{line}").context("cannot write the banner")?;
        }
        out.flush().context("cannot write the banner")?;
    }
    let state = SimState::new(opts.config);
    server::serve_state(listener, state.clone(), shutdown_signal())
        .await
        .context("server failed")?;
    if let Some(line) = state.probe_summary() {
        let t = log_time();
        println!("INFO {t} [goodput-sim] {line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separator() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(2928), "2,928");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn banner_has_vllm_kv_line_and_exposure_warning() {
        let c = preset("vllm-fast-b").unwrap();
        let lines = banner(&c, "127.0.0.1:8000".parse().unwrap());
        assert!(lines
            .iter()
            .any(|l| l.starts_with("INFO ") && l.ends_with("GPU KV cache size: 2,928 tokens")));
        assert!(!lines.iter().any(|l| l.contains("exposed")));
        let lines = banner(&c, "0.0.0.0:8000".parse().unwrap());
        assert!(lines
            .iter()
            .any(|l| l.starts_with("WARNING") && l.contains("exposed")));
        assert_eq!(log_time().len(), "11-30 11:45:02".len());
    }

    #[test]
    fn banner_says_the_gpu_throttles_and_how_to_turn_it_off() {
        let c = preset("vllm-fast-b").unwrap();
        assert!(c.thermal.is_some(), "the preset models heat");
        let addr = "127.0.0.1:8000".parse().unwrap();
        let said = |c: &SimConfig| {
            banner(c, addr)
                .iter()
                .any(|l| l.contains("thermal throttling") && l.contains("--no-thermal"))
        };
        assert!(said(&c));
        assert!(!said(&c.with_overrides(None, true)));
    }
}
