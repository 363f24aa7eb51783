//! mnemo-store-postgres: the PostgreSQL + pgvector store (issue 14). **Groundwork**: this crate
//! connects, checks and migrates a database and keeps a pool of connections; it does not yet
//! implement [`mnemo_core::Store`], so nothing above it can choose it.
//!
//! Layout: `schema` (the versioned schema, every table keyed by owner), this file (URL
//! validation, start-up checks, the pool). The start-up contract: a malformed URL is
//! `invalid_input` naming `store_url`; an unreachable server is `unavailable` (retryable);
//! a database without pgvector that the user cannot install it into, or a schema from a newer
//! mnemo, is a typed error naming what to do, and nothing is half-migrated.

mod schema;

pub use schema::SCHEMA_VERSION;

use mnemo_core::{Error, Result};
use parking_lot::Mutex;

/// A PostgreSQL error as a mnemo error: connection failures are `unavailable` (retryable),
/// the rest are storage errors with the server's message.
pub(crate) fn pg_err(e: postgres::Error) -> Error {
    if e.is_closed() || e.as_db_error().is_none() && e.code().is_none() {
        return Error::Unavailable {
            component: "postgresql".into(),
            reason: e.to_string(),
        };
    }
    let reason = match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    };
    Error::Storage { reason }
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

/// A fixed-size pool of connections to one database.
struct Pool {
    config: postgres::Config,
    idle: Mutex<Vec<postgres::Client>>,
    size: usize,
}

impl Pool {
    fn connect(&self) -> Result<postgres::Client> {
        self.config
            .connect(postgres::NoTls)
            .map_err(|e| Error::Unavailable {
                component: "postgresql".into(),
                reason: format!(
                    "cannot connect: {e}; check that the server runs and the URL is right"
                ),
            })
    }

    /// Runs `f` on an idle connection (or a new one), returning the connection to the pool
    /// unless it broke.
    fn with<T>(&self, f: impl FnOnce(&mut postgres::Client) -> Result<T>) -> Result<T> {
        let taken = self.idle.lock().pop();
        let mut client = match taken {
            Some(c) if !c.is_closed() => c,
            _ => self.connect()?,
        };
        let out = f(&mut client);
        if !client.is_closed() {
            let mut idle = self.idle.lock();
            if idle.len() < self.size {
                idle.push(client);
            }
        }
        out
    }
}

/// A PostgreSQL database holding one mnemo store.
pub struct PgStore {
    pool: Pool,
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
        let pool = Pool {
            config: parse_url(url)?,
            idle: Mutex::new(Vec::new()),
            size: pool_size,
        };
        pool.with(|c| {
            ensure_vector(c)?;
            schema::migrate(c)
        })?;
        Ok(Self { pool })
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
