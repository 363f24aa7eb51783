//! A child made by `fork()` while another thread of the parent is inside SQLite can still use
//! SQLite (the store installs fork handlers that hold SQLite's static mutexes across the fork).
//! Without them a child forked while a busy thread held, say, the allocator's mutex waits for
//! ever on its first SQLite call; over a few hundred forks beside a busy thread that happens.

#![allow(
    unsafe_code,
    reason = "fork, waitpid, kill and _exit have no safe wrapper in std"
)]

use mnemo_store_sqlite::SqliteStore;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Forks tried (the run also stops after `BUDGET`).
const FORKS: usize = 300;
const BUDGET: Duration = Duration::from_secs(20);
/// A child's whole work takes milliseconds; this long means it is stuck.
const CHILD_BOUND: Duration = Duration::from_secs(15);

/// SQLite work in a loop: connections opened and closed, rows written and read — every static
/// mutex SQLite has is taken over and over.
fn busy(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let c = rusqlite::Connection::open_in_memory().expect("open");
        c.execute_batch(
            "CREATE TABLE t(x TEXT); \
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) \
             INSERT INTO t SELECT printf('row %d %s', i, hex(randomblob(32))) FROM n;",
        )
        .expect("write");
        let _: i64 = c
            .query_row("SELECT count(*) FROM t WHERE x LIKE '%7%'", [], |r| {
                r.get(0)
            })
            .expect("read");
    }
}

/// In the child: SQLite only, then `_exit` (nothing else of the parent's runtime is touched).
fn child() -> ! {
    let code = match rusqlite::Connection::open_in_memory().and_then(|c| {
        c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(64));")?;
        c.query_row("SELECT length(x) FROM t", [], |r| r.get::<_, i64>(0))
    }) {
        Ok(64) => 0,
        _ => 2,
    };
    // SAFETY: `_exit` ends the child without running the parent's destructors or atexit hooks.
    unsafe { libc::_exit(code) }
}

/// Waits for `pid` at most `CHILD_BOUND`; a child still running then is killed and reported.
fn wait(pid: libc::pid_t) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: `pid` is our own child; `status` is a valid out-pointer.
        let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if got == pid {
            let clean = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            return if clean {
                Ok(())
            } else {
                Err(format!("child {pid} ended with wait status {status}"))
            };
        }
        if got < 0 {
            return Err(format!("waitpid({pid}) failed"));
        }
        if started.elapsed() > CHILD_BOUND {
            // SAFETY: signalling and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!("child {pid} hung in SQLite for {CHILD_BOUND:?}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_child_forked_beside_a_busy_sqlite_thread_can_use_sqlite() {
    // Opening a store installs the handlers (once per process).
    let _store = SqliteStore::open_in_memory().expect("store");
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || busy(&stop))
        })
        .collect();
    let started = Instant::now();
    let mut forks = 0;
    let mut failures = Vec::new();
    while forks < FORKS && started.elapsed() < BUDGET && failures.is_empty() {
        // SAFETY: the child runs `child` only (SQLite and `_exit`).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            child();
        }
        forks += 1;
        if let Err(e) = wait(pid) {
            failures.push(e);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("busy thread");
    }
    assert!(failures.is_empty(), "after {forks} forks: {failures:?}");
    assert!(forks >= 20, "only {forks} forks ran in {BUDGET:?}");
}
