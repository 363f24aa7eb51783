//! mnemo-store-sqlite: the embedded store. One SQLite file (WAL) holds memories, the FTS5 lexical
//! index, vectors, messages, provenance, history, links, entities and idempotency keys; every
//! public write is one `IMMEDIATE` transaction over all of them.
//!
//! Layout: `schema` (migrations), `codec` (row ↔ type), `predicate` (the one SQL visibility rule
//! and filter translation), `write` and `read` (the `Store` methods), `ann` (the derived HNSW
//! index, rebuilt or caught up from the `vector_changes` log).

mod admin;
mod ann;
mod blocks;
mod checkpoint;
mod codec;
mod erase;
mod fork;
mod graph;
mod idempotency;
mod jobs;
mod keys;
mod lexical;
mod links;
mod messages;
mod predicate;
mod read;
mod record_writes;
mod records;
mod reembed;
mod relations;
mod retrieval;
mod schema;
mod sessions;
mod tiers;
mod timeline;
mod transfer;
mod write;

pub use keys::legacy_keys;
pub use reembed::{reembed_file, FileReembed};
pub use schema::SCHEMA_VERSION;

/// Helpers for tests that need to reach under the store (not part of the stable API): built
/// only with the `testing` feature, which only tests turn on.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;

/// Test hook behind `graph_gate`: where a catch-up waits when a test holds it (see
/// `testing::hold_graph_inserts`). Without the `testing` feature nothing sets the hook.
#[derive(Default)]
pub(crate) struct Gate {
    state: Mutex<(bool, bool)>,
    changed: parking_lot::Condvar,
}

impl Gate {
    /// Called by the catch-up: says it is in, waits until released.
    pub(crate) fn pass(&self) {
        let mut st = self.state.lock();
        st.0 = true;
        self.changed.notify_all();
        while !st.1 {
            self.changed.wait(&mut st);
        }
    }
}

use ann::Ann;
use codec::sql_err;

use parking_lot::{Mutex, RwLock};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::path::{Path, PathBuf};

