//! The index on disk: the saved graph, its metadata and the exact copies beside the store file
//! ([`SIDECARS`]); a rebuild from the `vectors` table when no usable save exists; and the
//! scrub of freed graph slots an erase needs before anything is saved again.

use super::delta::{info_row, INFO_SQL};
use super::exact::Exact;
use super::{ann_err, db_generation, Ann, GRAPH_SCALAR_NAME, REBUILD_CHUNK, SEARCH_CONTEXTS};
use crate::codec::{blob_to_vector, sql_err};
use mnemo_core::Result;
use rusqlite::{Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// The saved index's files, as suffixes of the store file's name: the graph, its metadata
/// (written last: the save is whole once it exists) and the exact vectors.
pub(crate) const SIDECARS: [&str; 3] = [".hnsw", ".hnsw.json", ".hnsw.f16"];

/// [`SIDECARS`] beside the store file `db`, in that order.
pub(crate) fn sidecar_paths(db: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let [graph, meta, exact] = SIDECARS.map(|suffix| {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    });
    (graph, meta, exact)
}

/// Deletes the saved index beside `db` (metadata first: a half-deleted save never loads).
pub(crate) fn remove_saved(db: &Path) {
    let (graph, meta, exact) = sidecar_paths(db);
    for file in [meta, graph, exact] {
        let _ = std::fs::remove_file(file);
    }
}

impl Ann {
    /// Builds the index from the `vectors` table.
    pub(crate) fn rebuild(conn: &Connection, dim: usize) -> Result<Self> {
        let mut ann = Self::empty(dim)?;
        let tx = conn.unchecked_transaction().map_err(sql_err)?;
        ann.generation = db_generation(&tx)?;
        let count: i64 = tx
            .query_row("SELECT COUNT(*) FROM vectors", [], |r| r.get(0))
            .map_err(sql_err)?;
        ann.index
            .reserve_capacity_and_threads((count as usize).max(1024), SEARCH_CONTEXTS)
            .map_err(ann_err)?;
        let mut stmt = tx
            .prepare(
                "SELECT m.seq, m.user_id, m.agent_id, m.run_id, m.kind, m.state, m.expires_at, \
                 COALESCE(m.index_text, m.text), v.data FROM memories m JOIN vectors v ON v.seq = m.seq",
            )
            .map_err(sql_err)?;
        let mut rows = stmt.query([]).map_err(sql_err)?;
        // Read in chunks, each inserted from one thread per core (a store of 100,000 took
        // ~14 s on one thread of this machine kind).
        let mut chunk: Vec<(u64, Vec<f32>)> = Vec::with_capacity(REBUILD_CHUNK);
        let insert = |ann: &Self, chunk: &mut Vec<(u64, Vec<f32>)>| -> Result<()> {
            let part: Vec<(u64, &[f32])> = chunk.iter().map(|(k, v)| (*k, v.as_slice())).collect();
            ann.insert_all(&part)?;
            chunk.clear();
            Ok(())
        };
        while let Some(row) = rows.next().map_err(sql_err)? {
            let (key, info) = info_row(row).map_err(sql_err)?;
            let blob: Vec<u8> = row.get(8).map_err(sql_err)?;
            let v = blob_to_vector(&blob);
            ann.exact.set(key, &v);
            ann.set_info(key, info);
            chunk.push((key, v));
            if chunk.len() == REBUILD_CHUNK {
                insert(&ann, &mut chunk)?;
            }
        }
        insert(&ann, &mut chunk)?;
        drop(rows);
        drop(stmt);
        tx.finish().map_err(sql_err)?;
        ann.dirty = true;
        tracing::info!(vectors = ann.len(), "rebuilt vector index from the store");
        Ok(ann)
    }

    /// Loads the saved graph if it is usable, then catches up; otherwise rebuilds.
    pub(crate) fn open(conn: &Connection, db_path: Option<&Path>, dim: usize) -> Result<Self> {
        if let Some(db) = db_path {
            match Self::load(conn, db, dim) {
                Ok(Some(ann)) => return Ok(ann),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "saved vector index unusable; rebuilding"),
            }
        }
        Self::rebuild(conn, dim)
    }

    pub(crate) fn load(conn: &Connection, db: &Path, dim: usize) -> Result<Option<Self>> {
        let (graph, meta, exact) = sidecar_paths(db);
        let Ok(raw) = std::fs::read_to_string(&meta) else {
            return Ok(None);
        };
        let saved: serde_json::Value = serde_json::from_str(&raw).map_err(ann_err)?;
        let generation = saved["generation"].as_i64().unwrap_or(-1);
        if saved["dim"].as_u64() != Some(dim as u64)
            || generation < 0
            || saved["scalar"].as_str() != Some(GRAPH_SCALAR_NAME)
        {
            return Ok(None);
        }
        // The log must still hold every change after the saved generation.
        let oldest: Option<i64> = conn
            .query_row("SELECT MIN(generation) FROM vector_changes", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql_err)?
            .flatten();
        let newest = db_generation(conn)?;
        if newest > generation && oldest.is_some_and(|o| o > generation + 1) {
            return Ok(None);
        }
        let mut ann = Self::empty(dim)?;
        match Exact::load(&exact, dim)? {
            Some(e) => ann.exact = e,
            None => return Ok(None),
        }
        ann.index
            .load(graph.to_str().ok_or_else(|| ann_err("non-UTF-8 path"))?)
            .map_err(ann_err)?;
        if ann.index.dimensions() != dim {
            return Ok(None);
        }
        // A loaded graph has room for exactly what it holds and default search contexts.
        ann.index
            .reserve_capacity_and_threads((ann.index.size() * 2).max(1024), SEARCH_CONTEXTS)
            .map_err(ann_err)?;
        let mut stmt = conn.prepare(INFO_SQL).map_err(sql_err)?;
        let mut rows = stmt.query([]).map_err(sql_err)?;
        let mut last_key = 0;
        while let Some(row) = rows.next().map_err(sql_err)? {
            let (key, info) = info_row(row).map_err(sql_err)?;
            // Keys written after the save are not in the graph yet: the catch-up below gives
            // them their exact vectors.
            if ann.index.contains(key) {
                last_key = last_key.max(key);
            }
            ann.set_info(key, info);
        }
        if !ann.exact.covers(last_key) {
            return Ok(None);
        }
        drop(rows);
        drop(stmt);
        ann.generation = generation;
        ann.catch_up(conn)?;
        if ann.infos != ann.len() {
            return Ok(None);
        }
        ann.dirty = false;
        Ok(Some(ann))
    }

    /// Overwrites the vectors the graph still keeps for removed nodes. usearch frees a removed
    /// node's slot but leaves its vector there until a new node takes the slot (and saves it
    /// with the graph); an erase must not leave it in the saved file. So nodes of a zero vector
    /// take every free slot, then are removed again: the slots stay free, holding zeros.
    pub(crate) fn scrub_free_slots(&mut self) -> Result<()> {
        let free = self.index.stats().nodes.saturating_sub(self.index.size());
        if free == 0 {
            self.unscrubbed = false;
            return Ok(());
        }
        self.reserve_for(free)?;
        let zero = vec![0f32; self.dim];
        // Keys no memory has (row numbers are far below; the largest key marks a free slot).
        let keys: Vec<u64> = (0..free as u64).map(|i| u64::MAX - 1 - i).collect();
        let added = keys
            .iter()
            .try_for_each(|key| self.slots.run(|| self.index.add(*key, &zero)));
        // The nodes leave again whether or not every add went in.
        for key in &keys {
            if self.index.contains(*key) {
                self.index.remove(*key).map_err(ann_err)?;
            }
        }
        added.map_err(ann_err)?;
        self.unscrubbed = false;
        self.dirty = true;
        Ok(())
    }

    /// The 8-bit vector the graph holds for `key` (tests).
    #[cfg(feature = "testing")]
    pub(crate) fn graph_vector(&self, key: u64) -> Option<Vec<i8>> {
        let mut out = vec![0i8; self.dim];
        (self.index.get(key, &mut out).ok()? > 0).then_some(out)
    }

    /// The half-precision copy kept for `key`, as the saved file holds it (tests).
    #[cfg(feature = "testing")]
    pub(crate) fn exact_bytes(&self, key: u64) -> Option<Vec<u8>> {
        self.exact.bytes(key)
    }

    /// Saves the graph and its generation beside the database (only when it changed), with
    /// the slots of removed nodes overwritten first.
    pub(crate) fn save(&mut self, db: &Path) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        if self.unscrubbed {
            self.scrub_free_slots()?;
        }
        let (graph, meta, exact) = sidecar_paths(db);
        let _ = std::fs::remove_file(&meta);
        self.index
            .save(graph.to_str().ok_or_else(|| ann_err("non-UTF-8 path"))?)
            .map_err(ann_err)?;
        self.exact.save(&exact)?;
        let body = serde_json::json!({
            "generation": self.generation,
            "dim": self.dim,
            "count": self.len(),
            "scalar": GRAPH_SCALAR_NAME,
        });
        std::fs::write(&meta, body.to_string()).map_err(ann_err)?;
        self.dirty = false;
        Ok(())
    }
}
