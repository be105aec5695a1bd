//! What a finished command leaves in the store: the run's identity (command,
//! profile, engines with their command lines, environment, the profile folder's
//! git commit, tags), every point's key figures, each search's capacity, and the
//! report file's path and SHA-256, read back from the file as written.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use report::{Report, Tune};
use rusqlite::params;
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{Location, Store, StoreError};

/// Which command wrote the recorded file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `goodput run` (a sweep of load levels, or a prediction).
    Run,
    /// `goodput search`.
    Search,
    /// `goodput merge` (shards joined into one report).
    Merge,
    /// `goodput tune` (its answer file, not a report).
    Tune,
    /// A word this version does not know (a store a newer goodput wrote).
    Unknown(String),
}

impl Kind {
    /// The word as stored.
    pub fn as_str(&self) -> &str {
        match self {
            Kind::Run => "run",
            Kind::Search => "search",
            Kind::Merge => "merge",
            Kind::Tune => "tune",
            Kind::Unknown(w) => w,
        }
    }

    /// The value of a stored word.
    pub fn from_word(w: &str) -> Kind {
        match w {
            "run" => Kind::Run,
            "search" => Kind::Search,
            "merge" => Kind::Merge,
            "tune" => Kind::Tune,
            other => Kind::Unknown(other.to_string()),
        }
    }

    /// Its file is a report (`gate` can read it), not a tune answer.
    pub fn is_report(&self) -> bool {
        matches!(self, Kind::Run | Kind::Search | Kind::Merge)
    }
}

/// What the command knows that the file does not say.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The command.
    pub kind: Kind,
    /// `--tag` values.
    pub tags: Vec<String>,
    /// The profile file given (none: the built-in profile, `--url`).
    pub profile_path: Option<PathBuf>,
}

/// One engine of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineEntry {
    pub name: String,
    pub kind: Option<String>,
    pub model: Option<String>,
    pub version: Option<String>,
    /// The command line that started it (secrets redacted, as in the report).
    pub command: Option<Vec<String>>,
}

/// One load level of one engine: the key figures of its summary.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PointEntry {
    pub engine: String,
    pub x: f64,
    pub trials: u32,
    /// Good requests/s: median, min and max over trials.
    pub goodput: [Option<f64>; 3],
    /// Pooled attainment and its interval (the SLO judgement's).
    pub attainment: [Option<f64>; 3],
    pub judgement: Option<String>,
    pub median_ttft_ms: Option<f64>,
    pub p99_ttft_ms: Option<f64>,
    pub median_tpot_ms: Option<f64>,
    pub p99_tpot_ms: Option<f64>,
    pub output_throughput: Option<f64>,
    pub request_throughput: Option<f64>,
}

/// One engine's capacity (a search's, or a tune candidate's measured one).
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityEntry {
    pub engine: String,
    pub mode: String,
    pub max_load: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub limited_by: String,
}

/// Everything one recorded run stores.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub kind: Kind,
    pub tags: Vec<String>,
    pub profile: String,
    pub profile_path: Option<String>,
    pub profile_commit: Option<String>,
    pub started_unix_s: Option<f64>,
    pub status: Option<String>,
    pub load_mode: Option<String>,
    pub predicted: bool,
    /// goodput's version, the host, its GPUs (JSON).
    pub environment: Value,
    pub engines: Vec<EngineEntry>,
    pub points: Vec<PointEntry>,
    pub capacities: Vec<CapacityEntry>,
    /// The file, absolute.
    pub report_path: PathBuf,
    /// SHA-256 of its bytes, lower-case hex.
    pub report_sha256: String,
}

/// A serialisable report word as its string.
fn word<T: Serialize>(v: &T) -> Option<String> {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
}

