//! The simulated engine under the benchmark: a fixed schedule with the timing probe,
//! run as a child `goodput sim` process (the default, as a real engine and the peer
//! tools' targets are separate processes) or on its own runtime in this process (for
//! tests).
//!
//! A child process keeps the two sides apart: `getrusage(RUSAGE_SELF)` and RSS of this
//! process are the client's alone, and each side can be pinned to its own core.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use tokio::io::{AsyncBufReadExt, BufReader};

/// How to run the simulator.
#[derive(Debug, Clone)]
pub enum SimKind {
    /// `BIN sim --config FILE --port 0`, optionally pinned to some CPUs.
    Child {
        /// The `goodput` binary.
        bin: PathBuf,
        /// CPUs to pin it to (none: not pinned).
        cpus: Vec<usize>,
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

/// A running simulator; stopped when dropped.
pub struct Sim {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    child: Option<tokio::process::Child>,
    config_file: Option<PathBuf>,
    in_process: Option<(
        tokio::sync::oneshot::Sender<()>,
        std::thread::JoinHandle<()>,
    )>,
}

fn config(schedule: Schedule) -> sim::SimConfig {
    sim::SimConfig {
        schedule: Some(sim::config::ScheduleConfig {
            ttft_ms: schedule.ttft_ms,
            itl_ms: schedule.itl_ms,
        }),
        probe: true,
        max_model_len: 65_536,
        ..sim::SimConfig::default()
    }
}

impl Sim {
    /// Starts a simulator serving `schedule` on a free loopback port.
    pub async fn start(kind: &SimKind, schedule: Schedule) -> anyhow::Result<Sim> {
        match kind {
            SimKind::Child { bin, cpus } => Sim::child(bin, cpus.clone(), schedule).await,
            SimKind::InProcess { threads } => Sim::in_process(*threads, schedule).await,
        }
    }

    async fn child(bin: &PathBuf, cpus: Vec<usize>, schedule: Schedule) -> anyhow::Result<Sim> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("goodput-bench-{}-{n}.toml", std::process::id()));
        let text = config(schedule)
            .to_toml_string()
            .context("cannot write the sim config")?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        let mut cmd = tokio::process::Command::new(bin);
        cmd.arg("sim")
            .arg("--config")
            .arg(&path)
            .args(["--host", "127.0.0.1", "--port", "0"]);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        if !cpus.is_empty() {
            // SAFETY: between fork and exec the closure makes one async-signal-safe
            // syscall (sched_setaffinity) and allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    super::os::pin(0, &cpus);
                    Ok(())
                });
            }
        }
        let mut sim = Sim {
            base_url: String::new(),
            child: None,
            config_file: Some(path),
            in_process: None,
        };
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {} sim", bin.display()))?;
        let stdout = child
            .stdout
            .take()
            .context("no stdout from the simulator")?;
        sim.child = Some(child);
        let mut lines = BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let addr = rest
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    return Ok::<_, std::io::Error>(Some(addr));
                }
            }
            Ok(None)
        })
        .await
        .context("the simulator did not start within 30 s")?
        .context("cannot read the simulator's output")?;
        let Some(addr) = addr else {
            bail!("the simulator exited before listening");
        };
        // Keep reading its stdout so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        sim.base_url = format!("http://{addr}");
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
                    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = addr_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = addr_tx.send(listener.local_addr());
                    let _ = sim::serve(listener, config(schedule), async {
                        let _ = stop_rx.await;
                    })
                    .await;
                });
            })?;
        let addr = addr_rx.await.context("the simulator thread failed")??;
        Ok(Sim {
            base_url: format!("http://{addr}"),
            child: None,
            config_file: None,
            in_process: Some((stop_tx, handle)),
        })
    }

    /// The child's process id (`None` in-process).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }

    /// Stops the simulator and waits (briefly) for it to exit.
    pub async fn stop(mut self) {
        if let Some(mut child) = self.child.take() {
            if let Some(pid) = child.id() {
                // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            }
            if tokio::time::timeout(Duration::from_secs(10), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
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
        // A child left here is killed by `kill_on_drop`.
    }
}
