//! The tokio runtime every call runs on, owned here rather than by `pyo3_async_runtimes`, for
//! two moments in a process's life that a runtime made once and kept for ever gets wrong:
//!
//! - **Fork.** A child made by `os.fork()` (a `multiprocessing` fork-pool worker, gunicorn
//!   `--preload`, Celery prefork) inherits the runtime's memory but none of its threads: work
//!   handed to it would wait for ever. The runtime remembers the process that built it; the
//!   first call in another process leaks the inherited one (dropping it would wait on threads
//!   that do not exist) and builds a fresh one.
//! - **Interpreter exit.** `shutdown()` (an `atexit` hook of `mnemo/__init__.py`, so it runs
//!   before `Py_FinalizeEx` starts) stops the runtime with the GIL released: calls still in
//!   flight finish handing back their answers or are dropped, and no tokio thread is left to
//!   touch a Python object while the interpreter tears itself down. Calls made after it raise
//!   `mnemo.UnavailableError` at once.

use crate::errors::Failure;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};

/// The runtime and the process it was built in.
static RUNTIME: Mutex<Option<(u32, Runtime)>> = Mutex::new(None);
/// Set once `shutdown` began: no new runtime is built, no new call starts.
static SHUT_DOWN: AtomicBool = AtomicBool::new(false);
/// Set once `shutdown` stopped waiting: no task attaches to Python any more (one that outlived
/// the grace period drops its answer).
static DETACHED: AtomicBool = AtomicBool::new(false);

/// How long interpreter exit waits for calls in flight (a write commits or rolls back whole).
const EXIT_GRACE: Duration = Duration::from_secs(10);

fn build() -> Result<Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .thread_name("mnemo-rt")
        .enable_all()
        .build()
        .map_err(|e| Failure::internal(format!("starting mnemo's runtime failed: {e}")))
}

/// The runtime of this process, built on first use and again after a fork.
pub(crate) fn handle() -> Result<Handle, Failure> {
    if SHUT_DOWN.load(Ordering::Acquire) {
        return Err(Failure::unavailable(
            "mnemo's runtime",
            "the Python interpreter is exiting",
        ));
    }
    let pid = std::process::id();
    let mut slot = RUNTIME
        .lock()
        .map_err(|_| Failure::internal("mnemo's runtime lock is poisoned"))?;
    match slot.as_ref() {
        Some((owner, rt)) if *owner == pid => Ok(rt.handle().clone()),
        _ => {
            if let Some((_, inherited)) = slot.take() {
                // Its threads live in the parent only: dropping it would wait for them.
                std::mem::forget(inherited);
            }
            let rt = build()?;
            let h = rt.handle().clone();
            *slot = Some((pid, rt));
            Ok(h)
        }
    }
}

/// Whether a task may still attach to Python to hand back an answer.
pub(crate) fn live() -> bool {
    !DETACHED.load(Ordering::Acquire)
}

/// Stops the runtime for interpreter exit (see the module doc); later calls fail at once.
/// Waits at most `EXIT_GRACE` for tasks still running.
pub(crate) fn shutdown() {
    SHUT_DOWN.store(true, Ordering::Release);
    let taken = RUNTIME.lock().ok().and_then(|mut s| s.take());
    match taken {
        Some((owner, rt)) if owner == std::process::id() => rt.shutdown_timeout(EXIT_GRACE),
        Some((_, inherited)) => std::mem::forget(inherited),
        None => {}
    }
    DETACHED.store(true, Ordering::Release);
}
