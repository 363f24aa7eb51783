//! The connection pool: up to `size` idle connections to one database, new ones made on demand.
//!
//! A database restart breaks every open connection at once, and the synchronous driver only
//! notices when a connection is next used. Three rules keep a restart from outliving itself:
//!
//! - a connection whose work failed with `unavailable` (see [`crate::pg_err`]) is never pooled
//!   again, and its failure retires every connection of its generation or older: the whole pool
//!   is presumed broken together, so the requests after the database is back get new ones;
//! - a connection that sat idle for [`VALIDATE_AFTER`] or more is checked with an empty query
//!   before it is handed out, which catches a restart that happened while nothing was running;
//!   a busy pool reuses its connections sooner than that and pays nothing for the check;
//! - connecting is never retried here: a request that finds the database down fails at once
//!   with `unavailable` (retryable) rather than waiting for it.
//!
//! What a failure in flight means for a write is decided by the transaction (`Pool::tx`): an
//! error before the commit rolls back, and an error on the commit itself is `unavailable` —
//! the write may or may not have landed, so it is never reported as a success.

use crate::pg_err;
use mnemo_core::{Error, Result};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Idle time after which a pooled connection is checked before use.
const VALIDATE_AFTER: Duration = Duration::from_millis(250);

/// How long that check may take before the connection counts as broken.
const VALIDATE_TIMEOUT: Duration = Duration::from_secs(5);

/// A pooled connection, with the generation it was made in and when it was last returned.
struct Idle {
    client: postgres::Client,
    generation: u64,
    since: Instant,
}

/// A fixed-size pool of connections to one database.
pub(crate) struct Pool {
    config: postgres::Config,
    idle: Mutex<Vec<Idle>>,
    pub(crate) size: usize,
    /// Bumped when a connection failure shows the database went away; connections made in an
    /// earlier generation are dropped instead of reused.
    generation: AtomicU64,
}

impl Pool {
    pub(crate) fn new(config: postgres::Config, size: usize) -> Self {
        Self {
            config,
            idle: Mutex::new(Vec::new()),
            size,
            generation: AtomicU64::new(0),
        }
    }

    fn connect(&self) -> Result<(postgres::Client, u64)> {
        let generation = self.generation.load(Ordering::Acquire);
        match self.config.connect(postgres::NoTls) {
            Ok(client) => Ok((client, generation)),
            Err(e) => {
                self.retire(generation);
                Err(Error::Unavailable {
                    component: "postgresql".into(),
                    reason: format!(
                        "cannot connect: {e}; check that the server runs and the URL is right"
                    ),
                })
            }
        }
    }

    /// Drops every connection made in `generation` or before (once per generation: the other
    /// requests failing with it find the pool already renewed).
    fn retire(&self, generation: u64) {
        if self
            .generation
            .compare_exchange(
                generation,
                generation + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            let mut idle = self.idle.lock();
            let (keep, stale): (Vec<_>, Vec<_>) =
                idle.drain(..).partition(|c| c.generation > generation);
            *idle = keep;
            drop(idle);
            drop(stale);
        }
    }

    /// A usable connection: a pooled one of the current generation (checked first when it sat
    /// idle), or a new one.
    pub(crate) fn checkout(&self) -> Result<(postgres::Client, u64)> {
        loop {
            let taken = self.idle.lock().pop();
            let Some(mut c) = taken else {
                return self.connect();
            };
            if c.generation != self.generation.load(Ordering::Acquire) || c.client.is_closed() {
                continue;
            }
            if c.since.elapsed() >= VALIDATE_AFTER && c.client.is_valid(VALIDATE_TIMEOUT).is_err() {
                self.retire(c.generation);
                continue;
            }
            return Ok((c.client, c.generation));
        }
    }

    /// Runs `f` in one transaction on a pooled connection: committed when `f` succeeds, rolled
    /// back otherwise.
    pub(crate) fn tx<T>(
        &self,
        f: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        self.with(|c| {
            let mut tx = c.transaction().map_err(pg_err)?;
            let out = f(&mut tx)?;
            tx.commit().map_err(pg_err)?;
            Ok(out)
        })
    }

    /// Runs `f` on a connection, returning the connection to the pool unless it broke.
    pub(crate) fn with<T>(&self, f: impl FnOnce(&mut postgres::Client) -> Result<T>) -> Result<T> {
        let (mut client, generation) = self.checkout()?;
        let out = f(&mut client);
        self.give_back(
            client,
            generation,
            matches!(out, Err(Error::Unavailable { .. })),
        );
        out
    }

    /// Returns a checked-out connection: pooled again unless it broke (`broke`, or closed).
    pub(crate) fn give_back(&self, client: postgres::Client, generation: u64, broke: bool) {
        if client.is_closed() || broke {
            self.retire(generation);
        } else if generation == self.generation.load(Ordering::Acquire) {
            let mut idle = self.idle.lock();
            if idle.len() < self.size {
                idle.push(Idle {
                    client,
                    generation,
                    since: Instant::now(),
                });
            }
        }
    }
}

impl Drop for Pool {
    /// Each synchronous client owns a small tokio runtime, and tokio panics when a runtime is
    /// dropped on an async worker thread — where the last handle to a store is often released
    /// (a server shutting down). The idle clients are therefore closed on a thread of their own.
    fn drop(&mut self) {
        let idle = std::mem::take(&mut *self.idle.lock());
        if !idle.is_empty() {
            let _ = std::thread::spawn(move || drop(idle)).join();
        }
    }
}
