//! Catching the index up with the change log: new vectors go into the graph beside searches
//! ([`Ann::add_new`], from several threads for a large write), then infos, lexical entries,
//! changed and removed keys and the generation under the exclusive lock ([`Ann::apply`]).

use super::delta::Delta;
use super::{ann_err, insert_lanes, Ann};
use mnemo_core::Result;
use rusqlite::Connection;
use std::collections::HashSet;

impl Ann {
    /// Applies every logged change newer than `self.generation` (with the index to itself:
    /// on open).
    pub(crate) fn catch_up(&mut self, conn: &Connection) -> Result<()> {
        let delta = Delta::read(conn, self.generation)?;
        self.reserve_for(delta.len())?;
        let added = self.add_new(&delta)?;
        self.apply(delta, &added)
    }

    /// Puts the vectors of `delta`'s keys the graph does not hold yet into the graph, and
    /// returns those keys with the ones a write inserted ahead of its commit (`ahead`). Takes
    /// `&self`, so a catch-up runs this — the part whose work grows with the graph — beside
    /// searches: they cannot return the new nodes before [`Self::apply`] gives them their info
    /// (the pre-filter passes no key without it, a rescored graph search drops keys without
    /// it), and the SQL fetch checks every candidate's scope again in any case. Room must have
    /// been reserved ([`Self::reserve_for`]) and one catch-up runs at a time.
    pub(crate) fn add_new(&self, delta: &Delta) -> Result<HashSet<u64>> {
        let mut added = self.inserted_ahead(delta);
        let new: Vec<(u64, &[f32])> = delta
            .changes
            .iter()
            .filter_map(|(key, change)| change.as_ref().map(|(v, _)| (*key, v.as_slice())))
            .filter(|(key, v)| v.len() == self.dim && !self.index.contains(*key))
            .collect();
        self.insert_all(&new)?;
        added.extend(new.into_iter().map(|(key, _)| key));
        Ok(added)
    }

    /// Inserts `new` into the graph, from one thread per core when there are enough of them.
    /// Room must have been reserved ([`Self::reserve_for`]).
    pub(super) fn insert_all(&self, new: &[(u64, &[f32])]) -> Result<()> {
        let insert = |part: &[(u64, &[f32])]| -> Result<()> {
            for (key, vector) in part {
                self.slots
                    .run(|| self.index.add(*key, vector))
                    .map_err(ann_err)?;
            }
            Ok(())
        };
        let lanes = insert_lanes(new.len());
        if lanes <= 1 {
            return insert(new);
        }
        // The graph takes inserts from several threads at once (each holds a context of its
        // own); a large write's catch-up, which its writer waits for, or a rebuild then uses
        // the cores the caller's own thread leaves idle.
        let per = new.len().div_ceil(lanes);
        std::thread::scope(|s| {
            let handles: Vec<_> = new
                .chunks(per)
                .map(|part| s.spawn(|| insert(part)))
                .collect();
            handles.into_iter().try_for_each(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(ann_err("a graph insert thread panicked")))
            })
        })
    }

    /// The rest of `delta`, exclusive and short: info and lexical entries of the keys
    /// [`Self::add_new`] put in the graph, changed and removed keys, and the generation.
    pub(crate) fn apply(&mut self, delta: Delta, added: &HashSet<u64>) -> Result<()> {
        self.settle_ahead(&delta);
        for (key, change) in delta.changes {
            match change {
                Some((v, info)) if added.contains(&key) => {
                    self.exact.set(key, &v);
                    self.set_info(key, info);
                    self.dirty = true;
                }
                Some((v, info)) => self.put(key, &v, info)?,
                None => self.remove(key)?,
            }
        }
        self.generation = self.generation.max(delta.generation);
        Ok(())
    }
}
