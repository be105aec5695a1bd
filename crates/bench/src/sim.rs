//! The simulated engine under the benchmark: a fixed schedule with the timing probe,
//! run as a child `goodput sim` process (the default, as a real engine and the peer
//! tools' targets are separate processes) or on its own runtime in this process (for
//! tests).
//!
//! The child is started, watched and stopped by goodput's own engine handling
//! ([`goodput::drive::engine::start`]: its own process group, readiness, SIGTERM then
//! SIGKILL, cleanup on every exit path), as `goodput run` starts a simulator; pinned
//! to CPUs through `taskset` (util-linux). A child process keeps the two sides apart:
//! `getrusage(RUSAGE_SELF)` and RSS of this process are the client's alone.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use goodput::define::profile::{EngineKind, EngineSpec};
use goodput::drive::engine::{EngineContext, EngineHandle};

/// How to run the simulator.
#[derive(Debug, Clone)]
pub enum SimKind {
    /// `BIN sim --config FILE --threads N`, optionally pinned to some CPUs.
    Child {
        /// The `goodput` binary.
        bin: PathBuf,
        /// CPUs to pin it to (none: not pinned).
        cpus: Vec<usize>,
        /// Runtime threads of the simulator.
        threads: usize,
    },
    /// A runtime of `threads` workers in this process.
    InProcess {
        /// Worker threads of the simulator's runtime.
        threads: usize,
    },
}

/// The schedule every request gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    /// Time to first token, ms.
    pub ttft_ms: f64,
    /// Time between tokens, ms.
    pub itl_ms: f64,
}

/// A running simulator; stopped by [`Sim::stop`] (or, as a last resort, when dropped).
pub struct Sim {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    engine: Option<EngineHandle>,
    config_file: Option<PathBuf>,
    in_process: Option<(
        tokio::sync::oneshot::Sender<()>,
        std::thread::JoinHandle<()>,
    )>,
}

fn config(schedule: Schedule) -> goodput_sim::SimConfig {
    goodput_sim::SimConfig {
        schedule: Some(goodput_sim::config::ScheduleConfig {
            ttft_ms: schedule.ttft_ms,
            itl_ms: schedule.itl_ms,
        }),
        probe: true,
        max_model_len: 65_536,
        ..goodput_sim::SimConfig::default()
    }
}

impl Sim {
    /// Starts a simulator serving `schedule` on a free loopback port.
    pub async fn start(kind: &SimKind, schedule: Schedule) -> anyhow::Result<Sim> {
        match kind {
            SimKind::Child { bin, cpus, threads } => {
                Sim::child(bin, cpus, *threads, schedule).await
            }
            SimKind::InProcess { threads } => Sim::in_process(*threads, schedule).await,
        }
    }

    async fn child(
        bin: &Path,
        cpus: &[usize],
        threads: usize,
        schedule: Schedule,
    ) -> anyhow::Result<Sim> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("goodput-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(format!("sim-{n}.toml"));
        let text = config(schedule)
            .to_toml_string()
            .context("cannot write the sim config")?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        let mut sim = Sim {
            base_url: String::new(),
            engine: None,
            config_file: Some(path.clone()),
            in_process: None,
        };
        let serve = [
            bin.display().to_string(),
            "sim".into(),
            "--config".into(),
            path.display().to_string(),
            "--threads".into(),
            threads.to_string(),
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            "{port}".into(),
        ];
        let command = if cpus.is_empty() {
            serve.to_vec()
        } else {
            let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
            ["taskset".into(), "-c".into(), list.join(",")]
                .into_iter()
                .chain(serve)
                .collect()
        };
        let spec = EngineSpec {
            kind: Some(EngineKind::Command),
            command: Some(command),
            ready_timeout_s: Some(30.0),
            ..EngineSpec::default()
        };
        let ctx = EngineContext {
            log_dir: dir,
            goodput_exe: bin.to_path_buf(),
            client: reqwest::Client::new(),
        };
        let engine = goodput::drive::engine::start(&format!("bench-sim-{n}"), &spec, &ctx)
            .await
            .map_err(|f| anyhow::anyhow!("the simulator did not start: {}", f.message))?;
        sim.base_url = engine.base_url.clone();
        sim.engine = Some(engine);
        Ok(sim)
    }

    async fn in_process(threads: usize, schedule: Schedule) -> anyhow::Result<Sim> {
        let (addr_tx, addr_rx) = tokio::sync::oneshot::channel::<std::io::Result<SocketAddr>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("bench-sim".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads.max(1))
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = addr_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    let listener = match goodput_sim::listen(SocketAddr::from(([127, 0, 0, 1], 0)))
                    {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = addr_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = addr_tx.send(listener.local_addr());
                    let _ = goodput_sim::serve(listener, config(schedule), async {
                        let _ = stop_rx.await;
                    })
                    .await;
                });
            })?;
        let addr = addr_rx.await.context("the simulator thread failed")??;
        Ok(Sim {
            base_url: format!("http://{addr}"),
            engine: None,
            config_file: None,
            in_process: Some((stop_tx, handle)),
        })
    }

    /// The child's process id (`None` in-process).
    pub fn pid(&self) -> Option<u32> {
        self.engine.as_ref().and_then(EngineHandle::pid)
    }

    /// Stops the simulator and waits for it to exit.
    pub async fn stop(mut self) {
        if let Some(engine) = self.engine.take() {
            if let Err(f) = engine.stop().await {
                eprintln!("goodput-bench: {}", f.message);
            }
        }
        if let Some((stop, handle)) = self.in_process.take() {
            let _ = stop.send(());
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Some(path) = self.config_file.take() {
            let _ = std::fs::remove_file(path);
        }
        if let Some((stop, _)) = self.in_process.take() {
            let _ = stop.send(());
        }
        // An engine left here is killed by its handle's drop.
    }
}
