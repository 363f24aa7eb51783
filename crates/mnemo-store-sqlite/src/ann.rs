//! The derived vector index: an HNSW graph (usearch) over the `vectors` table.
//!
//! SQLite is the source of truth. Every write transaction appends to `vector_changes`; the
//! in-memory index records the last generation it applied and catches up from that log (before
//! each search, after each write), so writes from other processes are seen too. On close the
//! graph is saved beside the database with its generation; on open it is loaded and caught up, or
//! rebuilt from `vectors` when the file is missing, unreadable, or older than the retained log.
//!
//! Small candidate sets (a small scope, a selective filter) are scored exactly instead of through
//! the graph: filtered HNSW search degrades when few nodes pass the filter.

mod ahead;
mod delta;
mod exact;

use crate::codec::{blob_to_vector, sql_err};
use crate::lexical::Lexical;
pub(crate) use ahead::with_early_inserts;
pub(crate) use delta::Delta;
use delta::{info_row, InfoRow, INFO_SQL};
use exact::Exact;
use mnemo_core::{Candidate, Error, MemoryKind, Result, Validity};
use rusqlite::{Connection, OptionalExtension};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// At or below this many candidates, score exactly.
pub(crate) const EXACT_MAX: usize = 2048;

/// Rows a rebuild reads before it inserts them (from several threads).
const REBUILD_CHUNK: usize = 4096;

/// Below this many new vectors a catch-up inserts on its own thread: starting threads costs
/// more than a few inserts save.
const PARALLEL_INSERT_MIN: usize = 16;

/// Threads a catch-up inserting `n` new vectors uses: one per core (at most 8), each with at
/// least [`PARALLEL_INSERT_MIN`] / 2 inserts.
fn insert_lanes(n: usize) -> usize {
    if n < PARALLEL_INSERT_MIN {
        return 1;
    }
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    cores.min(8).min(n / (PARALLEL_INSERT_MIN / 2)).max(1)
}

/// What the in-memory pre-filter knows of each indexed memory. `fetch` re-checks in SQL.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyInfo {
    pub user: u32,
    pub agent: u32,
    pub run: u32,
    pub kind: MemoryKind,
    pub active: bool,
    pub expires_at: i64,
}

impl KeyInfo {
    /// Whether this memory belongs to the scope `ids` ([`Ann::scope_ids`]; 0 = any) names.
    pub(crate) fn in_scope(&self, ids: [u32; 3]) -> bool {
        (ids[0] == 0 || self.user == ids[0])
            && (ids[1] == 0 || self.agent == ids[1])
            && (ids[2] == 0 || self.run == ids[2])
    }

    /// What the visibility rule needs of a current-view read (no as-of: validity times are not
    /// indexed, and `admits` does not read them without one).
    pub(crate) fn validity(&self) -> Validity {
        Validity {
            active: self.active,
            created_at: chrono::DateTime::<chrono::Utc>::MIN_UTC,
            expires_at: (self.expires_at != i64::MAX)
                .then(|| crate::codec::from_ms(self.expires_at)),
            valid_from: None,
            valid_until: None,
        }
    }
}

pub(crate) struct Ann {
    index: Index,
    dim: usize,
    pub generation: i64,
    pub dirty: bool,
    /// A node left the graph since its free slots were last overwritten: its vector may still
    /// lie in its slot, so the next save scrubs first ([`Ann::scrub_free_slots`]). An instance
    /// that learns of an erase from the change log (another handle, another process) must not
    /// save the erased vector either.
    unscrubbed: bool,
    /// Indexed by key (the memory's `seq`, dense from 1): a lookup per visited node must be cheap.
    info: Vec<Option<KeyInfo>>,
    infos: usize,
    /// Entries that are inactive or carry an expiry: while there are none, a query whose scope
    /// covers every entry needs no per-node filter.
    restricted: usize,
    names: HashMap<String, u32>,
    /// The indexed memories that carry each interned scope part: how many a scope can see
    /// ([`Ann::scope_size`]), and which, for a lexical search of a small scope
    /// ([`Ann::scope_members`]).
    members: HashMap<u32, HashSet<u64>>,
    /// The BM25 index over the same memories.
    pub lex: Lexical,
    /// The indexed vectors at half precision: every score comes from these (`exact`).
    exact: Exact,
    slots: SearchSlots,
    /// Nodes a write put in the graph before its commit (`ahead`), by key, with the vector
    /// inserted: a catch-up whose change log shows the same vector only gives them their info.
    ahead: parking_lot::Mutex<HashMap<u64, Vec<f32>>>,
}

/// How the graph keeps its vectors: 8-bit integers (a unit vector's values times 127). Its
/// distances only choose candidates: scores come from the half-precision copies in `exact`,
/// and a search asks the graph for more candidates than it returns ([`oversampled`]). An
/// insert's distances then cost a fraction of what they cost at half precision, and the
/// graph's memory halves again (BENCHMARKS.md, the fifth cut).
const GRAPH_SCALAR: ScalarKind = ScalarKind::I8;
/// [`GRAPH_SCALAR`] as the saved graph's metadata names it; a graph saved with another (f32,
/// then f16, before it) is rebuilt on open.
const GRAPH_SCALAR_NAME: &str = "i8";

