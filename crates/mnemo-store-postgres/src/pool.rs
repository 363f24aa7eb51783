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
//! A database that stops answering (a partition, a stuck VM: the peer's kernel still takes the
//! bytes, nothing replies) must not hold requests for as long as it lasts. Unless the store URL
//! sets its own, connections get [`DEFAULT_CONNECT_TIMEOUT`] for the socket and, on a helper
//! thread, for the whole handshake; TCP keepalives every [`DEFAULT_KEEPALIVE_IDLE`] and a TCP
//! user timeout of [`DEFAULT_TCP_USER_TIMEOUT`]; and the session settings `statement_timeout`
//! ([`DEFAULT_STATEMENT_TIMEOUT`]) and `lock_timeout` ([`DEFAULT_LOCK_TIMEOUT`]), sent in the
//! startup packet. Each is set in the URL the libpq way (`connect_timeout=2`,
//! `keepalives_idle=10`, `tcp_user_timeout=10000`, `options=-c statement_timeout=5s`). A
//! statement or lock timeout is `unavailable` (retryable), like a connection failure.
//!
//! What a failure in flight means for a write is decided by the transaction (`Pool::tx`): an
//! error before the commit rolls back, and an error on the commit itself is `unavailable` —
//! the write may or may not have landed, so it is never reported as a success.

use crate::pg_err;
use mnemo_core::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Idle time after which a pooled connection is checked before use.
const VALIDATE_AFTER: Duration = Duration::from_millis(250);

/// How long that check may take before the connection counts as broken.
const VALIDATE_TIMEOUT: Duration = Duration::from_secs(5);

/// Socket connect and handshake deadline, unless the URL sets `connect_timeout`.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Idle time before TCP keepalive probes, unless the URL sets `keepalives_idle`.
pub(crate) const DEFAULT_KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
/// How long sent data may stay unacknowledged, unless the URL sets `tcp_user_timeout`.
pub(crate) const DEFAULT_TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);
/// `statement_timeout` of every session, unless the URL's `options` set one.
pub(crate) const DEFAULT_STATEMENT_TIMEOUT: &str = "30s";
/// `lock_timeout` of every session, unless the URL's `options` set one.
pub(crate) const DEFAULT_LOCK_TIMEOUT: &str = "10s";

/// The driver's own keepalive idle default (two hours), which we replace.
const DRIVER_KEEPALIVE_IDLE: Duration = Duration::from_secs(2 * 60 * 60);

/// `config` with the defaults above where the URL set nothing.
pub(crate) fn with_timeouts(mut config: postgres::Config) -> postgres::Config {
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
    }
    if config.get_keepalives_idle() == DRIVER_KEEPALIVE_IDLE {
        config.keepalives_idle(DEFAULT_KEEPALIVE_IDLE);
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(DEFAULT_TCP_USER_TIMEOUT);
    }
    let mut options = config.get_options().unwrap_or_default().to_string();
    for (name, value) in [
        ("statement_timeout", DEFAULT_STATEMENT_TIMEOUT),
        ("lock_timeout", DEFAULT_LOCK_TIMEOUT),
    ] {
        if !options.contains(name) {
            if !options.is_empty() {
                options.push(' ');
            }
            options.push_str(&format!("-c {name}={value}"));
        }
    }
    config.options(&options);
    config
}

/// Prepared statements kept per connection; past this many the cache starts over (a store's
/// statement texts vary only with the scope's shape, the filter and the kinds).
const MAX_STATEMENTS: usize = 256;

/// A connection with the statements it has prepared and the session settings it carries.
///
/// A statement run by its text is parsed and described on one round trip and executed on a
/// second; a cached one runs on one. On this client every round trip is also a wake-up of the
/// server process and of this one, which is what a search's short statements mostly cost.
pub(crate) struct Conn {
    pub(crate) client: postgres::Client,
    statements: HashMap<String, postgres::Statement>,
    /// `hnsw.ef_search` as this session last set it (see `search::dense`).
    pub(crate) ef_search: Option<usize>,
    /// The session's own `hnsw.ef_search` before mnemo first set it (see `search::dense`).
    pub(crate) ef_floor: Option<usize>,
}

impl Conn {
    fn new(client: postgres::Client) -> Self {
        Self {
            client,
            statements: HashMap::new(),
            ef_search: None,
            ef_floor: None,
        }
    }

    /// Runs `sql` as a statement prepared once per connection.
    pub(crate) fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> std::result::Result<Vec<postgres::Row>, postgres::Error> {
        let statement = match self.statements.get(sql) {
            Some(s) => s.clone(),
            None => {
                if self.statements.len() >= MAX_STATEMENTS {
                    self.statements.clear();
                }
                let s = self.client.prepare(sql)?;
                self.statements.insert(sql.to_string(), s.clone());
                s
            }
        };
        match self.client.query(&statement, params) {
            // A prepared statement whose result columns changed type under it (a rebind
            // altered the vector columns) is refused once: prepared again, it runs.
            Err(e) if e.code() == Some(&postgres::error::SqlState::FEATURE_NOT_SUPPORTED) => {
                self.statements.clear();
                let s = self.client.prepare(sql)?;
                self.statements.insert(sql.to_string(), s.clone());
                self.client.query(&s, params)
            }
            out => out,
        }
    }
}

