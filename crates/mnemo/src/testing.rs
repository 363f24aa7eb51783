//! Hooks for tests that must stop a write at one point of its path (not a stable API).
//!
//! An add of a session runs the hook registered for its scope key once its window re-check is
//! done, before its commit: a test runs a second server's erase there, to show that the erase
//! gates keep the two apart.

use std::sync::Mutex;

type Hook = Box<dyn FnOnce() + Send>;

static AFTER_RECHECK: Mutex<Vec<(String, Hook)>> = Mutex::new(Vec::new());

/// Runs `hook` once, in the next add of a session of `scope_key` ([`mnemo_core::Scope::key`]),
/// between its window re-check and its commit (its gates held).
#[doc(hidden)]
pub fn on_window_recheck(scope_key: String, hook: impl FnOnce() + Send + 'static) {
    lock().push((scope_key, Box::new(hook)));
}

fn lock() -> std::sync::MutexGuard<'static, Vec<(String, Hook)>> {
    AFTER_RECHECK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The add's side: runs (and forgets) the hooks of `scope_keys`.
pub(crate) fn after_window_recheck(scope_keys: &[String]) {
    let due: Vec<Hook> = {
        let mut hooks = lock();
        if hooks.is_empty() {
            return;
        }
        let (due, kept) = std::mem::take(&mut *hooks)
            .into_iter()
            .partition::<Vec<_>, _>(|(k, _)| scope_keys.contains(k));
        *hooks = kept;
        due.into_iter().map(|(_, h)| h).collect()
    };
    for hook in due {
        hook();
    }
}
