//! Graph inserts ahead of a write's commit.
//!
//! A planned write (`RecordWrites::write_planned`) leaves a core idle while it waits for its tier
//! plan, writes the plan's rows and commits; the catch-up after the commit then inserts every
//! new vector into the graph while the writer waits. So a helper thread inserts the write's new
//! vectors during the transaction instead, and the catch-up only gives those nodes their info.
//!
//! What keeps this safe:
//! - Searches cannot return the early nodes: they have no info yet, and a graph holding nodes
//!   without info is never searched unfiltered (`covers_all` compares with the graph's size);
//!   `fetch` checks every hit in SQL in any case.
//! - The write holds the catch-up turn from before its first insert until its helper has
//!   stopped, so no catch-up inserts the same key at the same moment.
//! - A write that does not commit takes its nodes out of the graph before it releases the writer
//!   lock: its row numbers go back to SQLite, and the next write may reuse them with other
//!   vectors.
//! - The writer never waits for the index: the turn is only taken when both the catch-up turn
//!   and a shared hold on the index are free at once, and growing the graph (exclusive) is never
//!   attempted here (no room, no early inserts).

use super::Ann;
use crate::SqliteStore;
use mnemo_core::Result;
use parking_lot::{MutexGuard, RwLockReadGuard};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

impl Ann {
    /// Inserts the new memories of an uncommitted write (row numbers and vectors) until `stop`
    /// is set, skipping keys the graph holds already; each is remembered with its vector.
    /// An insert that fails ends the helper's work: the catch-up after the commit inserts what
    /// is left, and reports a failure of its own.
    pub(crate) fn insert_ahead(&self, fresh: Vec<(u64, Vec<f32>)>, stop: &AtomicBool) {
        if self.index.size() + fresh.len() > self.index.capacity() {
            return;
        }
        for (key, vector) in fresh {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            if vector.len() != self.dim || self.index.contains(key) {
                continue;
            }
            if let Err(e) = self.slots.run(|| self.index.add(key, &vector)) {
                tracing::warn!(error = %e, "early graph insert failed; the catch-up inserts the rest");
                return;
            }
            self.ahead.lock().insert(key, vector);
        }
    }

    /// Keys of `delta` whose node went in ahead of the commit with the vector the log now
    /// shows (a later change of the vector is put again by [`Ann::apply`]).
    pub(super) fn inserted_ahead(&self, delta: &super::Delta) -> HashSet<u64> {
        let ahead = self.ahead.lock();
        if ahead.is_empty() {
            return HashSet::new();
        }
        delta
            .changes
            .iter()
            .filter_map(|(key, change)| {
                let (vector, _) = change.as_ref()?;
                (ahead.get(key) == Some(vector) && self.index.contains(*key)).then_some(*key)
            })
            .collect()
    }

    /// Forgets the early inserts `delta` settles: from now on they are ordinary nodes.
    pub(super) fn settle_ahead(&self, delta: &super::Delta) {
        let mut ahead = self.ahead.lock();
        if !ahead.is_empty() {
            for (key, _) in &delta.changes {
                ahead.remove(key);
            }
        }
    }

    /// Takes every early insert not settled yet out of the graph. Those of a write that did not
    /// commit must go; any left by a committed write whose catch-up failed are inserted again
    /// by the next catch-up, which still has their changes to apply.
    fn withdraw_ahead(&mut self) -> Result<()> {
        let keys: Vec<u64> = self.ahead.get_mut().drain().map(|(k, _)| k).collect();
        for key in keys {
            if self.index.contains(key) {
                self.index.remove(key).map_err(super::ann_err)?;
                self.dirty = true;
            }
        }
        Ok(())
    }

    /// How many early inserts wait for their catch-up (tests).
    #[cfg(feature = "testing")]
    pub(crate) fn ahead_len(&self) -> usize {
        self.ahead.lock().len()
    }
}

/// A write's hold for graph inserts ahead of its commit: the catch-up turn and a shared hold on
/// the index, for as long as the write's transaction runs.
pub(crate) struct AheadTurn<'s> {
    store: &'s SqliteStore,
    ann: Option<RwLockReadGuard<'s, Option<Ann>>>,
    _turn: MutexGuard<'s, ()>,
}

impl SqliteStore {
    /// The turn for early graph inserts, when both the catch-up turn and a shared hold on the
    /// index are free now and the index exists (the writer does not wait for either).
    pub(crate) fn ahead_turn(&self) -> Option<AheadTurn<'_>> {
        let turn = self.catching_up.try_lock()?;
        let ann = self.ann.try_read().filter(|a| a.is_some())?;
        Some(AheadTurn {
            store: self,
            ann: Some(ann),
            _turn: turn,
        })
    }
}

impl AheadTurn<'_> {
    /// The index the helper inserts into.
    pub(crate) fn ann(&self) -> Option<&Ann> {
        self.ann.as_ref().and_then(|a| a.as_ref())
    }

    /// Ends the turn of a write that did not commit, with its early inserts taken out of the
    /// graph. Call it while the writer lock is still held. Should the graph refuse a removal,
    /// the index is dropped, and the next catch-up rebuilds it from SQLite.
    pub(crate) fn withdraw(mut self) {
        self.ann = None;
        let mut guard = self.store.ann.write();
        if let Some(Err(e)) = guard.as_mut().map(Ann::withdraw_ahead) {
            tracing::warn!(error = %e, "could not take early graph inserts back; rebuilding the index");
            *guard = None;
        }
    }
}

/// Runs `write` (one transaction's work, up to and with its commit) beside a helper thread
/// that inserts the write's new vectors into the graph ahead of the commit. `write` gets a
/// callback to hand over the row numbers and vectors once its records are written; the helper
/// is stopped and joined when `write` returns, and a failed write's early inserts are taken out
/// before this returns.
pub(crate) fn with_early_inserts<T>(
    turn: Option<AheadTurn<'_>>,
    write: impl FnOnce(&mut dyn FnMut(Vec<(u64, Vec<f32>)>)) -> Result<T>,
) -> Result<T> {
    let stop = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        let ann = turn.as_ref().and_then(AheadTurn::ann);
        let mut helper = None;
        let out = write(&mut |fresh| {
            if let (Some(ann), None, false) = (ann, &helper, fresh.is_empty()) {
                let stop = &stop;
                helper = Some(s.spawn(move || ann.insert_ahead(fresh, stop)));
            }
        });
        stop.store(true, Ordering::Relaxed);
        // A helper that panicked may have left nodes: a failed write withdraws every early
        // insert, and a committed one's catch-up settles them as usual.
        let _ = helper.map(|h| h.join());
        out
    });
    match (out, turn) {
        (Err(e), Some(turn)) => {
            turn.withdraw();
            Err(e)
        }
        (out, _) => out,
    }
}
