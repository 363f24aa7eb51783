//! Which store a `Memory` runs on, chosen by configuration: the embedded SQLite file in the
//! data directory by default, or a PostgreSQL database (`postgres://…`) that any number of
//! processes share. [`open_store`] is the one place above the store crates that names a
//! backend; everything else holds an `Arc<dyn Store>`.
//!
//! Opening is blocking (the PostgreSQL driver runs its own small runtime per connection, so it
//! must never be called, nor dropped, on an async worker thread): async callers go through
//! `spawn_blocking`, as `Memory::open` does.

use mnemo_core::{ApiKeyStore, Error, ErrorKind, Result, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Connections a PostgreSQL store keeps open when the configuration names no pool size:
/// enough for a server's blocking pool to run searches and writes side by side, far below
/// PostgreSQL's default `max_connections` of 100 even with several servers.
pub const DEFAULT_STORE_POOL_SIZE: usize = 16;

/// Where the store lives.
#[derive(Clone, PartialEq)]
pub enum StoreConfig {
    /// The embedded store: one SQLite file (and its derived index files beside it).
    Embedded { path: PathBuf },
    /// A PostgreSQL database with pgvector, shared by every process given the same URL.
    Postgres { url: String, pool_size: usize },
    /// An embedded store held in memory, gone with its last handle: for tests and measuring
    /// runs that keep nothing. No location string names it; it is made in code.
    InMemory,
}

impl std::fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl StoreConfig {
    /// The default: `mnemo.db` in `data_dir`.
    pub fn embedded(data_dir: &Path) -> Self {
        Self::Embedded {
            path: data_dir.join("mnemo.db"),
        }
    }

    /// Reads a store location: a `postgres://` (or `postgresql://`) URL, a `sqlite://` path,
    /// or a plain path to a SQLite file. A malformed URL or another scheme is `invalid_input`
    /// naming `store_url`; nothing is connected here.
    pub fn parse(location: &str, pool_size: usize) -> Result<Self> {
        let loc = location.trim();
        if loc.is_empty() {
            return Err(Error::invalid("store_url", "is empty"));
        }
        if pool_size == 0 {
            return Err(Error::invalid("store_pool_size", "must be at least 1"));
        }
        let lower = loc.to_ascii_lowercase();
        if lower.starts_with("postgres:") || lower.starts_with("postgresql:") {
            // Checks the form (and only the form) before any connection is tried.
            mnemo_store_postgres::parse_url(loc)?;
            return Ok(Self::Postgres {
                url: loc.to_string(),
                pool_size,
            });
        }
        if let Some(path) = loc.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(Error::invalid("store_url", "sqlite:// needs a file path"));
            }
            return Ok(Self::Embedded { path: path.into() });
        }
        if let Some((scheme, _)) = loc.split_once("://") {
            return Err(Error::invalid(
                "store_url",
                format!(
                    "the scheme {scheme:?} is not a store mnemo knows; use postgres://… or the path of a SQLite file"
                ),
            ));
        }
        Ok(Self::Embedded { path: loc.into() })
    }

    /// `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Embedded { .. } | Self::InMemory => "sqlite",
            Self::Postgres { .. } => "postgres",
        }
    }

    /// The location for logs and reports, with any password in the URL hidden.
    pub fn describe(&self) -> String {
        match self {
            Self::Embedded { path } => path.display().to_string(),
            Self::Postgres { url, .. } => redact(url),
            Self::InMemory => ":memory:".to_string(),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_string(),
    }
}

/// Opens (creating and migrating as needed) the configured store. Blocking.
pub fn open_store(config: &StoreConfig) -> Result<Arc<dyn Store>> {
    Ok(match config {
        StoreConfig::Embedded { path } => Arc::new(mnemo_store_sqlite::SqliteStore::open(path)?),
        StoreConfig::InMemory => Arc::new(mnemo_store_sqlite::SqliteStore::open_in_memory()?),
        StoreConfig::Postgres { url, pool_size } => {
            Arc::new(mnemo_store_postgres::PgStore::connect(url, *pool_size)?)
        }
    })
}

/// What [`reembed_store`] did.
#[derive(Debug, Clone)]
pub struct Reembedded {
    /// Counts before and after.
    pub before: mnemo_core::IntegrityReport,
    pub after: mnemo_core::IntegrityReport,
    /// The binding before (model and dimension).
    pub old_stats: mnemo_core::StoreStats,
    /// Memories embedded again.
    pub written: u64,
    /// Whether the store was copied, re-embedded and swapped in (the embedded file: the old
    /// file is gone, no backup is kept, so nothing outlives an erase); `false` for a shared
    /// database, whose vectors are replaced in place.
    pub swapped: bool,
}

