//! A second run that finds the first's prompts in the engine's prefix cache: one
//! simulator (its prefix cache on, as vLLM's is by default) serves four runs of one
//! profile. The second is cache-warm: `show` warns and `compare` names the cache as
//! the likely cause of its better figures. Salted runs (`--prompt-salt`) are not:
//! the second salted run finds nothing in the cache, and a resumed run keeps its
//! salt.

use crate::common::cli::{goodput, goodput_run, succeeded, text, Scratch};

/// The simulator on 127.0.0.1 port 0, on a runtime of its own, stopped when dropped.
struct Sim {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sim {
    fn start() -> Sim {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime for the simulator");
            rt.block_on(async move {
                let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
                let listener = goodput_sim::listen(addr).expect("a loopback port");
                let url = format!("http://{}", listener.local_addr().expect("its address"));
                url_tx.send(url).expect("the test waits for the URL");
                // The default engine (prefix caching on), ten times faster than real time.
                let config = goodput_sim::SimConfig {
                    time_scale: 10.0,
                    ..goodput_sim::SimConfig::default()
                };
                let shutdown = async move {
                    let _ = stopped.await;
                };
                goodput_sim::serve(listener, config, shutdown)
                    .await
                    .expect("the simulator serves");
            });
        });
        let url = url_rx.recv().expect("the simulator's URL");
        Sim {
            url,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn profile(url: &str) -> String {
    format!(
        "name = \"cache-warm\"\n\
         [slo]\nttft_ms = 2000\ntpot_ms = 200\n\
         [load]\nmode = \"concurrency\"\npoints = [2]\nrequests_per_trial = 12\ntrials = 1\n\
         [workload]\ninput_tokens = 256\noutput_tokens = 4\n\
         [engines.sim]\nkind = \"url\"\nurl = \"{url}\"\n"
    )
}

/// The prefix-cache hit share of the report's one point, as the engine counted it.
fn hit_share(dir: &Scratch, name: &str) -> f64 {
    let r = goodput::report::read_report(&dir.path(name)).expect("the run wrote its report");
    let p = &r.load["sim"].points[0];
    p.server
        .as_ref()
        .and_then(|s| s.prefix_cache_hit_share)
        .expect("the simulator's /metrics count prefix-cache hits")
}

fn run(dir: &Scratch, out: &str, extra: &[&str]) {
    let out = goodput_run(&dir.path("p.toml"), &dir.path(out))
        .args(["--quiet", "--no-html"])
        .args(extra)
        .output()
        .expect("goodput runs");
    succeeded(&out, "goodput run");
}

fn show(dir: &Scratch, name: &str) -> String {
    let out = goodput()
        .args(["show", &dir.arg(name)])
        .output()
        .expect("show runs");
    succeeded(&out, "goodput show")
}

#[test]
fn a_cache_warm_second_run_is_warned_and_explained_and_a_salted_one_is_not_warm() {
    let sim = Sim::start();
    let dir = Scratch::new();
    dir.write("p.toml", &profile(&sim.url));

    run(&dir, "a.json", &[]);
    run(&dir, "b.json", &[]);
    let (cold, warm) = (hit_share(&dir, "a.json"), hit_share(&dir, "b.json"));
    assert!(cold < 0.05, "the first run starts cold: {cold}");
    assert!(
        warm > 0.8,
        "the same prompts again are served from the cache: {warm}"
    );

    // `show` warns about the second run only.
    let title = "Prompts served from the prefix cache";
    assert!(!show(&dir, "a.json").contains(title));
    let shown = show(&dir, "b.json");
    assert!(shown.contains(title), "{shown}");
    assert!(shown.contains("--prompt-salt"), "{shown}");

    // `compare` names the cache as the likely cause of the difference.
    let out = goodput()
        .args(["compare", &dir.arg("a.json"), &dir.arg("b.json")])
        .output()
        .expect("compare runs");
    let compared = text(&out.stdout);
    assert!(out.status.success(), "{compared}{}", text(&out.stderr));
    assert!(
        compared.contains("likely cause: sim (")
            && compared.contains("found its prompts in the engine's prefix cache"),
        "{compared}"
    );

    // Salted runs: each draws its salt, so the second finds nothing cached.
    run(&dir, "c.json", &["--prompt-salt"]);
    run(&dir, "d.json", &["--prompt-salt"]);
    let salt = |name: &str| {
        goodput::report::read_report(&dir.path(name))
            .ok()
            .and_then(|r| r.run?.prompt_salt)
            .expect("a salted run records its salt")
    };
    assert_ne!(salt("c.json"), salt("d.json"));
    let again = hit_share(&dir, "d.json");
    assert!(
        again < 0.05,
        "a salted second run is not cache-warm: {again}"
    );
    assert!(!show(&dir, "d.json").contains(title));

    // A resumed run keeps its salt: c.json made incomplete, then resumed with one
    // more load level; another salt given for it is refused (exit 2).
    let first = salt("c.json");
    let path = dir.path("c.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("c.json")).expect("JSON");
    v["run"]["status"] = serde_json::json!("partial");
    std::fs::write(&path, v.to_string()).expect("c.json written");
    let other = goodput_run(&dir.path("p.toml"), &path)
        .args(["--quiet", "--no-html", "--prompt-salt=other"])
        .output()
        .expect("goodput runs");
    assert_eq!(other.status.code(), Some(2), "{}", text(&other.stderr));
    assert!(
        text(&other.stderr).contains(&format!("--prompt-salt={first}")),
        "{}",
        text(&other.stderr)
    );
    run(&dir, "c.json", &["--prompt-salt", "--concurrency", "2,4"]);
    assert_eq!(salt("c.json"), first, "the resumed run kept its salt");
    let resumed = goodput::report::read_report(&path).expect("c.json");
    assert_eq!(resumed.load["sim"].points.len(), 2);
    drop(sim);
}
