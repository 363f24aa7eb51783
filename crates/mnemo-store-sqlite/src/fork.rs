//! Keeps SQLite usable in a child made by `fork()` (a Python `multiprocessing` fork-pool worker,
//! a preforking server) while other threads of the parent were inside SQLite.
//!
//! SQLite guards its process-wide state with static mutexes (the allocator's statistics, the
//! page-cache groups, the VFS's table of open files, the PRNG, …). `fork()` copies a mutex in the
//! state it had in the parent but not the thread that held it: a child forked while, say, the
//! store's checkpoint thread was inside `sqlite3_malloc` finds the allocator mutex locked by
//! nobody, and its first SQLite call waits for ever (seen as a hung `multiprocessing` worker).
//!
//! The cure is the standard one: a `pthread_atfork` handler takes every static mutex before the
//! fork, so no other thread is inside one of them when the process is copied, and releases them
//! after it, in the parent and in the child. They are taken outer first, in the order SQLite
//! itself nests them (the shared-cache open mutex before the main one; the VFS, page-cache and
//! PRNG mutexes before the allocator's, which SQLite takes inside all of them), so the handler
//! cannot deadlock with a thread that holds one and waits for the next. A thread that holds a
//! mutex finishes its short critical section and lets it go; the fork waits that long.
//!
//! Per-connection mutexes need nothing: a connection belongs to the store that opened it, and a
//! child must open stores of its own (the Python package refuses an inherited one with an error
//! that says so).

#![allow(
    unsafe_code,
    reason = "the one place the store calls C directly: `pthread_atfork` and SQLite's static \
              mutexes have no safe wrapper; each block says what it relies on"
)]

use rusqlite::ffi;
use std::sync::Once;

/// The static mutexes SQLite uses, outer first (see the module doc for why this order).
/// `APP1..3` are for applications; nothing in mnemo takes them.
const ORDER: [i32; 9] = [
    ffi::SQLITE_MUTEX_STATIC_OPEN,
    ffi::SQLITE_MUTEX_STATIC_MAIN,
    ffi::SQLITE_MUTEX_STATIC_VFS1,
    ffi::SQLITE_MUTEX_STATIC_VFS2,
    ffi::SQLITE_MUTEX_STATIC_VFS3,
    ffi::SQLITE_MUTEX_STATIC_LRU,
    ffi::SQLITE_MUTEX_STATIC_PMEM,
    ffi::SQLITE_MUTEX_STATIC_PRNG,
    ffi::SQLITE_MUTEX_STATIC_MEM,
];

static INSTALL: Once = Once::new();

/// Installs the fork handlers once per process; called before the first store opens. A failure
/// to install (the C library out of memory) leaves forking as it was and is logged.
pub(crate) fn install_handlers() {
    INSTALL.call_once(|| {
        // SAFETY: `sqlite3_initialize` is thread-safe and idempotent; it must run before static
        // mutexes are asked for.
        let rc = unsafe { ffi::sqlite3_initialize() };
        if rc != ffi::SQLITE_OK {
            tracing::warn!(rc, "sqlite3_initialize failed; no fork handlers installed");
            return;
        }
        // SAFETY: the three handlers are `extern "C"` functions with no captured state.
        let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
        if rc != 0 {
            tracing::warn!(
                rc,
                "pthread_atfork failed; SQLite in a forked child may hang"
            );
        }
    });
}

fn mutexes() -> impl DoubleEndedIterator<Item = *mut ffi::sqlite3_mutex> {
    // SAFETY: for static kinds `sqlite3_mutex_alloc` returns a pointer to a mutex that lives as
    // long as the process (or null when SQLite was built without mutexes).
    ORDER
        .into_iter()
        .map(|kind| unsafe { ffi::sqlite3_mutex_alloc(kind) })
        .filter(|m| !m.is_null())
}

extern "C" fn prepare() {
    for m in mutexes() {
        // SAFETY: a valid static mutex; entered once here, left once in `release`.
        unsafe { ffi::sqlite3_mutex_enter(m) };
    }
}

extern "C" fn release() {
    for m in mutexes().rev() {
        // SAFETY: entered by `prepare` in this thread (the child's only thread is the copy of
        // the thread that forked, so it holds them too).
        unsafe { ffi::sqlite3_mutex_leave(m) };
    }
}
