//! GPU telemetry: samples of clocks, temperature and power beside each trial.
//!
//! # Layout
//! - [`GpuSource`]: the trait at this external edge, with one implementation per
//!   source: [`nvml`] (libnvidia-ml, loaded at run time), [`smi`] (a long-running
//!   `nvidia-smi -lms N`), [`simgpu`] (the simulator's `GET /sim/gpu`), [`dcgm`]
//!   (a dcgm-exporter's `/metrics`, `telemetry.url`); tests use fakes.
//! - [`Telemetry`]: the opened source; [`Telemetry::start_trial`] samples every
//!   `interval_ms` in the background until [`TrialSampler::finish`];
//!   [`Telemetry::cooldown`] waits (bounded) for the GPU to cool before a trial.
//! - [`summary`]: samples to the report's `gpu` summary and sample list.
//! - [`energy`]: the readings of a trial to its GPU energy (counter or integral).
//!
//! No GPU, no driver or no library is never a failure: [`open`] then returns a
//! telemetry that samples nothing, and one notice saying why.
//!
//! One sample type flows from the sampler to the report: [`GpuSample`] (the
//! report's). With several GPUs, one sample describes the GPUs doing work (memory
//! in use or utilisation above zero; all of them when none is): the slowest SM
//! clock, the hottest temperature, summed power and memory, and whether any is
//! throttled ([`from_readings`]).

pub mod dcgm;
pub mod energy;
pub mod nvml;
pub mod simgpu;
pub mod smi;
pub mod summary;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use report::{GpuInfo, GpuSample, TrialEnergy};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::define::profile::{CooldownSpec, TelemetrySpec};
use crate::measure::sampling::{sample_until_stopped, Ticks};

pub use summary::summarize;

/// Consecutive failed reads after which a trial's sampler stops (keeping what it has).
const MAX_CONSECUTIVE_FAILURES: u32 = 10;
/// How often [`Telemetry::cooldown`] looks at the GPU.
const COOLDOWN_POLL: Duration = Duration::from_secs(1);

/// Why a source could not be opened or read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TelemetryError {
    /// The source is not available on this machine (no driver, no tool, no endpoint).
    #[error("{0}")]
    Unavailable(String),
    /// A read failed.
    #[error("GPU read failed: {0}")]
    Read(String),
}

/// One GPU at one moment, as a source reports it. `None` where the source does not
/// know (`[N/A]`, `[Not Supported]`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuReading {
    /// Index as the driver numbers it.
    pub index: u32,
    /// Product name.
    pub name: Option<String>,
    /// SM clock, MHz.
    pub sm_mhz: Option<f64>,
    /// Memory clock, MHz.
    pub mem_mhz: Option<f64>,
    /// Maximum SM clock, MHz.
    pub max_sm_mhz: Option<f64>,
    /// Temperature, Celsius.
    pub temp_c: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// Power limit, W.
    pub power_limit_w: Option<f64>,
    /// Memory in use, MiB.
    pub mem_used_mib: Option<f64>,
    /// Memory installed, MiB.
    pub mem_total_mib: Option<f64>,
    /// Utilisation, percent.
    pub util_pct: Option<f64>,
    /// A hardware or software thermal slowdown is active.
    pub thermal: bool,
    /// The GPU's total-energy counter (since the driver loaded), J; `None` where the
    /// source has none (see [`energy`]).
    pub energy_j: Option<f64>,
}

/// A source of GPU readings: the external edge of this module.
pub trait GpuSource: Send + Sync + 'static {
    /// `nvml`, `nvidia-smi`, `dcgm` or `sim` (as written in the report's `gpu.source`).
    fn name(&self) -> &'static str;
    /// The GPUs, as known when the source was opened.
    fn gpus(&self) -> Vec<GpuInfo>;
    /// One reading per GPU, now.
    fn read(&self) -> BoxFuture<'_, Result<Vec<GpuReading>, TelemetryError>>;
}

