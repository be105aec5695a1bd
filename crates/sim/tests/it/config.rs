//! Loading configuration files.

use goodput_sim::{ConfigError, SimConfig};

#[test]
fn invalid_config_file_names_the_field_and_range() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim.toml");
    std::fs::write(&path, "kv_pool_tokens = 2928\nblock_size = 0\n").unwrap();
    let err = SimConfig::load(&path).unwrap_err();
    assert!(matches!(err, ConfigError::OutOfRange { .. }));
    assert_eq!(
        err.to_string(),
        "block_size = 0 is out of range: must be 1..=1024"
    );

    std::fs::write(&path, "[thermal]\nboost_mhz = 2000.0\nthrottled_mhz = 400.0\nheat_after_s = -1.0\nrecover_after_s = 1.0\n").unwrap();
    let err = SimConfig::load(&path).unwrap_err().to_string();
    assert!(
        err.starts_with("thermal.heat_after_s = -1 is out of range"),
        "{err}"
    );

    std::fs::write(&path, "time_scal = 2.0\n").unwrap();
    let err = SimConfig::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("time_scal") && err.contains("sim.toml"),
        "{err}"
    );

    let err = SimConfig::load(dir.path().join("missing.toml")).unwrap_err();
    assert!(matches!(err, ConfigError::Io { .. }));
}

#[test]
fn a_valid_file_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim.toml");
    std::fs::write(
        &path,
        "model = \"m\"\ntime_scale = 10.0\n[schedule]\nttft_ms = 50.0\nitl_ms = 20.0\n\
         [[faults]]\nspec = \"drop_after=3\"\nevery = 10\n",
    )
    .unwrap();
    let c = SimConfig::load(&path).unwrap();
    assert_eq!(c.model, "m");
    assert_eq!(c.schedule.unwrap().itl_ms, 20.0);
    assert_eq!(c.faults[0].every, 10);
}
