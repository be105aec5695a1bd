//! Unit tests of the engine handle: the model it chooses, log file names.

use super::start::log_file_name;
use super::*;

/// A handle on a URL engine, as [`EngineHandle::new`] leaves it.
fn url_handle() -> EngineHandle {
    let ctx = EngineContext {
        log_dir: PathBuf::from("/nonexistent"),
        goodput_exe: PathBuf::from("goodput"),
        client: reqwest::Client::new(),
    };
    EngineHandle::new(
        "x",
        &EngineSpec::default(),
        &ctx,
        "http://h".into(),
        None,
        None,
    )
}

#[test]
fn the_context_size_is_the_chosen_models_as_listed() {
    let served = |id: &str, len: Option<u32>| ServedModel {
        id: id.into(),
        max_model_len: len,
    };
    let models = [
        served("a", Some(4096)),
        served("b", Some(512)),
        served("c", None),
    ];
    let chosen = |model: Option<&str>| {
        let mut h = url_handle();
        let spec = EngineSpec {
            model: model.map(str::to_string),
            ..Default::default()
        };
        h.choose_model(&spec, &models);
        (h.model, h.max_model_len, h.notices.len())
    };
    assert_eq!(chosen(Some("b")), ("b".into(), Some(512), 0));
    assert_eq!(chosen(Some("c")), ("c".into(), None, 0));
    assert_eq!(chosen(None), ("a".into(), Some(4096), 0));
    // A model the list does not have: the first listed model's size, and a notice.
    assert_eq!(chosen(Some("z")), ("z".into(), Some(4096), 1));
}

#[test]
fn names_and_redacted_debug() {
    assert_eq!(log_file_name("vllm/a b"), "vllm_a_b.log");
    assert_eq!(kind_name(EngineKind::LlamaCpp), "llama-cpp");
    let h = EngineHandle {
        name: "x".into(),
        base_url: "http://h".into(),
        model: "m".into(),
        max_model_len: None,
        api: Api::Completions,
        api_key: Some("sk-secret".into()),
        api_key_var: Some("K".into()),
        kv_pool_tokens: None,
        kv_pool_source: None,
        env: EngineEnv::default(),
        notices: Vec::new(),
        log_path: None,
        time_scale: None,
        log: None,
        kind: EngineKind::Url,
        process: None,
        metrics_gave_up: Default::default(),
        stop_grace: Duration::from_secs(1),
        client: reqwest::Client::new(),
    };
    let shown = format!("{h:?}");
    assert!(
        !shown.contains("sk-secret") && shown.contains("***"),
        "{shown}"
    );
}
