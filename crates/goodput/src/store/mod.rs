//! The results store: every finished `run`, `search`, `merge` and `tune` recorded
//! in one embedded SQLite database beside the report files (never in the hot
//! path: a command records after its report is written), and read back by
//! `goodput history` and `goodput gate --baseline`.
//!
//! The database is the user's: `GOODPUT_STORE` or `--store PATH`, else
//! `store.sqlite` in goodput's folder of the user's data directory
//! (`~/.local/share/goodput/` on Linux); `--no-store` skips it. It runs in WAL
//! mode with a busy timeout, so concurrent runs each land; a store that cannot
//! be opened or written never fails the run that wanted it (a notice says so).
//!
//! Layout: `schema.rs` the ordered migrations (the `user_version` pragma),
//! `record.rs` what a report or a tune answer leaves in it, `query.rs` the runs
//! listed, a metric's trend, a gate's baseline found and its file checked.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

pub mod query;
pub mod record;
pub mod schema;
#[cfg(test)]
mod tests;
pub mod trend;

pub use query::{Baseline, Filter, Metric, RunRow, TrendRun, TrendValue};
pub use record::{Entry, Identity, Kind};

/// The store's file in goodput's folder of the data directory.
pub const FILE_NAME: &str = "store.sqlite";

/// How long a write waits for another goodput's write to finish.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// What went wrong with the store, naming it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No path was given and the system names no data directory.
    #[error("no results store: the system names no data directory (no $HOME?); give one with --store PATH or GOODPUT_STORE")]
    NoDataDir,
    /// The database could not be opened, created or migrated.
    #[error("results store {path}: cannot open it: {why}")]
    Open { path: PathBuf, why: String },
    /// A read or write failed.
    #[error("results store {path}: {source}")]
    Sql {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// What a query needs is not in the store.
    #[error("results store {path}: {what}")]
    Missing { path: PathBuf, what: String },
    /// A recorded report is not the file it was.
    #[error("{0}")]
    Report(String),
}

/// Where a command records, as its flags said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `--no-store`.
    Off,
    /// This database file.
    At(PathBuf),
    /// No path given and no data directory to put the default in.
    Nowhere,
}

impl Location {
    /// `--no-store`, else `--store PATH` / `GOODPUT_STORE`, else the default.
    pub fn resolve(explicit: Option<PathBuf>, off: bool) -> Location {
        match (off, explicit) {
            (true, _) => Location::Off,
            (false, Some(p)) => Location::At(p),
            (false, None) => default_path().map_or(Location::Nowhere, Location::At),
        }
    }
}

/// `store.sqlite` in goodput's folder of the user's data directory
/// (`$XDG_DATA_HOME/goodput`, `~/.local/share/goodput` on Linux).
pub fn default_path() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("goodput").join(FILE_NAME))
}

/// An open store, migrated to this goodput's schema.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens the store at `path`, creating it (and its folder) when missing, and
    /// runs the migrations it has not had.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_at_version(path, schema::latest())
    }

    /// [`Store::open`] migrated only up to `version`: an older store, for tests
    /// of the migrations.
    pub fn open_at_version(path: &Path, version: u32) -> Result<Store, StoreError> {
        let fail = |why: String| StoreError::Open {
            path: path.to_path_buf(),
            why,
        };
        if path.is_dir() {
            return Err(fail("it is a directory; give a file path".into()));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        }
        let mut conn = Connection::open(path).map_err(|e| fail(e.to_string()))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| fail(e.to_string()))?;
        // WAL: readers never block the writer, and writers queue on the busy
        // timeout instead of failing at once.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| fail(e.to_string()))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(fail(format!("journal mode {mode}, not WAL")));
        }
        conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .map_err(|e| fail(e.to_string()))?;
        schema::migrate_to(&mut conn, version).map_err(|e| fail(e.to_string()))?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version the database is at.
    pub fn version(&self) -> Result<u32, StoreError> {
        schema::version(&self.conn).map_err(|e| self.sql(e))
    }

    fn sql(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sql {
            path: self.path.clone(),
            source,
        }
    }
}

/// Opens the store a command was pointed at; `Ok(None)` for `--no-store`.
pub fn open(location: &Location) -> Result<Option<Store>, StoreError> {
    match location {
        Location::Off => Ok(None),
        Location::Nowhere => Err(StoreError::NoDataDir),
        Location::At(p) => Store::open(p).map(Some),
    }
}