/// SHA-256 of bytes, lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A file's text (bounded, regular files only) and its SHA-256.
pub fn read_hashed(path: &Path) -> Result<(String, String), String> {
    let text = crate::files::read_text(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let sha = sha256_hex(text.as_bytes());
    Ok((text, sha))
}

impl Entry {
    /// The entry for a report file as written, or a tune answer.
    pub fn from_file(path: &Path, identity: &Identity) -> Result<Entry, String> {
        let (text, sha) = read_hashed(path)?;
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut entry = if identity.kind == Kind::Tune {
            let tune: Tune = serde_json::from_str(&text)
                .map_err(|e| format!("{}: not a tune answer: {e}", path.display()))?;
            Entry::from_tune(&tune, identity)
        } else {
            let r = report::io::parse_report(&text)
                .map_err(|e| format!("{}: not a report: {e}", path.display()))?;
            Entry::from_report(&r, identity)
        };
        entry.report_path = absolute;
        entry.report_sha256 = sha;
        entry.profile_commit = identity
            .profile_path
            .as_deref()
            .and_then(|p| git_commit(p.parent().unwrap_or(Path::new("."))));
        Ok(entry)
    }

    fn blank(identity: &Identity, profile: &str) -> Entry {
        Entry {
            kind: identity.kind.clone(),
            tags: identity.tags.clone(),
            profile: profile.to_string(),
            profile_path: identity.profile_path.as_deref().map(|p| {
                std::path::absolute(p)
                    .unwrap_or_else(|_| p.to_path_buf())
                    .display()
                    .to_string()
            }),
            profile_commit: None,
            started_unix_s: None,
            status: None,
            load_mode: None,
            predicted: false,
            environment: Value::Null,
            engines: Vec::new(),
            points: Vec::new(),
            capacities: Vec::new(),
            report_path: PathBuf::new(),
            report_sha256: String::new(),
        }
    }

    /// The entry for a report (path and hash left to [`Entry::from_file`]).
    pub fn from_report(r: &Report, identity: &Identity) -> Entry {
        let mut e = Entry::blank(identity, &r.profile);
        if let Some(run) = &r.run {
            e.started_unix_s = run.started_unix_s;
            e.status = word(&run.status);
            e.load_mode = Some(run.load_mode.as_str().to_string());
            e.predicted = run.predicted.is_some();
        }
        let env = r.environment.as_ref();
        e.environment = environment(r);
        for name in r.load.keys() {
            let ee = env.and_then(|v| v.engines.get(name));
            e.engines.push(EngineEntry {
                name: name.clone(),
                kind: ee.map(|x| x.kind.clone()),
                model: ee.and_then(|x| x.model.clone()),
                version: ee.and_then(|x| x.version.clone()),
                command: ee.and_then(|x| x.command.clone()),
            });
        }
        for (engine, result) in &r.load {
            for p in &result.points {
                let check = p.slo_check.as_ref();
                e.points.push(PointEntry {
                    engine: engine.clone(),
                    x: p.x,
                    trials: p.goodput_rps.n.max(p.trials.len() as u32),
                    goodput: [p.goodput_rps.median, p.goodput_rps.min, p.goodput_rps.max],
                    attainment: [
                        check.and_then(|c| c.attainment),
                        check.and_then(|c| c.ci_low),
                        check.and_then(|c| c.ci_high),
                    ],
                    judgement: report::slo::point_judgement(r, p).map(|j| j.as_str().into()),
                    median_ttft_ms: p.median_ttft_ms.median,
                    p99_ttft_ms: p.p99_ttft_ms.median,
                    median_tpot_ms: p.median_tpot_ms.median,
                    p99_tpot_ms: p.p99_tpot_ms.median,
                    output_throughput: p.output_throughput.median,
                    request_throughput: p.request_throughput.median,
                });
            }
        }
        for (engine, c) in &r.capacity {
            e.capacities.push(CapacityEntry {
                engine: engine.clone(),
                mode: c.mode.as_str().to_string(),
                max_load: c.max_load,
                low: c.interval.map(|i| i.low),
                high: c.interval.map(|i| i.high),
                limited_by: c.limited_by.as_str().to_string(),
            });
        }
        e
    }

    /// The entry for a tune answer: its engine, and each measured candidate's
    /// capacity under the engine's name with the candidate's flags.
    pub fn from_tune(t: &Tune, identity: &Identity) -> Entry {
        let mut e = Entry::blank(identity, &t.profile);
        e.load_mode = Some(t.mode.as_str().to_string());
        e.status = Some(
            if t.best.is_some() {
                "complete"
            } else {
                "partial"
            }
            .into(),
        );
        e.environment = json!({ "goodput_version": env!("CARGO_PKG_VERSION") });
        e.engines.push(EngineEntry {
            name: t.engine.clone(),
            kind: None,
            model: None,
            version: None,
            command: t.best.as_ref().map(|b| b.command.clone()),
        });
        for c in &t.candidates {
            let Some(m) = &c.measured else { continue };
            let name = if c.args.is_empty() {
                t.engine.clone()
            } else {
                format!("{} {}", t.engine, c.args.join(" "))
            };
            e.capacities.push(CapacityEntry {
                engine: name,
                mode: t.mode.as_str().to_string(),
                max_load: m.max_load,
                low: m.interval.map(|i| i.low),
                high: m.interval.map(|i| i.high),
                limited_by: m.limited_by.clone(),
            });
        }
        e
    }
}

/// The environment summary stored with a run: goodput's version and commit, the
/// host, its GPUs' names.
fn environment(r: &Report) -> Value {
    let Some(env) = &r.environment else {
        return Value::Null;
    };
    let host = env.host.as_ref();
    json!({
        "goodput_version": env.goodput_version,
        "goodput_commit": env.git_commit,
        "hostname": host.and_then(|h| h.hostname.clone()),
        "cpu_model": host.and_then(|h| h.cpu_model.clone()),
        "cpus": host.and_then(|h| h.cpus),
        "memory_mib": host.and_then(|h| h.memory_mib),
        "os": host.and_then(|h| h.os.clone()),
        "gpus": env.gpus.iter().map(|g| g.name.clone()).collect::<Vec<_>>(),
    })
}

/// How long `git rev-parse` may take before the commit is left out.
const GIT_TIMEOUT: Duration = Duration::from_secs(5);

/// The commit checked out in the folder holding the profile, when it is in a git
/// work tree and git answers in time; anything else leaves it out.
pub fn git_commit(dir: &Path) -> Option<String> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut child = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "HEAD"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) if start.elapsed() > GIT_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut out).ok()?;
    let commit = out.trim();
    (commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit())).then(|| commit.to_string())
}

