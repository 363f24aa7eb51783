//! Graph inserts ahead of a write's commit.
//!
//! A planned write (`RecordWrites::write_planned`) leaves a core idle while it waits for its tier
//! plan, writes the plan's rows and commits; the catch-up after the commit then inserts every
//! new vector into the graph while the writer waits. So a helper thread inserts the write's new
//! vectors during the transaction instead, and the catch-up only gives those nodes their info.
//! The writer hands each batch's vectors over as soon as that batch's rows are written, so the
//! helper starts after the first batch rather than after the last: a raw add of 64 texts spent
//! most of its records time with the second core idle, and the graph inserts the helper had not
//! reached by the commit then ran after it, with the writer waiting.
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
use std::sync::mpsc::{Receiver, Sender};

/// New memories' row numbers and vectors, as a write hands them to the graph helper.
type Fresh = Vec<(u64, Vec<f32>)>;

impl Ann {
    /// Inserts the new memories of an uncommitted write (row numbers and vectors), part by part
    /// as the writer hands them over on `parts`, until `stop` is set or the writer hangs up,
    /// skipping keys the graph holds already; each is remembered with its vector. A part the
    /// graph has no room for ends the helper's work (it never grows the graph), and so does an
    /// insert that fails: the catch-up after the commit inserts what is left (and reports a
    /// failure of its own).
    pub(crate) fn insert_ahead(&self, parts: Receiver<Fresh>, stop: &AtomicBool) {
        while let Ok(fresh) = parts.recv() {
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
/// callback to hand over row numbers and vectors as its records are written (once per batch,
/// or once for all); the helper starts with the first part, is stopped and joined when `write`
/// returns, and a failed write's early inserts are taken out before this returns.
pub(crate) fn with_early_inserts<T>(
    turn: Option<AheadTurn<'_>>,
    write: impl FnOnce(&mut dyn FnMut(Fresh)) -> Result<T>,
) -> Result<T> {
    let stop = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        let ann = turn.as_ref().and_then(AheadTurn::ann);
        let mut helper = None;
        let mut parts: Option<Sender<Fresh>> = None;
        let out = write(&mut |fresh| {
            let Some(ann) = ann else {
                return;
            };
            if fresh.is_empty() {
                return;
            }
            if helper.is_none() {
                let (send, receive) = std::sync::mpsc::channel();
                let stop = &stop;
                helper = Some(s.spawn(move || ann.insert_ahead(receive, stop)));
                parts = Some(send);
            }
            // A helper that has stopped (no room, a failed insert) leaves the rest to the
            // catch-up: a part it will not take is dropped here.
            if let Some(send) = &parts {
                let _ = send.send(fresh);
            }
        });
        stop.store(true, Ordering::Relaxed);
        drop(parts);
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

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_core::{Admin, Binding, Error, RecordWrites};
    use mnemo_testkit::{batch, scope, HashEmbedder};

    /// Waits (up to 20 s) until `ok` holds.
    fn eventually(ok: impl Fn() -> bool) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if ok() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        false
    }

    /// The helper inserts each part as the writer hands it over: the first batch's vectors are
    /// in the graph before the writer hands over the second (the graph work no longer waits for
    /// the last batch's rows). A write that then fails takes every early insert back.
    #[test]
    fn the_helper_inserts_each_part_as_it_is_handed_over() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("mnemo.db")).unwrap();
        store
            .bind_embedder(&Binding::new(HashEmbedder::MODEL_ID, HashEmbedder::DIM).unwrap())
            .unwrap();
        // One committed memory, so the graph exists.
        let s = scope("parts");
        store
            .write(vec![batch(&s, "a kept memory", serde_json::json!({}))])
            .unwrap();
        let early = || {
            store
                .ann
                .read_recursive()
                .as_ref()
                .map_or(0, |a| a.ahead_len())
        };
        let part = |from: u64| -> Vec<(u64, Vec<f32>)> {
            (from..from + 8)
                .map(|k| (k, HashEmbedder::vector(&format!("part entry {k}"))))
                .collect()
        };
        let mut seen = Vec::new();
        let out: Result<()> = with_early_inserts(store.ahead_turn(), |hand_over| {
            for p in 0..3u64 {
                hand_over(part(1_000 + 8 * p));
                let wanted = 8 * (p as usize + 1);
                seen.push(eventually(|| early() >= wanted));
            }
            Err(Error::internal("the write fails after its records"))
        });
        assert!(out.is_err());
        assert_eq!(seen, vec![true; 3], "a part waited for the next one");
        assert_eq!(early(), 0, "the failed write's early inserts stayed");
        let guard = store.ann.read();
        let ann = guard.as_ref().unwrap();
        assert!((1_000..1_024).all(|k| !ann.index.contains(k)));
        assert_eq!(ann.len(), 1);
    }
}