/// Moves the configured store to another embedding model (`rebind.to`), embedding every memory
/// again through `embed` in batches of at most `rebind.batch` texts; `start` is told
/// how many before the first batch. Dispatched like [`open_store`]: the embedded file is copied,
/// re-embedded and swapped in (the original untouched until one rename, then gone; see
/// `mnemo_store_sqlite::reembed_file`); a PostgreSQL database is re-embedded in place, in the one
/// transaction of `Admin::rebind_embedder` (other processes read the old vectors until it
/// commits; a failure changes nothing). Nothing else may write meanwhile. Blocking.
pub fn reembed_store(
    config: &StoreConfig,
    rebind: &mnemo_core::Rebind,
    start: &mut dyn FnMut(u64),
    embed: &mut mnemo_core::EmbedBatch<'_>,
) -> Result<Reembedded> {
    match config {
        StoreConfig::Embedded { path } => {
            let r = mnemo_store_sqlite::reembed_file(path, rebind, start, embed)?;
            Ok(Reembedded {
                before: r.before,
                after: r.after,
                old_stats: r.old_stats,
                written: r.written,
                swapped: true,
            })
        }
        StoreConfig::InMemory => Err(Error::invalid(
            "store",
            "an in-memory store holds nothing to re-embed",
        )),
        StoreConfig::Postgres { .. } => {
            let store = open_store(config)?;
            let (old_stats, before) = (store.stats()?, store.integrity()?);
            start(before.vectors);
            let written = store.rebind_embedder(rebind, embed)?;
            let after = store.integrity()?;
            if !after.is_consistent() || after.memories != before.memories {
                return Err(Error::internal(format!(
                    "the store's indexes disagree after re-embedding (before {before:?}, after {after:?})"
                )));
            }
            Ok(Reembedded {
                before,
                after,
                old_stats,
                written,
                swapped: false,
            })
        }
    }
}

/// The store's key table, or a typed error for a store that keeps none.
pub fn key_store(store: &dyn Store) -> Result<&dyn ApiKeyStore> {
    store.api_keys().ok_or_else(|| Error::Unavailable {
        component: "api keys".into(),
        reason: "this store keeps no API keys".into(),
    })
}

/// Copies the keys of a `keys.db` file (where mnemo kept API keys before they moved into the
/// store) into the store. Idempotent: keys already there, by id or hash, are left as they are,
/// so a key revoked in the store stays revoked. Returns how many were added; a missing file
/// adds none. The file itself is never changed. Blocking.
pub fn import_legacy_keys(store: &dyn Store, path: &Path) -> Result<usize> {
    if !path.is_file() {
        return Ok(0);
    }
    let keys = key_store(store)?;
    let mut added = 0;
    for key in mnemo_store_sqlite::legacy_keys(path)? {
        match keys.insert_key(&key) {
            Ok(()) => added += 1,
            Err(e) if e.kind() == ErrorKind::Conflict => {}
            Err(e) => return Err(e),
        }
    }
    if added > 0 {
        tracing::info!(added, file = %path.display(), "imported API keys from a legacy keys file");
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_by_scheme() {
        let pg = StoreConfig::parse("postgres://u:pw@127.0.0.1:5432/mnemo", 4).unwrap();
        assert_eq!(pg.kind(), "postgres");
        assert_eq!(pg.describe(), "postgres://u:***@127.0.0.1:5432/mnemo");
        assert!(!format!("{pg:?}").contains("pw"));
        let file = StoreConfig::parse("/tmp/x/mnemo.db", 4).unwrap();
        assert_eq!(
            file,
            StoreConfig::Embedded {
                path: "/tmp/x/mnemo.db".into()
            }
        );
        assert_eq!(
            StoreConfig::parse("sqlite:///tmp/y.db", 4).unwrap(),
            StoreConfig::Embedded {
                path: "/tmp/y.db".into()
            }
        );
        for bad in [
            "",
            "mysql://h/db",
            "postgres:/nohost",
            "postgres://h:notaport/db",
        ] {
            let e = StoreConfig::parse(bad, 4).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}");
            assert!(e.to_string().contains("store_url"), "{bad}: {e}");
        }
        assert!(StoreConfig::parse("postgres://h/db", 0).is_err());
    }

    #[test]
    fn a_legacy_keys_file_is_imported_once_and_revocations_in_the_store_hold() {
        let dir = tempfile::tempdir().unwrap();
        let legacy = dir.path().join("keys.db");
        let conn = rusqlite::Connection::open(&legacy).unwrap();
        conn.execute_batch(
            "CREATE TABLE api_keys (id TEXT PRIMARY KEY, hash TEXT NOT NULL UNIQUE, name TEXT,
                 admin INTEGER NOT NULL, user_id TEXT, agent_id TEXT, run_id TEXT,
                 created_at TEXT NOT NULL, revoked_at TEXT);
             INSERT INTO api_keys VALUES ('key_a', 'ha', 'app', 0, 'alice', NULL, NULL,
                 '2026-01-02T03:04:05+00:00', NULL);",
        )
        .unwrap();
        drop(conn);
        let store = open_store(&StoreConfig::embedded(dir.path())).unwrap();
        assert_eq!(import_legacy_keys(store.as_ref(), &legacy).unwrap(), 1);
        let keys = key_store(store.as_ref()).unwrap();
        let found = keys.key_by_hash("ha").unwrap().unwrap();
        assert_eq!(found.user_id.as_deref(), Some("alice"));
        keys.revoke_key("key_a", chrono::Utc::now()).unwrap();
        // A second start imports nothing and does not bring the revoked key back.
        assert_eq!(import_legacy_keys(store.as_ref(), &legacy).unwrap(), 0);
        assert!(!keys.key_by_hash("ha").unwrap().unwrap().is_active());
        let missing = dir.path().join("none.db");
        assert_eq!(import_legacy_keys(store.as_ref(), &missing).unwrap(), 0);
    }
}
