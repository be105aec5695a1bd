//! Sampler, summary and cooldown arithmetic on fake sources.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// Replays readings in order, then fails (or repeats the last one).
pub(super) struct FakeSource {
    script: Mutex<VecDeque<Result<Vec<GpuReading>, TelemetryError>>>,
    last: Mutex<Option<Vec<GpuReading>>>,
    repeat_last: bool,
    reads: AtomicUsize,
}

impl FakeSource {
    pub(super) fn new(
        script: Vec<Result<Vec<GpuReading>, TelemetryError>>,
        repeat_last: bool,
    ) -> Arc<FakeSource> {
        Arc::new(FakeSource {
            script: Mutex::new(script.into()),
            last: Mutex::new(None),
            repeat_last,
            reads: AtomicUsize::new(0),
        })
    }
}

impl GpuSource for FakeSource {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn gpus(&self) -> Vec<GpuInfo> {
        vec![GpuInfo {
            index: 0,
            name: Some("Fake GPU".into()),
            ..Default::default()
        }]
    }
    fn read(&self) -> BoxFuture<'_, Result<Vec<GpuReading>, TelemetryError>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let next = self.script.lock().unwrap().pop_front();
        let out = match next {
            Some(r) => {
                if let Ok(v) = &r {
                    *self.last.lock().unwrap() = Some(v.clone());
                }
                r
            }
            None => match (&*self.last.lock().unwrap(), self.repeat_last) {
                (Some(v), true) => Ok(v.clone()),
                _ => Err(TelemetryError::Read("script over".into())),
            },
        };
        Box::pin(std::future::ready(out))
    }
}

fn gpu(sm: f64, temp: f64, power: f64, thermal: bool) -> GpuReading {
    GpuReading {
        index: 0,
        sm_mhz: Some(sm),
        max_sm_mhz: Some(2040.0),
        temp_c: Some(temp),
        power_w: Some(power),
        power_limit_w: Some(72.0),
        mem_used_mib: Some(17000.0),
        mem_total_mib: Some(23034.0),
        util_pct: Some(100.0),
        thermal,
        ..Default::default()
    }
}

fn sample(sm: f64, temp: f64, power: f64, thermal: bool) -> GpuSample {
    from_readings(0.0, &[gpu(sm, temp, power, thermal)]).unwrap()
}

#[test]
fn several_gpus_combine_over_the_busy_ones() {
    let idle = GpuReading {
        index: 1,
        sm_mhz: Some(210.0),
        temp_c: Some(30.0),
        power_w: Some(10.0),
        mem_used_mib: Some(1.0),
        mem_total_mib: Some(23034.0),
        util_pct: Some(0.0),
        ..Default::default()
    };
    let a = gpu(1800.0, 70.0, 60.0, false);
    let b = GpuReading {
        index: 2,
        ..gpu(1500.0, 80.0, 65.0, true)
    };
    let s = from_readings(1.5, &[a.clone(), idle.clone(), b]).unwrap();
    assert_eq!(s.t_s, 1.5);
    assert_eq!(s.sm_mhz, Some(1500.0), "slowest busy GPU, not the idle one");
    assert_eq!(s.temp_c, Some(80.0));
    assert_eq!(s.power_w, Some(125.0));
    assert_eq!(s.power_limit_w, Some(144.0));
    assert!(s.thermal);
    // With nothing busy, every GPU counts.
    let quiet = GpuReading {
        util_pct: Some(0.0),
        mem_used_mib: Some(0.0),
        ..a
    };
    let s = from_readings(0.0, &[quiet, idle]).unwrap();
    assert_eq!(s.sm_mhz, Some(210.0));
    assert_eq!(from_readings(0.0, &[]), None);
}

#[test]
fn summary_over_trials() {
    let t1 = vec![
        sample(2000.0, 60.0, 50.0, false),
        sample(1000.0, 85.0, 70.0, true),
        sample(1500.0, 80.0, 60.0, false),
    ];
    let t2 = vec![
        sample(400.0, 88.0, 40.0, true),
        sample(600.0, 89.0, 44.0, true),
    ];
    let s = summarize(&[t1.clone(), t2.clone()], "nvml").unwrap();
    // Per-trial medians 1500 and 500.
    assert_eq!(s.median_sm_mhz.n, 2);
    assert_eq!(s.median_sm_mhz.median, Some(1000.0));
    assert_eq!(
        (s.median_sm_mhz.min, s.median_sm_mhz.max),
        (Some(500.0), Some(1500.0))
    );
    assert_eq!(s.max_temp_c, Some(89.0));
    assert_eq!(s.thermal_share, Some(3.0 / 5.0));
    let power = s.median_power_w.unwrap();
    assert_eq!((power.min, power.max), (Some(42.0), Some(60.0)));
    assert_eq!(s.max_sm_clock_mhz, Some(2040.0));
    assert_eq!(s.power_limit_w, Some(72.0));
    assert_eq!(s.max_memory_used_mib, Some(17000.0));
    assert_eq!(s.samples, Some(5));
    assert_eq!(s.source.as_deref(), Some("nvml"));
    // An empty trial counts for nothing; no samples at all is no summary.
    let s = summarize(&[t1, Vec::new()], "sim").unwrap();
    assert_eq!(s.median_sm_mhz.n, 1);
    assert_eq!(summarize(&[Vec::new()], "sim"), None);
    assert_eq!(summarize(&[], "sim"), None);
    // The report keeps the samples whole: what a resumed run summarises is what
    // the sampler took.
    let r: Vec<GpuSample> = serde_json::from_str(&serde_json::to_string(&t2).unwrap()).unwrap();
    assert_eq!(r, t2);
    assert_eq!(
        (r[1].sm_mhz, r[1].temp_c, r[1].power_w, r[1].thermal),
        (Some(600.0), Some(89.0), Some(44.0), true)
    );
}

