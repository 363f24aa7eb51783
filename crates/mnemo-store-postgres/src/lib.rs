//! mnemo-store-postgres: the PostgreSQL + pgvector store. It connects, checks and migrates a
//! database, keeps a pool of connections and implements [`mnemo_core::Store`] on it.
//!
//! Layout: `schema` (the versioned schema, every table keyed by owner), `write` (adds, updates,
//! deletes, links), `read` (get, list, history, provenance), `search` (dense, lexical and entity
//! candidates; binding the embedder), `erase`, `tiers` (pages and segments), `transfer`
//! (export/import), this file (URL validation, start-up checks, the pool, the trait). The start-up contract: a malformed URL is
//! `invalid_input` naming `store_url`; an unreachable server is `unavailable` (retryable);
//! a database without pgvector that the user cannot install it into, or a schema from a newer
//! mnemo, is a typed error naming what to do, and nothing is half-migrated.

mod admin;
mod blocks;
mod codec;
mod encode;
mod entities;
mod erase;
mod graph;
mod idempotency;
mod jobs;
mod keys;
mod lexical;
mod links;
mod messages;
mod pool;
mod predicate;
mod read;
mod record_writes;
mod records;
mod relations;
mod retrieval;
mod schema;
mod scratch;
mod search;
mod sessions;
mod tiers;
mod timeline;
mod transfer;
mod turn;
mod write;

pub use schema::SCHEMA_VERSION;
pub use scratch::ScratchSchema;

use parking_lot::Mutex;
use pool::Pool;

/// A PostgreSQL error as a mnemo error: connection failures are `unavailable` (retryable),
/// the rest are storage errors with the server's message. A connection failure is a closed or
/// broken socket, a timeout, or the server ending the session (class 08, or shutting down,
/// crashed or still starting: 57P01–57P03); the pool drops connections that failed so.
pub(crate) fn pg_err(e: postgres::Error) -> Error {
    let reason = match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    };
    if is_connection_failure(&e) {
        return Error::Unavailable {
            component: "postgresql".into(),
            reason,
        };
    }
    Error::Storage { reason }
}

fn is_connection_failure(e: &postgres::Error) -> bool {
    use std::error::Error as _;
    if let Some(code) = e.code() {
        let code = code.code();
        // 57014: statement_timeout, 55P03: lock_timeout — retryable, like a lost connection.
        return code.starts_with("08")
            || matches!(code, "57P01" | "57P02" | "57P03" | "57014" | "55P03");
    }
    // The driver's kinds are private: a closed connection says so, socket failures carry the
    // I/O error, and a timeout only has its message.
    e.is_closed()
        || e.source().is_some_and(|s| s.is::<std::io::Error>())
        || e.to_string() == "timeout waiting for server"
}

/// Checks a store URL's form before any connection is tried.
pub fn parse_url(url: &str) -> Result<postgres::Config> {
    let url = url.trim();
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(Error::invalid(
            "store_url",
            "must start with postgres:// or postgresql:// (e.g. postgres://user@127.0.0.1:5432/mnemo)",
        ));
    }
    url.parse::<postgres::Config>()
        .map_err(|e| Error::invalid("store_url", format!("is not a valid PostgreSQL URL: {e}")))
}

/// A PostgreSQL database holding one mnemo store.
pub struct PgStore {
    pool: std::sync::Arc<Pool>,
    /// Test hook: the write step that fails (see `testing::fail_at`).
    fail_at: Mutex<Option<WriteStep>>,
    /// The list cursor key, read from `mnemo_meta` on first use (see `read::Cursors`).
    cursors: std::sync::OnceLock<read::Cursors>,
    /// The bound vector dimension as last read or bound here, 0 before (see `search::dim`).
    dim: std::sync::atomic::AtomicUsize,
}

