//! The HTML page in a real headless browser (Debian's `chromium`).
//!
//! For the reference report and the additive fixture this writes the page, has
//! Chromium dump the DOM after the page's own script ran (the script counts each
//! chart's data lines, finds text that sticks out of a chart, and records any script
//! error into the DOM), asserts that no error happened, that every chart has its
//! lines and that no chart's text is cut off, and saves a screenshot in
//! `target/render-screenshots/` for people to look at.
//!
//! Without `chromium` on PATH the test fails, unless `GOODPUT_SKIP_BROWSER=1`.
//! `GOODPUT_CHROMIUM=/path/to/chrome` picks another binary. With
//! `GOODPUT_UPDATE_DOCS=1` it also refreshes `docs/report-screenshot.png` and
//! `docs/show-reference.txt`.
//!
//! Run: `cargo test -p goodput --test it present::render_browser -- --nocapture`

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::reports::{load, ADDITIVE, REFERENCE};
use common::require;
use goodput::render;
use goodput::report::Report;

/// Runs the browser on `page` with `args`, returns (stdout, stderr). Fails the test
/// after 90 s.
fn run_browser(bin: &Path, profile: &Path, args: &[String], page: &Path) -> (String, String) {
    let out_dir = tempfile::tempdir().expect("temp dir");
    let (out_path, err_path) = (out_dir.path().join("out"), out_dir.path().join("err"));
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {}: {e}", bin.display()));
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait for browser").is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not finish within 90 s", bin.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default(),
    )
}

/// The value of `attr` on the element with `id` in a DOM dump.
fn attr_of(dom: &str, id: &str, attr: &str) -> Option<String> {
    let start = dom.find(&format!("id=\"{id}\""))?;
    let tag_start = dom[..start].rfind('<')?;
    let tag_end = start + dom[start..].find('>')?;
    let tag = &dom[tag_start..tag_end];
    let key = format!("{attr}=\"");
    let v = tag.find(&key)? + key.len();
    let len = tag[v..].find('"')?;
    Some(tag[v..v + len].to_string())
}

fn element_text<'a>(dom: &'a str, id: &str) -> &'a str {
    let Some(start) = dom.find(&format!("id=\"{id}\"")) else {
        return "";
    };
    let Some(open_end) = dom[start..].find('>') else {
        return "";
    };
    let body = &dom[start + open_end + 1..];
    &body[..body.find('<').unwrap_or(body.len())]
}

fn screenshot_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join("render-screenshots")
}

fn check_page(bin: &Path, name: &str, report: &Report, charts: usize) -> PathBuf {
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join(format!("{name}.html"));
    std::fs::write(&page, render::html(report)).expect("write page");
    let profile = dir.path().join("profile");

    let (dom, stderr) = run_browser(bin, &profile, &["--dump-dom".into()], &page);
    assert!(
        dom.contains("id=\"chart-check\""),
        "{name}: no DOM came back; browser said:\n{stderr}"
    );
    assert_eq!(
        attr_of(&dom, "js-errors", "data-errors"),
        None,
        "{name}: script errors in the page"
    );
    assert!(
        !stderr.contains("Uncaught"),
        "{name}: console errors:\n{stderr}"
    );
    let report_text = element_text(&dom, "chart-check");
    eprintln!("{name}: chart check\n{report_text}");
    assert_eq!(
        attr_of(&dom, "chart-check", "data-charts").as_deref(),
        Some(charts.to_string().as_str()),
        "{name}: charts found\n{report_text}"
    );
    assert_eq!(
        attr_of(&dom, "chart-check", "data-ok").as_deref(),
        Some("true"),
        "{name}: a chart is missing lines\n{report_text}"
    );

    let shots = screenshot_dir();
    std::fs::create_dir_all(&shots).expect("screenshot dir");
    let png = shots.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&png);
    let args = vec![
        format!("--screenshot={}", png.display()),
        "--window-size=1280,2400".to_string(),
    ];
    let (_, stderr) = run_browser(bin, &profile, &args, &page);
    let bytes = std::fs::read(&png)
        .unwrap_or_else(|e| panic!("{name}: no screenshot at {}: {e}\n{stderr}", png.display()));
    assert!(bytes.starts_with(b"\x89PNG"), "{name}: not a PNG");
    assert!(bytes.len() > 20_000, "{name}: screenshot looks empty");
    eprintln!("{name}: screenshot {}", png.display());
    png
}

#[test]
fn html_renders_in_headless_chromium() {
    let Some(bin) = require::chromium() else {
        return;
    };
    let reference = load(REFERENCE);
    // Throughput, goodput, TTFT and TPOT distributions; no GPU samples.
    let shot = check_page(&bin, "reference", &reference, 4);
    // Plus GPU clock and temperature over the trials.
    let additive = load(ADDITIVE);
    check_page(&bin, "additive", &additive, 6);
    // A TPOT bound above every request puts the SLO line at the right end of its
    // axis, and load levels spanning 64x give a log axis: no text may stick out.
    let mut edge = additive;
    edge.slo.bounds.set(report::SloMetric::Tpot, Some(200.0));
    for (i, p) in edge.load[0].points.iter_mut().enumerate() {
        p.x = 0.5 * 8f64.powi(i as i32);
    }
    check_page(&bin, "edge", &edge, 6);

    if std::env::var("GOODPUT_UPDATE_DOCS").as_deref() == Ok("1") {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        std::fs::create_dir_all(&docs).expect("docs dir");
        std::fs::copy(&shot, docs.join("report-screenshot.png")).expect("copy screenshot");
        let table = render::show(&reference, render::Format::Table, false);
        std::fs::write(docs.join("show-reference.txt"), table).expect("write show text");
    }
}