#[tokio::test(start_paused = true)]
async fn sampler_takes_one_sample_per_interval() {
    let source = FakeSource::new(vec![Ok(vec![gpu(1800.0, 70.0, 60.0, false)])], true);
    let telemetry = Telemetry::from_source(source, 200);
    let sampler = telemetry.start_trial();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let samples = sampler.finish().await;
    // Ticks at 0, 200, 400, 600, 800 and 1000 ms (the last races with finish).
    assert!(
        (5..=6).contains(&samples.len()),
        "{} samples",
        samples.len()
    );
    for (i, s) in samples.iter().enumerate() {
        assert!(
            (s.t_s - 0.2 * i as f64).abs() < 1e-6,
            "sample {i} at {}",
            s.t_s
        );
        assert_eq!(s.sm_mhz, Some(1800.0));
    }
}

#[tokio::test(start_paused = true)]
async fn sampler_that_fails_mid_trial_keeps_what_it_has() {
    let script = vec![
        Ok(vec![gpu(1800.0, 70.0, 60.0, false)]),
        Err(TelemetryError::Read("flaky".into())),
        Ok(vec![gpu(1700.0, 75.0, 61.0, false)]),
    ];
    let source = FakeSource::new(script, false);
    let telemetry = Telemetry::from_source(source.clone(), 100);
    let sampler = telemetry.start_trial();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let samples = sampler.finish().await;
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[1].sm_mhz, Some(1700.0));
    assert!((samples[1].t_s - 0.2).abs() < 1e-6);
    // It gave up after 10 failures in a row rather than polling forever.
    assert_eq!(
        source.reads.load(Ordering::SeqCst),
        3 + MAX_CONSECUTIVE_FAILURES as usize
    );
}

#[tokio::test]
async fn no_source_samples_nothing() {
    let telemetry = Telemetry::none();
    assert!(telemetry.gpus().is_empty());
    assert_eq!(telemetry.source_name(), None);
    assert!(telemetry.start_trial().finish().await.is_empty());
    let spec = CooldownSpec {
        max_temp_c: Some(50.0),
        min_sm_mhz: None,
        max_wait_s: 5.0,
    };
    assert_eq!(telemetry.cooldown(&spec).await, None);
    assert_eq!(telemetry.read_now().await, None);
}

#[tokio::test(start_paused = true)]
async fn cooldown_waits_until_cool_and_is_bounded() {
    let temps = [90.0, 85.0, 80.0, 74.0, 70.0];
    let script = temps
        .iter()
        .map(|t| Ok(vec![gpu(1800.0, *t, 60.0, false)]))
        .collect();
    let telemetry = Telemetry::from_source(FakeSource::new(script, true), 200);
    let spec = CooldownSpec {
        max_temp_c: Some(75.0),
        min_sm_mhz: None,
        max_wait_s: 60.0,
    };
    let waited = telemetry.cooldown(&spec).await.unwrap();
    assert!((waited - 3.0).abs() < 1e-6, "waited {waited}");

    let hot = FakeSource::new(vec![Ok(vec![gpu(400.0, 90.0, 60.0, true)])], true);
    let telemetry = Telemetry::from_source(hot, 200);
    let spec = CooldownSpec {
        max_temp_c: Some(75.0),
        min_sm_mhz: Some(1500.0),
        max_wait_s: 4.5,
    };
    let waited = telemetry.cooldown(&spec).await.unwrap();
    assert!(
        (waited - 4.5).abs() < 1e-6,
        "bounded at max_wait_s, waited {waited}"
    );

    let spec = CooldownSpec {
        max_temp_c: None,
        min_sm_mhz: None,
        max_wait_s: 4.5,
    };
    assert_eq!(
        telemetry.cooldown(&spec).await,
        None,
        "no condition, no wait"
    );
}

#[tokio::test]
async fn open_none_and_unknown_sources() {
    let client = reqwest::Client::new();
    let spec = TelemetrySpec {
        source: "none".into(),
        ..Default::default()
    };
    let (t, notice) = open(&spec, "http://127.0.0.1:9", &client).await;
    assert_eq!((t.source_name(), notice), (None, None));
    let spec = TelemetrySpec {
        source: "bogus".into(),
        ..Default::default()
    };
    let (t, notice) = open(&spec, "http://127.0.0.1:9", &client).await;
    assert_eq!(t.source_name(), None);
    assert!(notice.unwrap().contains("bogus"));
    // An explicit `sim` source against nothing listening: no telemetry, one notice.
    let spec = TelemetrySpec {
        source: "sim".into(),
        ..Default::default()
    };
    let (t, notice) = open(&spec, "http://127.0.0.1:9", &client).await;
    assert_eq!(t.source_name(), None);
    assert!(notice.unwrap().starts_with("no GPU telemetry"));
}
