//! In-process turns for the hierarchy writes of one scope.
//!
//! An add plans its pages and segments from a snapshot of its scope and the store refuses the
//! write when another writer changed them meanwhile (`crate::tiers`). Every add of a busy
//! scope touches the same current segment, so writers of one scope racing optimistically mostly
//! refuse each other: with eight of them, a writer could lose every one of its tries. Inside
//! one process they therefore take turns, from snapshot to commit; only writers in different
//! processes (several servers on one shared store) still race, and a few of those fit the
//! retry budget.
//!
//! The turns are a fixed set of striped locks chosen by a hash of the scope key: bounded
//! memory whatever the number of scopes, and two scopes sharing a stripe merely wait for each
//! other. Several stripes are always taken in ascending order, so two multi-scope batches
//! cannot deadlock.

use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};

const STRIPES: usize = 64;

static TURNS: [Mutex<()>; STRIPES] = [const { Mutex::new(()) }; STRIPES];

/// Waits for the turn of every scope key given; the turns last as long as the guards.
pub(crate) fn take_turns<K: Hash>(
    keys: impl IntoIterator<Item = K>,
) -> Vec<MutexGuard<'static, ()>> {
    let mut stripes: Vec<usize> = keys
        .into_iter()
        .map(|k| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            k.hash(&mut h);
            (h.finish() % STRIPES as u64) as usize
        })
        .collect();
    stripes.sort_unstable();
    stripes.dedup();
    stripes
        .into_iter()
        // A writer that panicked held nothing the next one relies on: the store is the truth.
        .map(|i| TURNS[i].lock().unwrap_or_else(PoisonError::into_inner))
        .collect()
}

/// Waits for every turn (in ascending order, as `take_turns` takes them): an erase holds them
/// all, so no add of this process commits between its window re-check and its commit while an
/// erase runs (an erase may cover several owners' keys).
pub(crate) fn take_every_turn() -> Vec<MutexGuard<'static, ()>> {
    TURNS
        .iter()
        .map(|t| t.lock().unwrap_or_else(PoisonError::into_inner))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_scope_waits_and_the_same_stripe_twice_is_taken_once() {
        let held = take_turns(["alice", "alice"]);
        assert_eq!(held.len(), 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let _turn = take_turns(["alice"]);
            tx.send(()).unwrap();
        });
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(100))
            .is_err());
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the turn passes on");
        waiter.join().unwrap();
    }
}