/// Candidates a graph search takes to return `k`: the 8-bit distances reorder neighbours that
/// lie within a few thousandths of each other, so twice as many are rescored exactly.
fn oversampled(k: usize) -> usize {
    k.saturating_mul(2).max(k + 8)
}

fn new_index(dim: usize) -> Result<Index> {
    let opts = IndexOptions {
        dimensions: dim,
        metric: MetricKind::IP,
        quantization: GRAPH_SCALAR,
        connectivity: 16,
        expansion_add: 128,
        expansion_search: 64,
        multi: false,
    };
    Index::new(&opts).map_err(|e| Error::internal(format!("vector index: {e}")))
}

fn ann_err(e: impl std::fmt::Display) -> Error {
    Error::internal(format!("vector index: {e}"))
}

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

pub(crate) fn db_generation(conn: &Connection) -> Result<i64> {
    // Cached: every search asks this before each candidate side.
    conn.prepare_cached("SELECT COALESCE(MAX(generation), 0) FROM vector_changes")
        .and_then(|mut st| st.query_row([], |r| r.get(0)))
        .map_err(sql_err)
}

/// Searches the graph may run at once. usearch keeps one search context per concurrent
/// search and fails a search that finds none free, so contexts are reserved for this many and
/// [`Ann::search`] waits for a free one beyond it.
const SEARCH_CONTEXTS: usize = 32;

/// A counting gate over the search contexts.
#[derive(Default)]
struct SearchSlots {
    busy: parking_lot::Mutex<usize>,
    freed: parking_lot::Condvar,
}

impl SearchSlots {
    fn run<T>(&self, f: impl FnOnce() -> T) -> T {
        {
            let mut busy = self.busy.lock();
            while *busy >= SEARCH_CONTEXTS {
                self.freed.wait(&mut busy);
            }
            *busy += 1;
        }
        let out = f();
        *self.busy.lock() -= 1;
        self.freed.notify_one();
        out
    }
}

