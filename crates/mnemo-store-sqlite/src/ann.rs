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
mod catch_up;
mod delta;
mod exact;
mod saved;

use crate::codec::sql_err;
use crate::lexical::Lexical;
pub(crate) use ahead::with_early_inserts;
pub(crate) use delta::Delta;
use delta::InfoRow;
use exact::Exact;
use mnemo_core::{Candidate, Error, MemoryKind, Result, Validity};
use rusqlite::Connection;
pub(crate) use saved::{remove_saved, SIDECARS};
use std::collections::{HashMap, HashSet};
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
