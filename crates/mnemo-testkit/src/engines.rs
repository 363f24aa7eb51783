//! Stores for the suites above the store (the facade's, the server's, the CLI's), on the
//! backend the run names, and the test run's PostgreSQL, started in one place (feature
//! `engines`).
//!
//! `MNEMO_TEST_STORE` picks the backend of [`fresh_store`]: `sqlite` (the default: a file in a
//! temp dir) or `postgres` (a scratch schema in the database at [`pg_url`]). `scripts/test.sh`
//! runs the facade and server suites once on each. Any other value fails the test that asks,
//! naming the two; nothing falls back silently.
//!
//! [`pg_url`] is `MNEMO_TEST_PG_URL` when set (`scripts/test.sh` starts one server for the whole
//! run); otherwise `scripts/pg.sh` starts one for this test process, stopped by a watcher when the
//! process ends. If PostgreSQL cannot start, every test that needs it fails with the reason.

use mnemo_core::{Store, WriteStep};
use mnemo_store_postgres::{PgStore, ScratchSchema};
use mnemo_store_sqlite::SqliteStore;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

/// The backends a suite above the store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The backend this run's [`fresh_store`] opens (`MNEMO_TEST_STORE`).
pub fn backend() -> Backend {
    match std::env::var("MNEMO_TEST_STORE").as_deref() {
        Err(_) | Ok("") | Ok("sqlite") => Backend::Sqlite,
        Ok("postgres") => Backend::Postgres,
        Ok(other) => panic!("MNEMO_TEST_STORE={other:?}: use sqlite or postgres"),
    }
}

/// A fresh, empty store and what keeps it alive: its temp dir (also there for the test's own
/// files on either backend) and, on PostgreSQL, its schema, dropped last.
pub struct TestStore {
    store: Arc<dyn Store>,
    typed: Typed,
    dir: tempfile::TempDir,
    schema: Option<ScratchSchema>,
}

/// The same store, typed, for what reaches under the trait (fault injection, row counts).
enum Typed {
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PgStore>),
}

impl std::fmt::Debug for TestStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestStore")
            .field("dir", &self.dir.path())
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl TestStore {
    /// The store (another handle to the same one on every call).
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// A temp dir that lives as long as the store.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The PostgreSQL schema the store works in; `None` on SQLite.
    pub fn schema(&self) -> Option<&ScratchSchema> {
        self.schema.as_ref()
    }

    /// Makes every later write fail at `step` until cleared with `None` (the stores' fault hook;
    /// the step orders are [`WriteStep`]'s).
    pub fn fail_at(&self, step: Option<WriteStep>) {
        match &self.typed {
            Typed::Sqlite(s) => mnemo_store_sqlite::testing::fail_at(s, step),
            Typed::Postgres(s) => mnemo_store_postgres::testing::fail_at(s, step),
        }
    }

    /// Rows in every table of the store but PostgreSQL's `scope_gates`, by table name, sorted:
    /// equal before and after a write that failed means it wrote nothing.
    pub fn row_counts(&self) -> Vec<(String, i64)> {
        let mut counts = match &self.typed {
            Typed::Sqlite(s) => mnemo_store_sqlite::testing::row_counts(s),
            Typed::Postgres(_) => {
                let schema = self
                    .schema
                    .as_ref()
                    .expect("a PostgreSQL store has its schema");
                pg_row_counts(schema.name().to_string())
            }
        };
        // PostgreSQL's gate rows (one per hashed scope name, created before a write's
        // transaction so it can lock them, holding no content) are not the write's.
        counts.retain(|(table, _)| table != "scope_gates");
        counts.sort();
        counts
    }

    /// Hands out the parts, for callers that keep them apart (the schema must outlive every
    /// connection to it: drop it last).
    pub fn into_parts(self) -> (Arc<dyn Store>, tempfile::TempDir, Option<ScratchSchema>) {
        (self.store, self.dir, self.schema)
    }
}

/// A fresh store on this run's [`backend`]. Callable from async tests: PostgreSQL connects on a
/// thread of its own.
pub fn fresh_store() -> TestStore {
    match backend() {
        Backend::Sqlite => fresh_sqlite(),
        Backend::Postgres => fresh_postgres(""),
    }
}