impl Ann {
    fn empty(dim: usize) -> Result<Self> {
        Ok(Self {
            index: new_index(dim)?,
            dim,
            generation: 0,
            dirty: false,
            unscrubbed: false,
            info: Vec::new(),
            infos: 0,
            restricted: 0,
            names: HashMap::new(),
            members: HashMap::new(),
            lex: Lexical::new(),
            exact: Exact::new(dim),
            slots: SearchSlots::default(),
            ahead: parking_lot::Mutex::new(HashMap::new()),
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.index.size()
    }

    fn intern(&mut self, prefix: char, name: Option<String>) -> u32 {
        match name {
            None => 0,
            Some(n) => {
                let key = format!("{prefix}{n}");
                let next = self.names.len() as u32 + 1;
                *self.names.entry(key).or_insert(next)
            }
        }
    }

    fn lookup(&self, prefix: char, name: &str) -> Option<u32> {
        self.names.get(&format!("{prefix}{name}")).copied()
    }

    fn set_info(&mut self, key: u64, row: InfoRow) {
        self.drop_info(key);
        self.lex.put(key, &row.text);
        let info = KeyInfo {
            user: self.intern('u', row.user),
            agent: self.intern('a', row.agent),
            run: self.intern('r', row.run),
            kind: row.kind,
            active: row.active,
            expires_at: row.expires_at.unwrap_or(i64::MAX),
        };
        for part in [info.user, info.agent, info.run]
            .into_iter()
            .filter(|p| *p != 0)
        {
            self.members.entry(part).or_default().insert(key);
        }
        let k = key as usize;
        if k >= self.info.len() {
            self.info.resize(k + 1, None);
        }
        if !info.active || info.expires_at != i64::MAX {
            self.restricted += 1;
        }
        if self.info[k].replace(info).is_none() {
            self.infos += 1;
        }
    }

    fn drop_info(&mut self, key: u64) {
        self.lex.remove(key);
        if let Some(old) = self.info.get_mut(key as usize).and_then(Option::take) {
            self.infos -= 1;
            if !old.active || old.expires_at != i64::MAX {
                self.restricted -= 1;
            }
            for part in [old.user, old.agent, old.run]
                .into_iter()
                .filter(|p| *p != 0)
            {
                if let Some(m) = self.members.get_mut(&part) {
                    m.remove(&key);
                }
            }
        }
    }

    /// Grows the graph's capacity for `extra` more nodes (exclusive: it may reallocate).
    pub(crate) fn reserve_for(&self, extra: usize) -> Result<()> {
        let need = self.index.size() + extra;
        if need > self.index.capacity() {
            self.index
                .reserve_capacity_and_threads((need * 2).max(1024), SEARCH_CONTEXTS)
                .map_err(ann_err)?;
        }
        Ok(())
    }

    fn put(&mut self, key: u64, vector: &[f32], row: InfoRow) -> Result<()> {
        if vector.len() != self.dim {
            return Err(Error::internal(format!(
                "vector of {} dims in a {}-dim index",
                vector.len(),
                self.dim
            )));
        }
        if self.index.contains(key) {
            self.index.remove(key).map_err(ann_err)?;
        }
        self.reserve_for(1)?;
        self.index.add(key, vector).map_err(ann_err)?;
        self.exact.set(key, vector);
        self.set_info(key, row);
        self.dirty = true;
        Ok(())
    }

    fn remove(&mut self, key: u64) -> Result<()> {
        if self.index.contains(key) {
            self.index.remove(key).map_err(ann_err)?;
            self.unscrubbed = true;
        }
        self.exact.clear(key);
        self.drop_info(key);
        self.dirty = true;
        Ok(())
    }

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
    pub(crate) fn graph_vector(&self, key: u64) -> Option<Vec<i8>> {
        let mut out = vec![0i8; self.dim];
        (self.index.get(key, &mut out).ok()? > 0).then_some(out)
    }

    /// The half-precision copy kept for `key`, as the saved file holds it (tests).
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
    fn insert_all(&self, new: &[(u64, &[f32])]) -> Result<()> {
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

    /// Scopes (interned) the query requires, or `None` when a required name was never indexed.
    pub(crate) fn scope_ids(&self, scope: &mnemo_core::Scope) -> Option<[u32; 3]> {
        let pick = |p: char, v: Option<&str>| -> Option<u32> {
            match v {
                None => Some(0),
                Some(name) => self.lookup(p, name),
            }
        };
        Some([
            pick('u', scope.user_id().map(|v| v.as_str()))?,
            pick('a', scope.agent_id().map(|v| v.as_str()))?,
            pick('r', scope.run_id().map(|v| v.as_str()))?,
        ])
    }

    /// An upper bound of how many indexed memories a scope can see.
    pub(crate) fn scope_size(&self, ids: [u32; 3]) -> usize {
        self.scope_members(ids).map_or(self.len(), HashSet::len)
    }

    fn part_size(&self, part: u32) -> usize {
        self.members.get(&part).map_or(0, HashSet::len)
    }

    /// The indexed memories of the scope `ids` names could be among: those of its least
    /// common part (a superset; the caller's filter decides). `None` for a scope of no part.
    pub(crate) fn scope_members(&self, ids: [u32; 3]) -> Option<&HashSet<u64>> {
        let least = ids
            .iter()
            .filter(|p| **p != 0)
            .min_by_key(|p| self.part_size(**p))?;
        // Every interned part has its set (emptied, never dropped).
        self.members.get(least)
    }

    /// True when every indexed entry is active, never expires and belongs to the scope `ids`
    /// names: then a graph search needs no filter callback.
    pub(crate) fn covers_all(&self, ids: [u32; 3]) -> bool {
        self.restricted == 0
            && ids
                .iter()
                .filter(|p| **p != 0)
                .all(|p| self.part_size(*p) == self.len())
    }

    pub(crate) fn info(&self, key: u64) -> Option<&KeyInfo> {
        self.info.get(key as usize).and_then(Option::as_ref)
    }

    /// Approximate nearest neighbours as cosine similarities; with `keep`, only keys it passes.
    /// The graph's candidates ([`oversampled`]) are scored exactly and the best `k` returned.
    pub(crate) fn search(
        &self,
        vector: &[f32],
        k: usize,
        keep: Option<impl Fn(u64) -> bool>,
    ) -> Result<Vec<Candidate>> {
        if self.len() == 0 || k == 0 {
            return Ok(Vec::new());
        }
        let wide = oversampled(k);
        let m = self
            .slots
            .run(|| match keep {
                Some(keep) => self.index.filtered_search(vector, wide, keep),
                None => self.index.search(vector, wide),
            })
            .map_err(ann_err)?;
        let keys: Vec<i64> = m.keys.iter().map(|k| *k as i64).collect();
        let mut scored = self.score(vector, &keys)?;
        scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
        scored.truncate(k);
        Ok(scored)
    }

    /// Exact scores of the `keys` that memories of `scope` hold (any visibility); a key of
    /// another owner, or one not indexed, scores nothing.
    pub(crate) fn score_in_scope(
        &self,
        vector: &[f32],
        keys: &[i64],
        scope: &mnemo_core::Scope,
    ) -> Result<Vec<Candidate>> {
        let Some(ids) = self.scope_ids(scope) else {
            return Ok(Vec::new());
        };
        let owned: Vec<i64> = keys
            .iter()
            .copied()
            .filter(|k| self.info(*k as u64).is_some_and(|i| i.in_scope(ids)))
            .collect();
        self.score(vector, &owned)
    }

    /// Exact cosine similarities of the given keys (skipping keys not in the index), from the
    /// half-precision copies (`exact`).
    pub(crate) fn score(&self, vector: &[f32], keys: &[i64]) -> Result<Vec<Candidate>> {
        let mut buf = vec![0f32; self.dim];
        Ok(keys
            .iter()
            .filter(|k| self.info(**k as u64).is_some())
            .filter_map(|&key| {
                let score = self.exact.dot(vector, key as u64, &mut buf)?;
                Some(Candidate { key, score })
            })
            .collect())
    }

    pub(crate) fn dim(&self) -> usize {
        self.dim
    }
}
