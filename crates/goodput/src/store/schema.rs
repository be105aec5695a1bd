//! The store's schema: an ordered list of migrations, the database's
//! `user_version` pragma counting how many have run. A migration is never edited
//! once released; a change is a new one at the end. A store written by a newer
//! goodput (a `user_version` beyond the list) is refused, not downgraded.

use rusqlite::{Connection, Transaction};

/// The migrations, in order: `MIGRATIONS[i]` takes version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs, their engines and tags, every point's key figures, capacities.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        recorded_unix_s REAL NOT NULL,
        started_unix_s REAL,
        command TEXT NOT NULL,
        profile TEXT NOT NULL,
        profile_path TEXT,
        profile_commit TEXT,
        status TEXT,
        load_mode TEXT,
        predicted INTEGER NOT NULL DEFAULT 0,
        environment TEXT NOT NULL,
        report_path TEXT NOT NULL,
        report_sha256 TEXT NOT NULL
    );
    CREATE TABLE run_engines (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        kind TEXT,
        model TEXT,
        version TEXT,
        command TEXT,
        PRIMARY KEY (run_id, name)
    );
    CREATE TABLE run_tags (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        PRIMARY KEY (run_id, tag)
    );
    CREATE TABLE points (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        engine TEXT NOT NULL,
        x REAL NOT NULL,
        trials INTEGER NOT NULL,
        goodput_rps REAL, goodput_rps_min REAL, goodput_rps_max REAL,
        attainment REAL, attainment_low REAL, attainment_high REAL,
        judgement TEXT,
        median_ttft_ms REAL, p99_ttft_ms REAL,
        median_tpot_ms REAL, p99_tpot_ms REAL,
        output_throughput REAL, request_throughput REAL,
        PRIMARY KEY (run_id, engine, x)
    );
    CREATE TABLE capacities (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        engine TEXT NOT NULL,
        mode TEXT NOT NULL,
        max_load REAL,
        low REAL,
        high REAL,
        limited_by TEXT NOT NULL,
        PRIMARY KEY (run_id, engine)
    );",
    // 2: what `history` and `gate --baseline` look runs up by.
    "CREATE INDEX runs_by_profile ON runs (profile, recorded_unix_s);
    CREATE INDEX run_tags_by_tag ON run_tags (tag);
    CREATE INDEX run_engines_by_name ON run_engines (name);",
];

/// The schema version this goodput writes.
pub fn latest() -> u32 {
    MIGRATIONS.len() as u32
}

/// What stops a migration.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// The store was written by a newer goodput.
    #[error(
        "schema version {found}, newer than this goodput's {known}: written by a newer goodput"
    )]
    Newer { found: u32, known: u32 },
    /// SQLite refused.
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}

/// The store's schema version (`user_version`; 0 for a new database).
pub fn version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Runs the migrations the database has not had, up to `upto`, each in one
/// immediate transaction with its version, so that two goodputs opening a new
/// store at once migrate it once (the second waits, then finds it done).
pub fn migrate_to(conn: &mut Connection, upto: u32) -> Result<u32, MigrateError> {
    let known = latest();
    loop {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let at = version(&tx)?;
        if at > known {
            return Err(MigrateError::Newer { found: at, known });
        }
        if at >= upto.min(known) {
            tx.commit()?;
            return Ok(at);
        }
        step(&tx, at)?;
        tx.commit()?;
    }
}

fn step(tx: &Transaction<'_>, at: u32) -> rusqlite::Result<()> {
    tx.execute_batch(MIGRATIONS[at as usize])?;
    // `user_version` takes no parameter: the number is ours, not input.
    tx.execute_batch(&format!("PRAGMA user_version = {}", at + 1))
}