/// Combines one reading per GPU into a sample at `t_s`, over the GPUs doing work
/// (see the module doc); `None` without readings.
pub fn from_readings(t_s: f64, readings: &[GpuReading]) -> Option<GpuSample> {
    let busy: Vec<&GpuReading> = readings.iter().filter(|r| is_busy(r)).collect();
    let chosen: Vec<&GpuReading> = if busy.is_empty() {
        readings.iter().collect()
    } else {
        busy
    };
    if chosen.is_empty() {
        return None;
    }
    let utils: Vec<f64> = chosen.iter().filter_map(|r| r.util_pct).collect();
    Some(GpuSample {
        t_s,
        sm_mhz: fold(&chosen, |r| r.sm_mhz, f64::min),
        mem_mhz: fold(&chosen, |r| r.mem_mhz, f64::min),
        max_sm_mhz: fold(&chosen, |r| r.max_sm_mhz, f64::min),
        temp_c: fold(&chosen, |r| r.temp_c, f64::max),
        power_w: fold(&chosen, |r| r.power_w, |a, b| a + b),
        power_limit_w: fold(&chosen, |r| r.power_limit_w, |a, b| a + b),
        mem_used_mib: fold(&chosen, |r| r.mem_used_mib, |a, b| a + b),
        util_pct: (!utils.is_empty()).then(|| utils.iter().sum::<f64>() / utils.len() as f64),
        thermal: chosen.iter().any(|r| r.thermal),
    })
}

/// Folds one field over the readings that have it.
fn fold(
    readings: &[&GpuReading],
    field: impl Fn(&GpuReading) -> Option<f64>,
    op: fn(f64, f64) -> f64,
) -> Option<f64> {
    readings.iter().filter_map(|r| field(r)).reduce(op)
}

/// Doing work: utilisation above zero, or holding memory.
pub(crate) fn is_busy(r: &GpuReading) -> bool {
    r.util_pct.is_some_and(|u| u > 0.0) || is_holding_memory(r)
}

/// More than 10 % of the GPU's memory in use (an engine holds its weights and KV
/// cache there for its whole life).
fn is_holding_memory(r: &GpuReading) -> bool {
    match (r.mem_used_mib, r.mem_total_mib) {
        (Some(used), Some(total)) if total > 0.0 => used > 0.1 * total,
        _ => false,
    }
}

/// Opens the telemetry source `spec.source` names (`auto`: NVML, then nvidia-smi,
/// then the engine's `/sim/gpu`, then none; `dcgm`: the exporter at `spec.url`, never
/// tried by `auto`). Never fails: without a source it
/// returns a telemetry that samples nothing and a notice saying why.
pub async fn open(
    spec: &TelemetrySpec,
    engine_base_url: &str,
    client: &reqwest::Client,
) -> (Telemetry, Option<String>) {
    let interval_ms = spec.interval_ms.max(1);
    let mut why: Vec<String> = Vec::new();
    let want = spec.source.trim().to_ascii_lowercase();
    let order: &[&str] = match want.as_str() {
        "auto" => &["nvml", "nvidia-smi", "sim"],
        "none" => &[],
        "nvml" => &["nvml"],
        "nvidia-smi" => &["nvidia-smi"],
        "sim" => &["sim"],
        "dcgm" => &["dcgm"],
        other => {
            let notice = format!(
                "no GPU telemetry: unknown telemetry source `{other}` (use auto, nvml, nvidia-smi, sim, dcgm or none)"
            );
            return (Telemetry::none(), Some(notice));
        }
    };
    if order.is_empty() {
        return (Telemetry::none(), None);
    }
    for name in order {
        let opened: Result<Arc<dyn GpuSource>, TelemetryError> = match *name {
            "nvml" => nvml::NvmlSource::open()
                .await
                .map(|s| Arc::new(s) as Arc<dyn GpuSource>),
            "nvidia-smi" => smi::SmiSource::open(interval_ms)
                .await
                .map(|s| Arc::new(s) as Arc<dyn GpuSource>),
            "dcgm" => dcgm::DcgmSource::open(spec.url.as_deref(), &spec.gpus, client.clone())
                .await
                .map(|s| Arc::new(s) as Arc<dyn GpuSource>),
            _ => simgpu::SimGpuSource::open(engine_base_url, client.clone())
                .await
                .map(|s| Arc::new(s) as Arc<dyn GpuSource>),
        };
        match opened {
            Ok(source) => return (Telemetry::from_source(source, interval_ms), None),
            Err(e) => why.push(format!("{name}: {e}")),
        }
    }
    let notice = format!("no GPU telemetry ({})", why.join("; "));
    (Telemetry::none(), Some(notice))
}

