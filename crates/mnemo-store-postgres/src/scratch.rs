//! Throwaway schemas for measuring runs (`mnemo eval`, `mnemo bench`): each run gets a fresh,
//! empty store inside a database the user names, and leaves nothing behind.
//!
//! A [`ScratchSchema`] creates a schema with a unique name and hands out a store URL whose
//! `search_path` points into it (then `public`, where pgvector's type usually lives), so
//! [`crate::PgStore::connect`] migrates a fresh store there. Dropping it drops the schema with
//! everything in it. Creating and dropping each run their connection on a thread of their own:
//! the synchronous driver blocks on a runtime of its own, which must not happen on an async
//! worker thread, and callers here are mostly async.

use crate::{parse_url, pg_err};
use mnemo_core::{Error, Result};

/// A schema that exists for as long as this value does (or, made with [`ScratchSchema::kept`],
/// stays).
pub struct ScratchSchema {
    base: String,
    name: String,
    keep: bool,
}

impl std::fmt::Debug for ScratchSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScratchSchema")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Runs `f` on a fresh connection to `url`, on a thread of its own.
fn on_own_thread<T: Send + 'static>(
    url: &str,
    f: impl FnOnce(&mut postgres::Client) -> Result<T> + Send + 'static,
) -> Result<T> {
    let config = parse_url(url)?;
    std::thread::spawn(move || {
        let mut client = config
            .connect(postgres::NoTls)
            .map_err(|e| Error::Unavailable {
                component: "postgresql".into(),
                reason: format!(
                    "cannot connect: {e}; check that the server runs and the URL is right"
                ),
            })?;
        f(&mut client)
    })
    .join()
    .map_err(|_| Error::internal("the scratch schema thread panicked"))?
}

impl ScratchSchema {
    /// Creates an empty schema named `<prefix>_<pid>_<n>` in the database of `url` (a
    /// `postgres://` URL without its own `options`). `prefix` must be a plain lower-case word.
    pub fn create(url: &str, prefix: &str) -> Result<Self> {
        if prefix.is_empty()
            || !prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(Error::invalid(
                "prefix",
                "must be lower-case letters, digits and underscores",
            ));
        }
        if url.contains("options=") {
            return Err(Error::invalid(
                "store_url",
                "a scratch schema sets the URL's options itself; give the URL without options=",
            ));
        }
        // Unique across processes (pid) and within one (a counter).
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{prefix}_{}_{n}", std::process::id());
        let sql = format!("CREATE SCHEMA {name}");
        on_own_thread(url, move |c| c.batch_execute(&sql).map_err(pg_err))?;
        Ok(Self {
            base: url.trim().to_string(),
            name,
            keep: false,
        })
    }

    /// Schema `name` of the database of `url`, created first when `create` (it must not exist
    /// then) and never dropped: a measured store kept for a later run to reopen.
    pub fn kept(url: &str, name: &str, create: bool) -> Result<Self> {
        let plain = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !plain {
            return Err(Error::invalid(
                "schema",
                "must be lower-case letters, digits and underscores, not starting with a digit",
            ));
        }
        parse_url(url)?;
        if url.contains("options=") {
            return Err(Error::invalid(
                "store_url",
                "a kept schema sets the URL's options itself; give the URL without options=",
            ));
        }
        let sql = format!("SELECT 1 FROM pg_namespace WHERE nspname = '{name}'");
        let exists = on_own_thread(url, move |c| {
            c.query_opt(&sql, &[]).map(|r| r.is_some()).map_err(pg_err)
        })?;
        match (create, exists) {
            (true, true) => {
                return Err(Error::invalid(
                    "schema",
                    format!("{name} exists; give a new schema"),
                ))
            }
            (false, false) => {
                return Err(Error::invalid(
                    "schema",
                    format!("{name} does not exist; --search-only reopens a kept schema"),
                ))
            }
            (true, false) => {
                let sql = format!("CREATE SCHEMA {name}");
                on_own_thread(url, move |c| c.batch_execute(&sql).map_err(pg_err))?;
            }
            (false, true) => {}
        }
        Ok(Self {
            base: url.trim().to_string(),
            name: name.to_string(),
            keep: true,
        })
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A store URL that works inside the schema.
    pub fn url(&self) -> String {
        let sep = if self.base.contains('?') { '&' } else { '?' };
        format!(
            "{}{sep}options=-c%20search_path%3D{},public",
            self.base, self.name
        )
    }
}

impl Drop for ScratchSchema {
    /// Drops the schema and everything in it; a failure is logged, never raised (the run it
    /// served is over either way).
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
        if let Err(e) = on_own_thread(&self.base, move |c| c.batch_execute(&sql).map_err(pg_err)) {
            tracing::warn!(schema = %self.name, error = %e, "could not drop a scratch schema");
        }
    }
}
