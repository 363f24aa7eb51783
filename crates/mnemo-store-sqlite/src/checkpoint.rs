//! WAL checkpoints off the write path.
//!
//! SQLite's own rule checkpoints inside the commit that takes the write-ahead log past 1,000
//! frames: that writer copies the log into the main file (and syncs it) while it holds the
//! store's one write connection, so every other writer — of any scope — waits behind it, and
//! an add pays for pages other adds wrote (measured: about a fifth of an add's write time).
//! Here the writer's commit only tells a thread of the store's own how long the log is; that
//! thread runs the same passive checkpoint on a connection of its own, beside writers and
//! readers. Should it fall behind (the machine saturated, a long read pinning old frames), the
//! committing writer checkpoints itself once the log reaches [`INLINE_AT`] frames, so the log
//! stays bounded either way.
//!
//! An erase's `wal_checkpoint(TRUNCATE)` and this thread take turns ([`Checkpointer::turn`]):
//! SQLite answers a checkpoint that meets another one with "busy" at once, which an erase
//! would report as unfinished.

use crate::codec::sql_err;
use mnemo_core::Result;
use parking_lot::{Condvar, Mutex, MutexGuard};
use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

/// Log frames at which the thread checkpoints (SQLite's own interval).
pub(crate) const BACKGROUND_AT: i32 = 1000;
/// Log frames at which the committing writer checkpoints itself.
pub(crate) const INLINE_AT: i32 = 8 * BACKGROUND_AT;

#[derive(Default)]
struct State {
    /// A commit took the log past [`BACKGROUND_AT`] since the thread last looked.
    pending: bool,
    stop: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Held by whoever checkpoints this file in this process.
    turn: Mutex<()>,
    /// [`BACKGROUND_AT`] and [`INLINE_AT`] (tests lower them).
    marks: [AtomicI32; 2],
    /// Checkpoints the thread ran that copied frames into the main file, those writers ran
    /// themselves, and the longest log a commit reported (tests).
    runs: AtomicU64,
    inline_runs: AtomicU64,
    longest: AtomicI32,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            wake: Condvar::new(),
            turn: Mutex::new(()),
            marks: [AtomicI32::new(BACKGROUND_AT), AtomicI32::new(INLINE_AT)],
            runs: AtomicU64::new(0),
            inline_runs: AtomicU64::new(0),
            longest: AtomicI32::new(0),
        }
    }
}

/// The store's checkpoint thread (file-backed stores only).
pub(crate) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread, which opens a connection of its own to `path` (off the opener's
    /// path), and points `writer`'s commits at it (this replaces SQLite's automatic checkpoint
    /// on that connection).
    pub(crate) fn start(path: &Path, writer: &mut Connection) -> Result<Self> {
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("mnemo-checkpoint".into())
            .spawn({
                let (shared, path) = (shared.clone(), path.to_path_buf());
                move || run(&path, &shared)
            })
            .map_err(|e| mnemo_core::Error::internal(format!("checkpoint thread: {e}")))?;
        let hook = shared.clone();
        writer
            .wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, frames| {
                hook.longest.fetch_max(frames, Ordering::Relaxed);
                let [background_at, inline_at] =
                    hook.marks.each_ref().map(|m| m.load(Ordering::Relaxed));
                if frames >= inline_at {
                    // Behind: this commit checkpoints as SQLite would. When the thread is at
                    // it right now, the next commit looks again.
                    if let Some(_turn) = hook.turn.try_lock() {
                        if wal.checkpoint_v2(CheckpointMode::PASSIVE).is_ok() {
                            hook.inline_runs.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                } else if frames >= background_at {
                    hook.state.lock().pending = true;
                    hook.wake.notify_one();
                }
                Ok(())
            }))
            .map_err(sql_err)?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// The turn to checkpoint this file: held, the thread does not start one.
    pub(crate) fn turn(&self) -> MutexGuard<'_, ()> {
        self.shared.turn.lock()
    }

    /// Checkpoints the thread has run that copied frames into the main file.
    #[cfg(feature = "testing")]
    pub(crate) fn runs(&self) -> u64 {
        self.shared.runs.load(Ordering::Relaxed)
    }

    /// Checkpoints writers ran themselves, and the longest log a commit reported.
    #[cfg(feature = "testing")]
    pub(crate) fn inline_runs(&self) -> (u64, i32) {
        (
            self.shared.inline_runs.load(Ordering::Relaxed),
            self.shared.longest.load(Ordering::Relaxed),
        )
    }

    /// Lowers (or raises) the two marks.
    #[cfg(feature = "testing")]
    pub(crate) fn set_marks(&self, background_at: i32, inline_at: i32) {
        self.shared.marks[0].store(background_at, Ordering::Relaxed);
        self.shared.marks[1].store(inline_at, Ordering::Relaxed);
    }

    /// Stops the thread and closes its connection (before the writer closes: the last
    /// connection to close checkpoints and removes the log, and that must be the writer).
    pub(crate) fn stop(&mut self) {
        self.shared.state.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The thread's connection, reading the store once (its journal mode) so that it knows the
/// store keeps a log: a connection that has read nothing yet answers a checkpoint with "not in
/// WAL mode" (frame counts of -1) and copies nothing.
fn open_wal(path: &Path, flags: OpenFlags) -> std::result::Result<Connection, String> {
    let conn = Connection::open_with_flags(path, flags).map_err(|e| sql_err(e).to_string())?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .map_err(|e| sql_err(e).to_string())?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("the store's journal mode is {mode}, not wal"));
    }
    Ok(conn)
}

fn run(path: &Path, shared: &Shared) {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = match open_wal(path, flags) {
        Ok(c) => c,
        Err(e) => {
            // Writers checkpoint at the inline mark instead; the log stays bounded.
            tracing::warn!(error = %e, "the checkpoint thread cannot open the store");
            return;
        }
    };
    loop {
        {
            let mut st = shared.state.lock();
            while !st.pending && !st.stop {
                shared.wake.wait(&mut st);
            }
            if st.stop {
                return;
            }
            st.pending = false;
        }
        let done = {
            let _turn = shared.turn.lock();
            conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE)
        };
        match done {
            // `(log, checkpointed)`: frames in the log and frames now in the main file.
            Ok((_, copied)) if copied > 0 => {
                shared.runs.fetch_add(1, Ordering::Relaxed);
            }
            // Nothing to copy yet (readers pin the log's start): the next mark asks again.
            Ok(_) => {}
            // Busy (another process checkpoints) or a transient error: the next commit past
            // the mark asks again, and the writer's own checkpoint bounds the log meanwhile.
            Err(e) => tracing::debug!(error = %e, "background checkpoint did not run"),
        }
    }
}
