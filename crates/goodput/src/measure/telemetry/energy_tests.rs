//! The energy of a trial, checked by hand against the fixtures (hand-written, not
//! captured from a device: tests/fixtures/nvml/README.md).

use super::*;
use crate::measure::telemetry::smi::{energy_unit_j, parse_line, parse_line_with};

fn fixture(path: &str) -> String {
    let path = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The NVML fixture as (t_s, readings of that instant).
fn nvml_fixture() -> Vec<(f64, Vec<GpuReading>)> {
    let mut out: Vec<(f64, Vec<GpuReading>)> = Vec::new();
    for line in fixture("nvml/a100-energy.csv").lines().skip(1) {
        let f: Vec<f64> = line.split(',').map(|v| v.parse().unwrap()).collect();
        let reading = GpuReading {
            index: f[1] as u32,
            energy_j: Some(f[2] / 1000.0),
            power_w: Some(f[3] / 1000.0),
            util_pct: Some(f[4]),
            mem_used_mib: Some(f[5]),
            mem_total_mib: Some(f[6]),
            ..Default::default()
        };
        match out.last_mut() {
            Some((t, r)) if *t == f[0] => r.push(reading),
            _ => out.push((f[0], vec![reading])),
        }
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn nvml_counter_difference_over_the_busy_gpu() {
    let mut meter = EnergyMeter::default();
    for (t, r) in nvml_fixture() {
        meter.add(t, &r);
    }
    let e = meter.finish("nvml").unwrap();
    // GPU 0: (5000500000 - 5000000000) mJ = 500 J over 2 s; GPU 1 is idle.
    assert_eq!(e.method, "nvml-counter");
    assert_eq!((e.gpus.len(), e.gpus_seen), (1, 2));
    assert_eq!(e.gpus[0].index, 0);
    assert!(close(e.span_s, 2.0) && close(e.joules, 500.0), "{e:?}");
    assert!(close(e.mean_power_w, 250.0));
}

#[test]
fn without_a_counter_the_power_is_integrated() {
    let mut meter = EnergyMeter::default();
    for (t, mut r) in nvml_fixture() {
        r.iter_mut().for_each(|g| g.energy_j = None);
        meter.add(t, &r);
    }
    let e = meter.finish("nvml").unwrap();
    // Trapezoids of 0.5 s: (231+262)/4 + (262+255)/4 + (255+244)/4 + (244+258)/4.
    assert_eq!(e.method, "power-integral");
    assert!(close(e.joules, 502.75), "{e:?}");
    assert!(close(e.mean_power_w, 251.375));
}

#[test]
fn a_counter_that_falls_or_goes_missing_is_not_trusted() {
    let fell = |j: f64| GpuReading {
        energy_j: Some(j),
        power_w: Some(100.0),
        util_pct: Some(50.0),
        ..Default::default()
    };
    let mut meter = EnergyMeter::default();
    meter.add(0.0, &[fell(1000.0)]);
    meter.add(1.0, &[fell(10.0)]); // a driver reload reset it
    meter.add(2.0, &[fell(200.0)]);
    let e = meter.finish("nvml").unwrap();
    assert_eq!(e.method, "power-integral");
    assert!(close(e.joules, 200.0));
    // One reading: its power, over an empty span.
    let mut one = EnergyMeter::default();
    one.add(0.3, &[fell(5.0)]);
    let e = one.finish("sim").unwrap();
    assert_eq!((e.span_s, e.joules, e.mean_power_w), (0.0, 0.0, 100.0));
    // A counted GPU with neither counter nor power: no figure rather than a part.
    let mut blind = EnergyMeter::default();
    blind.add(0.0, &[GpuReading::default()]);
    blind.add(1.0, &[GpuReading::default()]);
    assert_eq!(blind.finish("nvml"), None);
    assert_eq!(EnergyMeter::default().finish("nvml"), None);
    // A counter that stood still while the GPU drew power is stale (an exporter that
    // collects less often than goodput reads): the power, not 0 W.
    let mut stale = EnergyMeter::default();
    stale.add(0.0, &[fell(1000.0)]);
    stale.add(2.0, &[fell(1000.0)]);
    let e = stale.finish("dcgm").unwrap();
    assert_eq!(
        (e.method.as_str(), e.mean_power_w),
        ("power-integral", 100.0)
    );
    // An idle GPU's counter may stand still: 0 W is then the measurement.
    let idle = |j: f64| GpuReading {
        power_w: Some(0.0),
        ..fell(j)
    };
    let mut still = EnergyMeter::default();
    still.add(0.0, &[idle(1000.0)]);
    still.add(2.0, &[idle(1000.0)]);
    let e = still.finish("dcgm").unwrap();
    assert_eq!((e.method.as_str(), e.mean_power_w), ("dcgm-counter", 0.0));
}

#[test]
fn nvidia_smi_energy_field_and_its_unit() {
    let units: Vec<Option<f64>> = fixture("nvidia-smi/h100x2-energy-units.csv")
        .lines()
        .map(energy_unit_j)
        .collect();
    assert_eq!(units, vec![Some(1e-3), Some(1e-3)]);
    assert_eq!(energy_unit_j("12.5 kWh"), Some(3.6e6));
    assert_eq!(energy_unit_j("[N/A]"), None);
    assert_eq!(energy_unit_j("123"), None, "no unit, no guess");
    let mut meter = EnergyMeter::default();
    let text = fixture("nvidia-smi/h100x2-energy-loop.csv");
    for (i, pair) in text.lines().collect::<Vec<_>>().chunks(2).enumerate() {
        let r: Vec<GpuReading> = pair
            .iter()
            .map(|l| parse_line_with(l, Some(1e-3)).unwrap())
            .collect();
        meter.add(i as f64, &r);
    }
    let e = meter.finish("nvidia-smi").unwrap();
    // GPU 0: 1236367890 - 1234567890 mJ = 1800 J over 3 s; GPU 1 idle, left out.
    assert_eq!(e.method, "nvidia-smi-counter");
    assert_eq!((e.gpus.len(), e.gpus_seen), (1, 2));
    assert!(
        close(e.joules, 1800.0) && close(e.mean_power_w, 600.0),
        "{e:?}"
    );
    // A line without the field's value reads no counter.
    let na = text.lines().next().unwrap().replace("1234567890", "[N/A]");
    assert_eq!(parse_line_with(&na, Some(1e-3)).unwrap().energy_j, None);
    // Without the probe's unit the field is not asked for, so never read.
    assert_eq!(parse_line(&na).map(|r| r.energy_j), Ok(None));
}

#[tokio::test(start_paused = true)]
async fn the_trial_sampler_meters_energy() {
    let readings: Vec<_> = nvml_fixture().into_iter().map(|(_, r)| Ok(r)).collect();
    let source = crate::measure::telemetry::tests::FakeSource::new(readings, false);
    let telemetry = crate::measure::telemetry::Telemetry::from_source(source, 500);
    let sampler = telemetry.start_trial();
    tokio::time::sleep(std::time::Duration::from_millis(2000)).await;
    let (samples, energy) = sampler.finish_with_energy().await;
    assert!(samples.len() >= 4, "{} samples", samples.len());
    let e = energy.unwrap();
    // However many of the five readings were taken, the counter gives 250 W.
    assert!(close(e.mean_power_w, 250.0), "{e:?}");
    assert_eq!(e.source, "fake");
}