/// A fresh SQLite store in a temp dir, whatever the run's backend.
pub fn fresh_sqlite() -> TestStore {
    let dir = tempfile::tempdir().expect("temp dir");
    let store =
        Arc::new(SqliteStore::open(dir.path().join("mnemo.db")).expect("open the SQLite store"));
    TestStore {
        store: store.clone(),
        typed: Typed::Sqlite(store),
        dir,
        schema: None,
    }
}

/// A fresh PostgreSQL store in a scratch schema of [`pg_url`]'s database, whatever the run's
/// backend; `extra_options` is appended to the store URL (URL-encoded session options, e.g.
/// `%20-c%20lock_timeout%3D1s`).
pub fn fresh_postgres(extra_options: &str) -> TestStore {
    let schema = ScratchSchema::create(pg_url(), "mnemo_t").expect("create a scratch schema");
    let url = format!("{}{extra_options}", schema.url());
    // The synchronous driver runs a runtime of its own: never on an async worker thread.
    let store = std::thread::spawn(move || PgStore::connect(&url, 4))
        .join()
        .expect("connecting does not panic")
        .expect("connect to the scratch schema");
    let store = Arc::new(store);
    TestStore {
        store: store.clone(),
        typed: Typed::Postgres(store),
        dir: tempfile::tempdir().expect("temp dir"),
        schema: Some(schema),
    }
}

/// Rows in every table of `schema`, counted on an admin connection of a thread of its own.
fn pg_row_counts(schema: String) -> Vec<(String, i64)> {
    let url = pg_url();
    std::thread::spawn(move || {
        let mut c = postgres::Client::connect(url, postgres::NoTls).expect("admin connection");
        let tables: Vec<String> = c
            .query(
                "SELECT table_name::text FROM information_schema.tables \
                 WHERE table_schema = $1 AND table_type = 'BASE TABLE'",
                &[&schema],
            )
            .expect("list tables")
            .iter()
            .map(|r| r.get(0))
            .collect();
        tables
            .into_iter()
            .map(|t| {
                let n: i64 = c
                    .query_one(&format!("SELECT count(*) FROM \"{schema}\".\"{t}\""), &[])
                    .expect("count rows")
                    .get(0);
                (t, n)
            })
            .collect()
    })
    .join()
    .expect("counting rows does not panic")
}

/// The admin URL of the test run's PostgreSQL (see the module docs). Panics with the reason
/// when there is none.
pub fn pg_url() -> &'static str {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    match URL.get_or_init(start_server) {
        Ok(u) => u,
        Err(why) => panic!("PostgreSQL for the tests could not start: {why}"),
    }
}

fn start_server() -> Result<String, String> {
    if let Ok(url) = std::env::var("MNEMO_TEST_PG_URL") {
        if !url.trim().is_empty() {
            return Ok(url);
        }
    }
    start_private(&std::env::temp_dir().join(format!("mnemo-pg-test-{}", std::process::id())))
}

/// `scripts/pg.sh` run with `args` (its stderr shown): its stdout when it exits 0.
pub fn pg_sh(args: &[&str]) -> Result<String, String> {
    let script = pg_script();
    let out = Command::new(&script)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {} failed ({})",
            script.display(),
            args.join(" "),
            out.status
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A PostgreSQL of this process's own in `dir` (a new path directly under the temp dir, which
/// the unprivileged server user can reach): its URL. A watcher stops it and removes `dir` once
/// this process is gone, however it ends. For tests that stop and start their server.
pub fn start_private(dir: &Path) -> Result<String, String> {
    let url = pg_sh(&["start", &dir.display().to_string()])?;
    let watcher = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {script} stop {dir}",
        pid = std::process::id(),
        script = pg_script().display(),
        dir = dir.display()
    );
    Command::new("sh")
        .arg("-c")
        .arg(watcher)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the stop watcher: {e}"))?;
    if url.is_empty() {
        return Err("pg.sh printed no URL".into());
    }
    Ok(url)
}

fn pg_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg.sh")
}

/// Runs blocking store work on a thread of its own and returns what it returns: for direct store
/// calls from an async test. The PostgreSQL driver blocks on a runtime of its own, which tokio
/// refuses on a thread that drives async tasks; a panic inside `f` goes on in the caller.
pub fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(f)
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}