/// Helpers for tests that need to reach under the store (not part of the stable API): built
/// only with the `testing` feature, which only tests turn on.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    /// Makes every later write fail at `step` (the same steps as the embedded store's hook;
    /// see [`mnemo_core::WriteStep`]) until cleared with `None`.
    pub fn fail_at(store: &super::PgStore, step: Option<mnemo_core::WriteStep>) {
        *store.fail_at.lock() = step;
    }

    /// The `hnsw.ef_search` a dense query for `limit` candidates would run with on one of the
    /// store's connections.
    pub fn dense_ef_search(store: &super::PgStore, limit: usize) -> mnemo_core::Result<usize> {
        store.with_conn(|c| crate::search::ef_search(c, limit))
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("size", &self.pool.size)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects, makes sure pgvector is installed in the database (installing it when the user
    /// may), and migrates the schema; `pool_size` connections are kept open at most.
    pub fn connect(url: &str, pool_size: usize) -> Result<Self> {
        if pool_size == 0 {
            return Err(Error::invalid("pool_size", "must be at least 1"));
        }
        let pool = std::sync::Arc::new(Pool::new(parse_url(url)?, pool_size));
        pool.with(|c| {
            ensure_vector(c)?;
            schema::migrate(c)
        })?;
        Ok(Self {
            pool,
            fail_at: Mutex::new(None),
            cursors: std::sync::OnceLock::new(),
            dim: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Runs `f` on a pooled connection.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut postgres::Client) -> Result<T>) -> Result<T> {
        self.pool.with(f)
    }

    /// Runs `f` on a pooled connection with its statement cache (see `pool::Conn`).
    pub(crate) fn with_conn<T>(&self, f: impl FnOnce(&mut pool::Conn) -> Result<T>) -> Result<T> {
        self.pool.with_conn(f)
    }

    /// Runs `f` in one transaction on a pooled connection (see `Pool::tx`).
    pub(crate) fn tx<T>(
        &self,
        f: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        self.pool.tx(f)
    }

    /// Fails when the test hook names `step` (see `testing::fail_at`).
    pub(crate) fn step(&self, step: WriteStep) -> Result<()> {
        if *self.fail_at.lock() == Some(step) {
            return Err(step.injected_failure());
        }
        Ok(())
    }

    /// The schema version the database holds.
    pub fn schema_version(&self) -> Result<u32> {
        self.pool.with(|c| {
            let mut tx = c.transaction().map_err(pg_err)?;
            let v = schema::current_version(&mut tx)?;
            tx.commit().map_err(pg_err)?;
            Ok(v)
        })
    }

    /// The tables of the store's schema (for checks).
    pub fn tables(&self) -> Result<Vec<String>> {
        self.pool.with(|c| {
            let rows = c
                .query(
                    "SELECT table_name::text FROM information_schema.tables \
                     WHERE table_schema = current_schema() ORDER BY 1",
                    &[],
                )
                .map_err(pg_err)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }
}

/// pgvector must be in the database. When it is not, mnemo tries to create it (which needs the
/// right to); when that fails, the error says who must do what.
fn ensure_vector(c: &mut postgres::Client) -> Result<()> {
    let installed = c
        .query_opt("SELECT 1 FROM pg_extension WHERE extname = 'vector'", &[])
        .map_err(pg_err)?
        .is_some();
    if installed {
        return Ok(());
    }
    let available = c
        .query_opt(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'",
            &[],
        )
        .map_err(pg_err)?
        .is_some();
    if !available {
        return Err(Error::Conflict {
            reason: "the PostgreSQL server has no pgvector extension; install pgvector 0.8 or newer on the server".into(),
        });
    }
    c.batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
        .map_err(|e| Error::Conflict {
            reason: format!(
                "pgvector is not enabled in this database and this user cannot enable it ({}); \
                 ask an administrator to run CREATE EXTENSION vector in it",
                e.as_db_error()
                    .map_or_else(|| e.to_string(), |d| d.message().to_string())
            ),
        })
}

use mnemo_core::*;
