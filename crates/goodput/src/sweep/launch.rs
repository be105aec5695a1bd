//! The sweep's engines on a GPU. [`engine`](crate::drive::engine) starts and stops
//! processes and knows nothing of GPUs; the sweep adds one thing a GPU run needs:
//! after a launched engine stops, it waits (up to 60 s) until the GPU memory the
//! engine held is released, so the next engine starts on a free GPU and a leak is
//! reported (`stop`) instead of skewing the next engine's results.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use report::{EngineFailure, FailureKind};
use tokio::time::Instant;

use crate::define::profile::{EngineKind, EngineSpec};
use crate::drive::engine::{self, EngineContext, EngineHandle};
use crate::stop::Stop;

/// After stopping, the longest wait for the GPU memory the engine held to be freed.
const GPU_RELEASE_WAIT: Duration = Duration::from_secs(60);
/// GPU memory above the pre-launch level still counted as released, MiB.
const GPU_RELEASE_SLACK_MIB: f64 = 512.0;
/// Between two looks at the GPU memory.
const GPU_RELEASE_POLL: Duration = Duration::from_millis(500);

/// A started engine and the GPU memory in use, per GPU, before it was launched
/// (`None`: not launched by goodput, the simulator, or no GPU visible).
/// Dereferences to its [`EngineHandle`].
pub(crate) struct SweepEngine {
    handle: EngineHandle,
    baseline: Option<Vec<f64>>,
}

impl Deref for SweepEngine {
    type Target = EngineHandle;
    fn deref(&self) -> &EngineHandle {
        &self.handle
    }
}

impl DerefMut for SweepEngine {
    fn deref_mut(&mut self) -> &mut EngineHandle {
        &mut self.handle
    }
}

/// [`engine::start_until`], with the GPU memory in use before the launch noted.
/// An engine that failed after its process started (it exited, was not ready or
/// refused us) is waited for like a stopped one, unless the run was interrupted.
pub(crate) async fn start(
    name: &str,
    spec: &EngineSpec,
    engine_ctx: &EngineContext,
    stop: &Stop,
) -> Result<SweepEngine, EngineFailure> {
    let baseline = match spec.effective_kind() {
        EngineKind::Url | EngineKind::Sim => None,
        _ => gpu_memory_now().await,
    };
    match engine::start_until(name, spec, engine_ctx, stop).await {
        Ok(handle) => Ok(SweepEngine { handle, baseline }),
        Err(mut f) => {
            if let (Some(b), false) = (
                baseline,
                matches!(f.kind, FailureKind::Launch | FailureKind::Interrupted),
            ) {
                if let Err(m) = wait_release(name, b).await {
                    f.message = format!("{}; {m}", f.message);
                }
            }
            Err(f)
        }
    }
}

impl SweepEngine {
    /// [`EngineHandle::stop`], then, when a GPU is visible, a wait (up to 60 s)
    /// until the GPU memory the engine held is released. Errs (kind `stop`) when
    /// processes survived or the memory is still held.
    pub(crate) async fn stop(self) -> Result<(), EngineFailure> {
        let name = self.handle.name.clone();
        self.handle.stop().await?;
        match self.baseline {
            Some(b) => wait_release(&name, b)
                .await
                .map_err(|message| EngineFailure {
                    kind: FailureKind::Stop,
                    message,
                    ..Default::default()
                }),
            None => Ok(()),
        }
    }
}

async fn gpu_memory_now() -> Option<Vec<f64>> {
    tokio::task::spawn_blocking(crate::measure::telemetry::gpu_memory_used_mib)
        .await
        .ok()
        .flatten()
}

/// Waits until every GPU's memory use is back near `baseline` (within 512 MiB).
async fn wait_release(name: &str, baseline: Vec<f64>) -> Result<(), String> {
    let start = Instant::now();
    loop {
        let Some(now) = gpu_memory_now().await else {
            return Ok(()); // the GPU is no longer visible: nothing to wait for
        };
        let held: f64 = now
            .iter()
            .zip(&baseline)
            .map(|(n, b)| (n - b - GPU_RELEASE_SLACK_MIB).max(0.0))
            .sum();
        if held <= 0.0 {
            return Ok(());
        }
        if start.elapsed() >= GPU_RELEASE_WAIT {
            return Err(format!(
                "engine {name}: {held:.0} MiB of GPU memory still held 60 s after it stopped"
            ));
        }
        tokio::time::sleep(GPU_RELEASE_POLL).await;
    }
}