/// How long a write waits for another connection's write lock (see
/// [`SqliteStore::set_busy_timeout`]).
pub const WRITE_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The embedded SQLite store. Cheap to share behind an `Arc`; safe across threads and processes
/// (other processes' writes are picked up through the change log).
pub struct SqliteStore {
    path: Option<PathBuf>,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    ann: RwLock<Option<Ann>>,
    /// Held by the one catch-up of `ann` running (see `catch_up_ann`).
    catching_up: Mutex<()>,
    /// Test hook: the next catch-up waits here inside its graph inserts.
    graph_gate: Mutex<Option<std::sync::Arc<Gate>>>,
    /// Test hook: the write step that fails (see `testing::fail_at`).
    fail_at: Mutex<Option<WriteStep>>,
    /// The store's secret for list cursors (see `read::Cursors`).
    cursors: read::Cursors,
    /// Checkpoints the write-ahead log off the write path (file-backed stores).
    checkpointer: Option<checkpoint::Checkpointer>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store file at `path` and migrates it forward.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        fork::install_handlers();
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::Unavailable {
                component: "store".into(),
                reason: format!("cannot create {}: {e}", dir.display()),
            })?;
        }
        let mut writer = Connection::open(path).map_err(sql_err)?;
        // Another process (a CLI beside a server) may hold the write lock for a moment: wait
        // for it rather than fail at once; past this, writes fail as `unavailable`.
        writer.busy_timeout(WRITE_BUSY_TIMEOUT).map_err(sql_err)?;
        schema::configure(&writer)?;
        schema::migrate(&mut writer)?;
        let cursors = read::load_cursors(&writer)?;
        let checkpointer = Some(checkpoint::Checkpointer::start(path, &mut writer)?);
        let store = Self {
            path: Some(path.to_path_buf()),
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            ann: RwLock::new(None),
            catching_up: Mutex::new(()),
            graph_gate: Mutex::new(None),
            fail_at: Mutex::new(None),
            cursors,
            checkpointer,
        };
        store.load_ann()?;
        Ok(store)
    }

    /// An in-memory store (tests): one shared connection, no sidecar files.
    pub fn open_in_memory() -> Result<Self> {
        fork::install_handlers();
        let mut writer = Connection::open_in_memory().map_err(sql_err)?;
        schema::migrate(&mut writer)?;
        let cursors = read::load_cursors(&writer)?;
        Ok(Self {
            path: None,
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            ann: RwLock::new(None),
            catching_up: Mutex::new(()),
            graph_gate: Mutex::new(None),
            fail_at: Mutex::new(None),
            cursors,
            checkpointer: None,
        })
    }

    /// Writes a consistent copy of the whole store to `dest` (which must not exist), while it
    /// stays usable: SQLite's `VACUUM INTO`.
    pub fn copy_to(&self, dest: &Path) -> Result<()> {
        let conn = self.writer.lock();
        conn.execute("VACUUM INTO ?1", [dest.to_string_lossy()])
            .map_err(sql_err)?;
        Ok(())
    }

    /// How long a write waits for another process's write lock before it fails as
    /// `unavailable` (default [`WRITE_BUSY_TIMEOUT`]).
    pub fn set_busy_timeout(&self, wait: std::time::Duration) -> Result<()> {
        self.writer.lock().busy_timeout(wait).map_err(sql_err)
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn load_ann(&self) -> Result<()> {
        let conn = self.writer.lock();
        if let Some(dim) = read_dimension(&conn)? {
            let ann = Ann::open(&conn, self.path.as_deref(), dim)?;
            *self.ann.write() = Some(ann);
        }
        Ok(())
    }

    /// Runs `f` on a pooled read connection (the writer's, for in-memory stores).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let Some(path) = &self.path else {
            return f(&self.writer.lock());
        };
        let conn = match self.readers.lock().pop() {
            Some(c) => c,
            None => {
                let c = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY
                        | OpenFlags::SQLITE_OPEN_NO_MUTEX
                        | OpenFlags::SQLITE_OPEN_URI,
                )
                .map_err(sql_err)?;
                c.busy_timeout(std::time::Duration::from_secs(10))
                    .map_err(sql_err)?;
                c
            }
        };
        let out = f(&conn);
        let mut pool = self.readers.lock();
        if pool.len() < 8 {
            pool.push(conn);
        }
        out
    }

    /// Brings the vector index up to the database's latest change (cheap when current).
    /// Waits for a catch-up in progress: a writer calls this after its commit, so the write is
    /// in the index when the write returns and a later search finds it.
    pub(crate) fn sync_ann(&self, conn: &Connection) -> Result<()> {
        self.catch_up_ann(conn, true)
    }

    /// [`Self::sync_ann`] for a search: when another thread is already catching the index up,
    /// the search goes on with the index as it is instead of waiting (what that catch-up adds
    /// was committed by writes that have not returned yet, or by another process).
    pub(crate) fn sync_ann_for_read(&self, conn: &Connection) -> Result<()> {
        self.catch_up_ann(conn, false)
    }

    /// One catch-up at a time, in three steps so searches are not held up by the graph work:
    /// the changes are read with no lock on the index; the graph gets room (exclusive, short);
    /// new vectors go into the graph beside searches (shared); then infos, lexical entries,
    /// changed and removed keys and the generation (exclusive, short). A large write (an add of
    /// hundreds of turns) no longer stops every search for the time its graph inserts take.
    fn catch_up_ann(&self, conn: &Connection, wait: bool) -> Result<()> {
        let newest = ann::db_generation(conn)?;
        let current = || self.ann.read().as_ref().map(|a| a.generation);
        if current().is_some_and(|g| g >= newest) {
            return Ok(());
        }
        let _turn = if wait {
            self.catching_up.lock()
        } else {
            match self.catching_up.try_lock() {
                Some(turn) => turn,
                None => return Ok(()),
            }
        };
        let from = match current() {
            Some(g) if g >= newest => return Ok(()),
            Some(g) => g,
            None => {
                let mut guard = self.ann.write();
                if guard.is_none() {
                    if let Some(dim) = read_dimension(conn)? {
                        *guard = Some(Ann::rebuild(conn, dim)?);
                    }
                }
                return Ok(());
            }
        };
        let delta = ann::Delta::read(conn, from)?;
        if let Some(a) = self.ann.write().as_ref() {
            a.reserve_for(delta.len())?;
        }
        let added = {
            let guard = self.ann.read();
            let Some(a) = guard.as_ref() else {
                return Ok(());
            };
            let added = a.add_new(&delta)?;
            if let Some(gate) = self.graph_gate.lock().take() {
                gate.pass();
            }
            added
        };
        if let Some(a) = self.ann.write().as_mut() {
            a.apply(delta, &added)?;
        }
        Ok(())
    }

    /// This process's turn to checkpoint the file (see `checkpoint`), where a thread of the
    /// store's own checkpoints too.
    pub(crate) fn checkpointer_turn(&self) -> Option<parking_lot::MutexGuard<'_, ()>> {
        self.checkpointer.as_ref().map(|c| c.turn())
    }

    /// After an erase: the index must not keep the erased vectors either. The graph keeps a
    /// removed node's vector in its slot until the slot is reused, so those slots are
    /// overwritten in memory ([`ann::Ann::scrub_free_slots`]; the half-precision copy was zeroed
    /// by the removal). The saved files, which may hold the vectors, are removed rather than
    /// written again (a whole save per erase, under the index's exclusive lock, would stop
    /// every search for its length): the index is saved at close, and an open before that
    /// rebuilds it from the database.
    pub(crate) fn scrub_saved_index(&self) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if let Some(ann) = self.ann.write().as_mut() {
            ann.scrub_free_slots()?;
            ann.dirty = true;
        }
        ann::remove_saved(path);
        Ok(())
    }

    /// Saves the derived vector index beside the file so the next open need not rebuild it.
    ///
    /// The save holds the database's write lock from its catch-up to its last file, so an
    /// erase by another handle or process on the same file commits either before it (the
    /// catch-up applies the erase and the save overwrites the freed slots: see
    /// `Ann::save`) or after it (that erase then removes the files this save wrote).
    /// Either way no saved file holds an erased vector once the erase has returned, whichever
    /// instance saves last. When the lock cannot be had, nothing is saved (the next open
    /// rebuilds).
    pub fn flush_index(&self) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if self.ann.read().is_none() {
            return Ok(());
        }
        let conn = self.writer.lock();
        conn.execute_batch("BEGIN IMMEDIATE").map_err(sql_err)?;
        let saved = self.save_locked(&conn, path);
        let end = if saved.is_ok() { "COMMIT" } else { "ROLLBACK" };
        let ended = conn.execute_batch(end).map_err(sql_err);
        saved.and(ended)
    }

    /// [`Self::flush_index`]'s work, inside its write transaction on `conn`.
    fn save_locked(&self, conn: &Connection, path: &Path) -> Result<()> {
        self.sync_ann(conn)?;
        let mut guard = self.ann.write();
        let Some(ann) = guard.as_mut() else {
            return Ok(());
        };
        ann.save(path)?;
        // Keep the change log bounded; older entries are covered by the saved graph.
        conn.execute(
            "DELETE FROM vector_changes WHERE generation <= ?1 AND generation < (SELECT MAX(generation) FROM vector_changes) - 100000",
            [ann.generation],
        )
        .map_err(sql_err)?;
        Ok(())
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        if let Err(e) = self.flush_index() {
            tracing::warn!(error = %e, "could not save the vector index; it will be rebuilt on next open");
        }
        // Readers close before the writer: SQLite removes the WAL and shared-memory files when
        // the last connection closes, which must be the writer's (it checkpoints first).
        self.readers.lock().clear();
        if let Some(c) = self.checkpointer.as_mut() {
            c.stop();
        }
    }
}

pub(crate) fn read_dimension(conn: &Connection) -> Result<Option<usize>> {
    let raw: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'dimension'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql_err)?;
    Ok(raw.and_then(|s| s.parse().ok()))
}

use mnemo_core::*;
