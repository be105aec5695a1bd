//! Opening telemetry sources for real: `auto` falls back from NVML and nvidia-smi
//! to the engine's `/sim/gpu` (served here in-process) and then to none, with one
//! notice; on a machine with an NVIDIA GPU, NVML and nvidia-smi are sampled too.

use std::time::Duration;

use axum::routing::get;
use axum::{Json, Router};
use goodput::define::profile::{CooldownSpec, TelemetrySpec};
use goodput::measure::telemetry;

/// Whether this machine has a working NVIDIA GPU.
fn has_gpu() -> bool {
    std::process::Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.is_empty())
}

/// Serves a simulated GPU on a loopback port; the base URL.
async fn sim_gpu_server() -> String {
    let app = Router::new().route(
        "/sim/gpu",
        get(|| async {
            Json(serde_json::json!({
                "name": "sim-L4", "sm_clock_mhz": 1500.0, "max_sm_clock_mhz": 2040.0,
                "temperature_c": 70.0, "power_w": 60.0, "power_limit_w": 72.0,
                "memory_used_mib": 1000.0, "memory_total_mib": 23034.0,
                "utilization_pct": 90.0, "throttle_reasons": [], "thermal_throttled": false
            }))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

fn spec(source: &str) -> TelemetrySpec {
    TelemetrySpec {
        source: source.into(),
        interval_ms: 50,
        cooldown: None,
    }
}

#[tokio::test]
async fn auto_falls_back_to_the_simulator_gpu() {
    let base = sim_gpu_server().await;
    let client = reqwest::Client::new();
    let (tel, notice) = telemetry::open(&spec("auto"), &base, &client).await;
    assert_eq!(notice, None);
    let expected: &[&str] = if has_gpu() {
        &["nvml", "nvidia-smi"]
    } else {
        &["sim"]
    };
    assert!(
        expected.contains(&tel.source_name().unwrap()),
        "{:?}",
        tel.source_name()
    );
    let sampler = tel.start_trial();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let samples = sampler.finish().await;
    assert!(samples.len() >= 3, "{} samples", samples.len());
    assert!(samples.windows(2).all(|w| w[0].t_s < w[1].t_s));
    if !has_gpu() {
        assert_eq!(tel.gpus()[0].name.as_deref(), Some("sim-L4"));
        assert_eq!(samples[0].sm_mhz, Some(1500.0));
        let cool = CooldownSpec {
            max_temp_c: Some(75.0),
            min_sm_mhz: None,
            max_wait_s: 5.0,
        };
        assert!(tel.cooldown(&cool).await.is_some_and(|w| w < 1.0));
    }
}

/// The machine decides which side can be checked, and each side is checked in full:
/// without a GPU, nothing to sample is one notice, not a failure; with one, every
/// real source opens, lists the GPUs and samples sane values. Neither side skips.
#[tokio::test]
async fn telemetry_matches_the_machine() {
    if has_gpu() {
        real_gpu_sources().await;
    } else {
        nothing_to_sample_is_one_notice_not_a_failure().await;
    }
}

async fn nothing_to_sample_is_one_notice_not_a_failure() {
    let closed = format!(
        "http://127.0.0.1:{}",
        goodput::drive::engine::command::free_port().unwrap()
    );
    let client = reqwest::Client::new();
    let (tel, notice) = telemetry::open(&spec("auto"), &closed, &client).await;
    assert_eq!(tel.source_name(), None);
    let notice = notice.unwrap();
    eprintln!("notice: {notice}");
    for part in ["nvml", "nvidia-smi", "sim"] {
        assert!(notice.contains(part), "{notice}");
    }
    assert!(tel.start_trial().finish().await.is_empty());
    let (tel, notice) = telemetry::open(&spec("nvml"), &closed, &client).await;
    assert_eq!(tel.source_name(), None);
    assert!(notice.is_some_and(|n| n.starts_with("no GPU telemetry")));
}

/// On a GPU machine: each real source opens, lists the GPUs and samples sane values,
/// and `auto` picks one of them without a notice.
async fn real_gpu_sources() {
    let client = reqwest::Client::new();
    for source in ["nvml", "nvidia-smi"] {
        let (tel, notice) = telemetry::open(&spec(source), "http://127.0.0.1:9", &client).await;
        assert_eq!(notice, None, "{source}");
        assert_eq!(tel.source_name(), Some(source));
        let gpus = tel.gpus();
        assert!(
            !gpus.is_empty() && gpus[0].name.is_some(),
            "{source}: {gpus:?}"
        );
        assert!(gpus[0].driver.is_some(), "{source}: {gpus:?}");
        let sampler = tel.start_trial();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let samples = sampler.finish().await;
        assert!(!samples.is_empty(), "{source}");
        let s = &samples[samples.len() - 1];
        assert!(s.sm_mhz.is_some_and(|v| v > 0.0), "{source}: {s:?}");
        assert!(
            s.temp_c.is_some_and(|v| (0.0..130.0).contains(&v)),
            "{source}: {s:?}"
        );
        assert!(
            s.max_sm_mhz.is_some_and(|v| v >= s.sm_mhz.unwrap_or(0.0)),
            "{source}: {s:?}"
        );
        let summary = telemetry::summarize(&[samples], source).unwrap();
        assert_eq!(summary.median_sm_mhz.n, 1);
    }
    let (tel, notice) = telemetry::open(&spec("auto"), "http://127.0.0.1:9", &client).await;
    assert_eq!(notice, None);
    assert!(matches!(tel.source_name(), Some("nvml" | "nvidia-smi")));
    let used = tokio::task::spawn_blocking(telemetry::gpu_memory_used_mib)
        .await
        .unwrap();
    assert!(used.is_some_and(|u| !u.is_empty()));
}