/// An opened telemetry source (or none). Cheap to clone.
#[derive(Clone)]
pub struct Telemetry {
    source: Option<Arc<dyn GpuSource>>,
    interval: Duration,
    gpus: Vec<GpuInfo>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("source", &self.source_name())
            .field("interval", &self.interval)
            .field("gpus", &self.gpus)
            .finish()
    }
}

impl Telemetry {
    /// A telemetry that samples nothing.
    pub fn none() -> Telemetry {
        Telemetry {
            source: None,
            interval: Duration::from_millis(200),
            gpus: Vec::new(),
        }
    }

    /// Telemetry over a given source (tests pass a fake), sampling every `interval_ms`.
    pub fn from_source(source: Arc<dyn GpuSource>, interval_ms: u64) -> Telemetry {
        let gpus = source.gpus();
        Telemetry {
            source: Some(source),
            interval: Duration::from_millis(interval_ms.max(1)),
            gpus,
        }
    }

    /// The source's name (`nvml`, `nvidia-smi`, `dcgm`, `sim`), `None` when there is none.
    pub fn source_name(&self) -> Option<&'static str> {
        self.source.as_ref().map(|s| s.name())
    }

    /// The GPUs the source saw when opened.
    pub fn gpus(&self) -> Vec<GpuInfo> {
        self.gpus.clone()
    }

    /// One sample now (`t_s` = 0), or `None` without a source or on a failed read.
    pub async fn read_now(&self) -> Option<GpuSample> {
        let source = self.source.as_ref()?;
        let readings = tokio::time::timeout(read_timeout(self.interval), source.read())
            .await
            .ok()?
            .ok()?;
        from_readings(0.0, &readings)
    }

    /// Starts sampling in the background, every interval, until
    /// [`TrialSampler::finish`]. Must be called within a tokio runtime.
    pub fn start_trial(&self) -> TrialSampler {
        let samples = Arc::new(Mutex::new(Taken::default()));
        let Some(source) = self.source.clone() else {
            return TrialSampler {
                stop: CancellationToken::new(),
                task: None,
                samples,
                source: None,
            };
        };
        let stop = CancellationToken::new();
        let name = source.name();
        let task = tokio::spawn(sample_loop(
            source,
            self.interval,
            stop.clone(),
            samples.clone(),
        ));
        TrialSampler {
            stop,
            task: Some(task),
            samples,
            source: Some(name),
        }
    }

    /// Waits until the GPU is at or below `max_temp_c` and its SM clock at least
    /// `min_sm_mhz` (each when given), for at most `max_wait_s`. Returns the seconds
    /// waited, or `None` without telemetry, without conditions, or when the GPU
    /// cannot be read at all.
    ///
    /// An idle GPU lowers its clocks, so `min_sm_mhz` suits sources that report the
    /// clock the GPU would run at (the simulator) better than an idle real GPU.
    pub async fn cooldown(&self, spec: &CooldownSpec) -> Option<f64> {
        let source = self.source.as_ref()?;
        if spec.max_temp_c.is_none() && spec.min_sm_mhz.is_none() {
            return None;
        }
        let limit = Duration::from_secs_f64(spec.max_wait_s.max(0.0));
        let start = Instant::now();
        let mut read_any = false;
        loop {
            let reading = tokio::time::timeout(read_timeout(self.interval), source.read()).await;
            let sample = match reading {
                Ok(Ok(r)) => from_readings(0.0, &r),
                _ => None,
            };
            if let Some(s) = &sample {
                read_any = true;
                if is_cool(s, spec) {
                    return Some(start.elapsed().as_secs_f64());
                }
            }
            if start.elapsed() >= limit {
                return read_any.then(|| start.elapsed().as_secs_f64());
            }
            let left = limit.saturating_sub(start.elapsed());
            tokio::time::sleep(COOLDOWN_POLL.min(left)).await;
        }
    }
}