/// A pooled connection, with the generation it was made in and when it was last returned.
struct Idle {
    conn: Conn,
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
    /// Handshakes still running on helper threads (some past their deadline).
    connecting: std::sync::Arc<AtomicU64>,
}

impl Pool {
    pub(crate) fn new(config: postgres::Config, size: usize) -> Self {
        Self {
            config: with_timeouts(config),
            connecting: std::sync::Arc::new(AtomicU64::new(0)),
            idle: Mutex::new(Vec::new()),
            size,
            generation: AtomicU64::new(0),
        }
    }

    /// How long a handshake may take: the URL's `connect_timeout`, else the default.
    fn connect_deadline(&self) -> std::time::Duration {
        self.config
            .get_connect_timeout()
            .copied()
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }

    fn connect(&self) -> Result<(Conn, u64)> {
        let generation = self.generation.load(Ordering::Acquire);
        match self.connect_within_deadline() {
            Ok(client) => Ok((Conn::new(client), generation)),
            Err(reason) => {
                self.retire(generation);
                Err(Error::Unavailable {
                    component: "postgresql".into(),
                    reason,
                })
            }
        }
    }

    /// Connects on a helper thread and waits at most the connect timeout for it: the driver's
    /// timeout covers the socket only, and a server that accepts and never answers would hold
    /// the handshake for ever. A handshake past its deadline ends on its thread when the server
    /// answers or the socket fails; while as many as the pool's size still run, connecting
    /// fails at once instead of starting more.
    fn connect_within_deadline(&self) -> std::result::Result<postgres::Client, String> {
        let deadline = self.connect_deadline();
        if self.connecting.load(Ordering::Acquire) >= self.size.max(1) as u64 {
            return Err(format!(
                "earlier connection attempts have not been answered within {deadline:?}; the database does not answer"
            ));
        }
        self.connecting.fetch_add(1, Ordering::AcqRel);
        let (tx, rx) = std::sync::mpsc::channel();
        let (config, connecting) = (self.config.clone(), self.connecting.clone());
        let spawned = std::thread::Builder::new()
            .name("pg-connect".into())
            .spawn(move || {
                let out = config.connect(postgres::NoTls);
                connecting.fetch_sub(1, Ordering::AcqRel);
                // The waiter may have given up; the client is then closed here.
                let _ = tx.send(out);
            });
        if let Err(e) = spawned {
            self.connecting.fetch_sub(1, Ordering::AcqRel);
            return Err(format!("cannot start a connection: {e}"));
        }
        match rx.recv_timeout(deadline) {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err(format!(
                "cannot connect: {e}; check that the server runs and the URL is right"
            )),
            Err(_) => Err(format!(
                "the database did not complete the connection within {deadline:?} (connect_timeout)"
            )),
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
    ///
    /// A burst of requests larger than the pool finds no idle connection and, past the pool's
    /// size, every handshake slot taken: such a request waits, up to the connect timeout, for a
    /// connection to come back or a handshake to end, instead of failing at once as if the
    /// database had stopped answering (it is only busy).
    pub(crate) fn checkout(&self) -> Result<(Conn, u64)> {
        let started = std::time::Instant::now();
        let deadline = self.connect_deadline();
        loop {
            let taken = self.idle.lock().pop();
            let Some(mut c) = taken else {
                let busy = self.connecting.load(Ordering::Acquire) >= self.size.max(1) as u64;
                if busy && started.elapsed() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    continue;
                }
                return self.connect();
            };
            if c.generation != self.generation.load(Ordering::Acquire) || c.conn.client.is_closed()
            {
                continue;
            }
            if c.since.elapsed() >= VALIDATE_AFTER
                && c.conn.client.is_valid(VALIDATE_TIMEOUT).is_err()
            {
                self.retire(c.generation);
                continue;
            }
            return Ok((c.conn, c.generation));
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
        self.with_conn(|c| f(&mut c.client))
    }

    /// [`Pool::with`], with the connection's statement cache and session settings (the search
    /// path's statements).
    pub(crate) fn with_conn<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let (mut conn, generation) = self.checkout()?;
        let out = f(&mut conn);
        self.give_back(
            conn,
            generation,
            matches!(out, Err(Error::Unavailable { .. })),
        );
        out
    }

    /// Returns a checked-out connection: pooled again unless it broke (`broke`, or closed).
    pub(crate) fn give_back(&self, conn: Conn, generation: u64, broke: bool) {
        if conn.client.is_closed() || broke {
            self.retire(generation);
        } else if generation == self.generation.load(Ordering::Acquire) {
            let mut idle = self.idle.lock();
            if idle.len() < self.size {
                idle.push(Idle {
                    conn,
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
