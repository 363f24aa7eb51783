//! The thread pool core's parallel steps run on (the two sides of a hybrid search, the notes
//! lookups of an add), rebuilt in a process made by `fork()`.
//!
//! rayon's global pool is built once per process and its threads are not copied by `fork()`: a
//! child (a Python `multiprocessing` fork-pool worker, a preforking server) that handed work to
//! the pool its parent built would wait for ever. This pool remembers the process that built it;
//! the first use in another process leaks the inherited one (its threads do not exist here,
//! so nothing may wait on them) and builds a fresh one.

use std::sync::{Arc, Mutex};

static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);

/// The pool of this process. `None` only when no thread can be started, in which case the
/// callers run their steps on the calling thread.
pub fn pool() -> Option<Arc<rayon::ThreadPool>> {
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, pool)) = slot.as_ref() {
        if *owner == pid {
            return Some(pool.clone());
        }
    }
    if let Some(inherited) = slot.take() {
        std::mem::forget(inherited);
    }
    let built = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("mnemo-par-{i}"))
        .build()
        .ok()
        .map(Arc::new);
    if let Some(pool) = &built {
        *slot = Some((pid, pool.clone()));
    }
    built
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pool_is_built_once_per_process() {
        let a = super::pool().expect("a pool");
        let b = super::pool().expect("a pool");
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        assert_eq!(a.install(|| 2 + 2), 4);
    }
}
