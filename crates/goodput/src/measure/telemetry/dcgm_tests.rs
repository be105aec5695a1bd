//! dcgm-exporter's answer parsed, on the fixture (tests/fixtures/dcgm/h100x2.prom:
//! hand-written in the exporter's layout, its header says from what).

use super::*;
use crate::measure::telemetry::energy::EnergyMeter;
use crate::measure::telemetry::from_readings;

fn fixture() -> String {
    let path = format!(
        "{}/tests/fixtures/dcgm/h100x2.prom",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const UUID0: &str = "GPU-8c16e996-bd76-aa91-17e7-b48bcd0208ba";
const UUID1: &str = "GPU-72ad4d20-cfed-f08d-c894-f620962ca3e4";

#[test]
fn two_gpus_with_every_field_the_exporter_gives() {
    let gpus = parse(&fixture());
    assert_eq!(gpus.len(), 2);
    let (g0, g1) = (&gpus[0], &gpus[1]);
    assert_eq!((g0.index, g0.uuid.as_deref()), (0, Some(UUID0)));
    assert_eq!((g1.index, g1.uuid.as_deref()), (1, Some(UUID1)));
    let r = g0.reading();
    assert_eq!(r.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(r.power_w, Some(512.337));
    assert_eq!(r.energy_j, Some(31_035_686.671), "mJ to J");
    assert_eq!((r.sm_mhz, r.mem_mhz), (Some(1755.0), Some(2619.0)));
    assert_eq!((r.temp_c, r.util_pct), (Some(71.0), Some(97.0)));
    assert_eq!(r.mem_used_mib, Some(71234.0));
    assert_eq!(
        r.mem_total_mib,
        Some(71234.0 + 9790.0 + 535.0),
        "used + free + reserved"
    );
    assert!(r.thermal, "0x24: power cap and software thermal slowdown");
    assert_eq!(
        (r.max_sm_mhz, r.power_limit_w),
        (None, None),
        "not exported"
    );
    let r1 = g1.reading();
    assert!(!r1.thermal, "0x1: idle only");
    assert_eq!((r1.util_pct, r1.mem_used_mib), (Some(0.0), Some(0.0)));
    let info = g0.info();
    assert_eq!(info.driver.as_deref(), Some("550.90.07"));
    assert_eq!(info.memory_mib, Some(81559.0));
    // The busy GPU is the one a sample describes.
    let s = from_readings(0.0, &[r, r1]).unwrap();
    assert_eq!((s.power_w, s.util_pct), (Some(512.337), Some(97.0)));
}

#[test]
fn gpus_chosen_by_index_or_uuid() {
    let all = parse(&fixture());
    let by_index = select(all.clone(), &[GpuSelector::Index(1)]).unwrap();
    assert_eq!(by_index.iter().map(|g| g.index).collect::<Vec<_>>(), [1]);
    let by_uuid = select(all.clone(), &[GpuSelector::Uuid(UUID0.to_lowercase())]).unwrap();
    assert_eq!(by_uuid.iter().map(|g| g.index).collect::<Vec<_>>(), [0]);
    let both = select(
        all.clone(),
        &[GpuSelector::Uuid(UUID1.into()), GpuSelector::Index(0)],
    )
    .unwrap();
    assert_eq!(both.iter().map(|g| g.index).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(select(all.clone(), &[]).unwrap().len(), 2, "default: all");
    let err = select(all, &[GpuSelector::Index(0), GpuSelector::Index(7)]).unwrap_err();
    assert!(err.contains("no GPU 7") && err.contains(UUID1), "{err}");
    let err = select(Vec::new(), &[GpuSelector::Uuid("GPU-x".into())]).unwrap_err();
    assert!(err.contains("lists none"), "{err}");
}

#[test]
fn missing_and_blank_fields_are_none() {
    // GPU 1's memory temperature is DCGM's blank; here every other field but power
    // is left out, and GPU 0 has only its memory sizes.
    let text = "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\"} 71.5\n\
                DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-b\"} 9223372036854775794\n\
                DCGM_FI_DEV_SM_CLOCK{gpu=\"1\",UUID=\"GPU-b\"} 2147483632\n\
                DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\"} -1\n\
                DCGM_FI_DEV_FB_USED{gpu=\"0\"} 100\n\
                DCGM_FI_DEV_FB_TOTAL{gpu=\"0\"} 1000\n\
                DCGM_FI_DEV_FB_FREE{gpu=\"0\"} 5\n";
    let gpus = parse(text);
    assert_eq!(gpus.len(), 2);
    let r0 = gpus[0].reading();
    assert_eq!(
        (r0.mem_used_mib, r0.mem_total_mib),
        (Some(100.0), Some(1000.0))
    );
    assert_eq!(
        (r0.power_w, r0.energy_j, r0.name.as_deref()),
        (None, None, None)
    );
    assert_eq!(gpus[0].uuid, None);
    let r1 = gpus[1].reading();
    assert_eq!(r1.power_w, Some(71.5));
    assert_eq!((r1.temp_c, r1.sm_mhz, r1.util_pct), (None, None, None));
    assert_eq!((r1.mem_total_mib, r1.thermal), (None, false));
    // An energy counter may pass 2^31 mJ: only the 64-bit blanks are blank for it.
    let e = parse("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} 2147483640\n");
    assert_eq!(e[0].reading().energy_j, Some(2_147_483.64));
    // The newer spelling of the reasons, hardware thermal slowdown.
    let t = parse("DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\"} 64\n");
    assert!(t[0].reading().thermal);
}

#[test]
fn garbage_costs_only_its_lines() {
    let mut text = String::from(
        "\u{0}\u{1}garbage{{{\n\
         DCGM_FI_DEV_POWER_USAGE{gpu=\"x\"} 5\n\
         DCGM_FI_DEV_POWER_USAGE 5\n\
         DCGM_FI_DEV_POWER_USAGE{gpu=\"2\" 5\n\
         DCGM_FI_DEV_POWER_USAGE{gpu=\"3\"} NaN\n\
         DCGM_FI_DEV_POWER_USAGE{gpu=\"4\"}\n\
         DCGM_FI_DEV_POWER_USAGE{gpu=\"5\",UUID=\"unterminated} 5\n\
         DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"6\"} 0.5\n\
         # TYPE\n\
         vllm:num_requests_running{engine=\"0\"} 3\n",
    );
    assert!(parse(&text).is_empty(), "{:?}", parse(&text));
    text.push_str(&fixture());
    // A MIG instance's sample is not its GPU's; pods' repeats do not override.
    text.push_str(
        "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"x\",GPU_I_ID=\"1\",GPU_I_PROFILE=\"1g.10gb\"} 1\n\
         DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",pod=\"other\"} 2\n",
    );
    let gpus = parse(&text);
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0].reading().power_w, Some(512.337));
    assert_eq!(gpus, parse(&fixture()));
}

#[test]
fn the_energy_counter_gives_the_trial_energy() {
    // Two readings 2 s apart: GPU 0's counter moved 1000 J (500 W), GPU 1 is idle.
    let first = parse(&fixture());
    let later_text = fixture()
        .replace("} 31035686671", "} 31036686671")
        .replace("} 18203937413", "} 18204079413");
    let later = parse(&later_text);
    let mut meter = EnergyMeter::default();
    meter.add(0.0, &first.iter().map(DcgmGpu::reading).collect::<Vec<_>>());
    meter.add(2.0, &later.iter().map(DcgmGpu::reading).collect::<Vec<_>>());
    let e = meter.finish("dcgm").unwrap();
    assert_eq!(
        (e.method.as_str(), e.source.as_str()),
        ("dcgm-counter", "dcgm")
    );
    assert_eq!((e.gpus.len(), e.gpus_seen), (1, 2), "GPU 1 idle, left out");
    assert!((e.mean_power_w - 500.0).abs() < 1e-6, "{e:?}");
    assert!((e.joules - 1000.0).abs() < 1e-6, "{e:?}");
}

#[test]
fn a_url_without_a_path_reads_metrics() {
    assert_eq!(
        metrics_url("http://gpu-node:9400"),
        "http://gpu-node:9400/metrics"
    );
    assert_eq!(
        metrics_url("http://gpu-node:9400/"),
        "http://gpu-node:9400/metrics"
    );
    assert_eq!(
        metrics_url("https://h/dcgm/metrics?x=1"),
        "https://h/dcgm/metrics?x=1"
    );
}