fn is_cool(s: &GpuSample, spec: &CooldownSpec) -> bool {
    let temp_ok = match (spec.max_temp_c, s.temp_c) {
        (Some(limit), Some(t)) => t <= limit,
        (Some(_), None) => true,
        (None, _) => true,
    };
    let clock_ok = match (spec.min_sm_mhz, s.sm_mhz) {
        (Some(limit), Some(mhz)) => mhz >= limit,
        (Some(_), None) => true,
        (None, _) => true,
    };
    temp_ok && clock_ok
}

/// A read slower than this is abandoned.
fn read_timeout(interval: Duration) -> Duration {
    (interval * 5).max(Duration::from_secs(2))
}

async fn sample_loop(
    source: Arc<dyn GpuSource>,
    interval: Duration,
    stop: CancellationToken,
    samples: Arc<Mutex<Taken>>,
) {
    let start = Instant::now();
    let ticks = Ticks {
        start,
        first: start,
        interval,
    };
    let source = &source;
    let read = move || async move {
        match tokio::time::timeout(read_timeout(interval), source.read()).await {
            Ok(Ok(readings)) => Ok(readings),
            _ => Err(()), // failed or too slow
        }
    };
    let keep = |t_s, readings: Vec<GpuReading>| {
        if let Ok(mut taken) = samples.lock() {
            taken.energy.add(t_s, &readings);
            taken.samples.extend(from_readings(t_s, &readings));
        }
    };
    sample_until_stopped(ticks, stop, MAX_CONSECUTIVE_FAILURES, read, keep).await;
}

/// What a trial's sampler has taken: the samples and the energy meter.
#[derive(Debug, Default)]
struct Taken {
    samples: Vec<GpuSample>,
    energy: energy::EnergyMeter,
}

/// Samples of one trial, taken in the background.
#[derive(Debug)]
pub struct TrialSampler {
    /// Cancelled when the trial's samples are taken.
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
    samples: Arc<Mutex<Taken>>,
    source: Option<&'static str>,
}

impl TrialSampler {
    /// Stops sampling and returns the samples taken (whatever was taken, even if the
    /// source failed part-way).
    pub async fn finish(self) -> Vec<GpuSample> {
        self.finish_with_energy().await.0
    }

    /// Stops sampling; the samples taken and the trial's GPU energy (see [`energy`]).
    pub async fn finish_with_energy(mut self) -> (Vec<GpuSample>, Option<TrialEnergy>) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let mut taken = match self.samples.lock() {
            Ok(mut t) => std::mem::take(&mut *t),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        let energy = self.source.and_then(|s| taken.energy.finish(s));
        (std::mem::take(&mut taken.samples), energy)
    }
}

impl Drop for TrialSampler {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// GPU memory in use per GPU now, MiB (NVML, else `nvidia-smi`); `None` without a
/// GPU. Blocking: call from `spawn_blocking`.
pub fn gpu_memory_used_mib() -> Option<Vec<f64>> {
    nvml::memory_used_mib().or_else(smi::memory_used_mib)
}

#[cfg(test)]
mod tests;
