//! Opening telemetry sources for real: `auto` falls back from NVML and nvidia-smi
//! to the engine's `/sim/gpu` (served here in-process) and then to none, with one
//! notice; on a machine with an NVIDIA GPU, NVML and nvidia-smi are sampled too.
//! A fake dcgm-exporter gives a whole run against a `url` engine its power and
//! energy per token, and a dead one costs a notice, not the run.

use std::time::Duration;

use axum::routing::get;
use axum::{Json, Router};
use goodput::define::profile::{CooldownSpec, TelemetrySpec};
use goodput::measure::telemetry;

use crate::common;
use common::cli::Scratch;
use common::load_share::start_sim;

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
        ..Default::default()
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

/// A dcgm-exporter on a loopback port: two H100s drawing 250 W each, their energy
/// counters (mJ) rising at that rate from the server's start.
async fn fake_dcgm_exporter() -> common::server::Server {
    let start = std::time::Instant::now();
    let app = Router::new().route(
        "/metrics",
        get(move || async move {
            let s = start.elapsed().as_secs_f64();
            let mut body = String::from(
                "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n\
                 # TYPE DCGM_FI_DEV_POWER_USAGE gauge\n",
            );
            for (gpu, base_mj) in [(0, 31_035_686_671.0), (1, 18_203_937_413.0)] {
                let labels = format!(
                    "gpu=\"{gpu}\",UUID=\"GPU-0000000{gpu}-bd76-aa91-17e7-b48bcd0208ba\",\
                     device=\"nvidia{gpu}\",modelName=\"NVIDIA H100 80GB HBM3\",\
                     Hostname=\"gpu-node-07\",DCGM_FI_DRIVER_VERSION=\"550.90.07\""
                );
                let energy_mj = (base_mj + 250.0 * 1000.0 * s).round();
                body.push_str(&format!(
                    "DCGM_FI_DEV_POWER_USAGE{{{labels}}} 250.000000\n\
                     DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {energy_mj}\n\
                     DCGM_FI_DEV_SM_CLOCK{{{labels}}} 1755\n\
                     DCGM_FI_DEV_GPU_TEMP{{{labels}}} 64\n\
                     DCGM_FI_DEV_GPU_UTIL{{{labels}}} 93\n\
                     DCGM_FI_DEV_FB_USED{{{labels}}} 71234\n\
                     DCGM_FI_DEV_FB_FREE{{{labels}}} 9790\n"
                ));
            }
            body
        }),
    );
    common::server::spawn_router(app).await
}

fn dcgm_profile(engine_url: &str, dcgm_url: &str, gpus: &str) -> String {
    format!(
        r#"
name = "dcgm"
[slo]
ttft_ms = 2000
tpot_ms = 200
[load]
points = [2]
requests_per_trial = 8
trials = 1
request_timeout_s = 30
[workload]
input_tokens = 16
output_tokens = 8
[telemetry]
source = "dcgm"
url = "{dcgm_url}"
interval_ms = 50
{gpus}
[engines.remote]
url = "{engine_url}"
"#
    )
}

/// `goodput run` of `profile` in `dir`, off the runtime that serves the fake exporter.
async fn run_goodput(dir: &Scratch, profile: String) -> report::Report {
    let (out, report) = {
        let dir_path = dir.path("p.toml");
        std::fs::write(&dir_path, profile).unwrap();
        let out_path = dir.path("r.json");
        tokio::task::spawn_blocking(move || {
            let out = common::cli::goodput_run(&dir_path, &out_path)
                .args(["--quiet", "--force"])
                .timeout(Duration::from_secs(60))
                .output()
                .unwrap();
            (out, out_path)
        })
        .await
        .unwrap()
    };
    common::cli::succeeded(&out, "goodput run");
    goodput::report::read_report(&report).expect("the run wrote its report")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_engine_gets_power_and_energy_per_token_from_dcgm() {
    let exporter = fake_dcgm_exporter().await;
    let sim = start_sim();
    let dir = Scratch::new();
    // The exporter's root URL: goodput reads its /metrics.
    let r = run_goodput(&dir, dcgm_profile(&sim.url, &exporter.url, "")).await;
    let point = &r.load["remote"].points[0];
    let gpu = point.gpu.as_ref().expect("GPU telemetry");
    assert_eq!(gpu.source.as_deref(), Some("dcgm"));
    let median_w = gpu.median_power_w.as_ref().and_then(|s| s.median);
    assert_eq!(median_w, Some(500.0), "two GPUs at 250 W: {gpu:?}");
    let e = point.energy.as_ref().expect("energy");
    assert_eq!(
        (e.source.as_str(), e.method.as_str()),
        ("dcgm", "dcgm-counter")
    );
    assert_eq!(e.gpus, 2);
    let w = e.mean_power_w.median.unwrap();
    assert!((w - 500.0).abs() < 25.0, "the counters say 500 W: {w}");
    let jpt = e.joules_per_output_token.median.unwrap();
    let thr = point.output_throughput.median.unwrap();
    assert!(
        jpt > 0.0 && (jpt - w / thr).abs() <= 1e-6 * jpt,
        "J per output token = W / (tokens/s): {jpt} vs {w} / {thr}"
    );
    let gpus = &r.environment.as_ref().expect("environment").gpus;
    assert_eq!(gpus.len(), 2, "{gpus:?}");
    assert_eq!(gpus[0].name.as_deref(), Some("NVIDIA H100 80GB HBM3"));

    // One GPU chosen by UUID: half the power; a dead exporter: a notice, a good run.
    let one = "gpus = [\"GPU-00000001-bd76-aa91-17e7-b48bcd0208ba\"]";
    let metrics = format!("{}/metrics", exporter.url);
    let r = run_goodput(&dir, dcgm_profile(&sim.url, &metrics, one)).await;
    let e = r.load["remote"].points[0].energy.as_ref().expect("energy");
    assert_eq!(e.gpus, 1);
    assert!(
        (e.mean_power_w.median.unwrap() - 250.0).abs() < 12.5,
        "{e:?}"
    );
    let dead = format!("http://127.0.0.1:{}/metrics", common::server::closed_port());
    let r = run_goodput(&dir, dcgm_profile(&sim.url, &dead, "")).await;
    let point = &r.load["remote"].points[0];
    assert!(point.gpu.is_none() && point.energy.is_none());
    assert!(point.output_throughput.median.unwrap() > 0.0);
    let notices = &r.run.as_ref().unwrap().notices;
    assert!(
        notices
            .iter()
            .any(|n| n.text.contains("no GPU telemetry (dcgm: no DCGM")),
        "{notices:?}"
    );
}