impl Store {
    /// Records one run in one transaction; its id.
    pub fn record(&mut self, e: &Entry) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::Sql {
            path: path.clone(),
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        tx.execute(
            "INSERT INTO runs (recorded_unix_s, started_unix_s, command, profile, profile_path,
                profile_commit, status, load_mode, predicted, environment, report_path,
                report_sha256)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                now_unix_s(),
                e.started_unix_s,
                e.kind.as_str(),
                e.profile,
                e.profile_path,
                e.profile_commit,
                e.status,
                e.load_mode,
                e.predicted,
                e.environment.to_string(),
                e.report_path.display().to_string(),
                e.report_sha256,
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        for (i, g) in e.engines.iter().enumerate() {
            let command = g
                .command
                .as_ref()
                .map(|c| serde_json::to_string(c).unwrap_or_default());
            tx.execute(
                "INSERT OR IGNORE INTO run_engines (run_id, position, name, kind, model, version, command)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![id, i as i64, g.name, g.kind, g.model, g.version, command],
            )
            .map_err(sql)?;
        }
        for t in &e.tags {
            tx.execute(
                "INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?1, ?2)",
                params![id, t],
            )
            .map_err(sql)?;
        }
        for p in &e.points {
            tx.execute(
                "INSERT OR REPLACE INTO points (run_id, engine, x, trials, goodput_rps,
                    goodput_rps_min, goodput_rps_max, attainment, attainment_low,
                    attainment_high, judgement, median_ttft_ms, p99_ttft_ms, median_tpot_ms,
                    p99_tpot_ms, output_throughput, request_throughput)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                params![
                    id,
                    p.engine,
                    p.x,
                    p.trials,
                    p.goodput[0],
                    p.goodput[1],
                    p.goodput[2],
                    p.attainment[0],
                    p.attainment[1],
                    p.attainment[2],
                    p.judgement,
                    p.median_ttft_ms,
                    p.p99_ttft_ms,
                    p.median_tpot_ms,
                    p.p99_tpot_ms,
                    p.output_throughput,
                    p.request_throughput,
                ],
            )
            .map_err(sql)?;
        }
        for c in &e.capacities {
            tx.execute(
                "INSERT OR REPLACE INTO capacities (run_id, engine, mode, max_load, low, high, limited_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![id, c.engine, c.mode, c.max_load, c.low, c.high, c.limited_by],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        Ok(id)
    }
}

/// Seconds since the Unix epoch, now.
pub fn now_unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The one call a command makes after writing its file: the file recorded at
/// `location`; `Ok(None)` with `--no-store`. The caller turns an error into a
/// notice: the store never fails the run.
pub fn record_file(
    location: &Location,
    file: &Path,
    identity: &Identity,
) -> Result<Option<i64>, StoreError> {
    let Some(mut store) = super::open(location)? else {
        return Ok(None);
    };
    let entry = Entry::from_file(file, identity).map_err(StoreError::Report)?;
    store.record(&entry).map(Some)
}
