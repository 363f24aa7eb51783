//! Helpers for tests that need to reach under the store (not part of the stable API): write
//! failures at a step, held vector-index catch-ups, the index's copies of a vector, row counts
//! and the checkpointer's counters. Compiled only with the `testing` feature.

use super::*;

/// Makes every later write fail at `step` (see [`WriteStep`] for the orders) until
/// cleared with `None`.
pub fn fail_at(store: &SqliteStore, step: Option<WriteStep>) {
    *store.fail_at.lock() = step;
}

/// Holds the next catch-up of the vector index inside its graph inserts (the step that runs
/// beside searches) until the returned hold is released or dropped.
pub fn hold_graph_inserts(store: &SqliteStore) -> GraphHold {
    let gate = std::sync::Arc::new(Gate::default());
    *store.graph_gate.lock() = Some(gate.clone());
    GraphHold(gate)
}

/// A catch-up held by [`hold_graph_inserts`].
pub struct GraphHold(std::sync::Arc<Gate>);

impl GraphHold {
    /// Waits (up to `limit`) until a catch-up is held; whether one is.
    pub fn wait_held(&self, limit: std::time::Duration) -> bool {
        let mut st = self.0.state.lock();
        let deadline = std::time::Instant::now() + limit;
        while !st.0 {
            if self.0.changed.wait_until(&mut st, deadline).timed_out() {
                return st.0;
            }
        }
        true
    }

    pub fn release(&self) {
        self.0.state.lock().1 = true;
        self.0.changed.notify_all();
    }
}

impl Drop for GraphHold {
    fn drop(&mut self) {
        self.release();
    }
}

/// The 8-bit vector the graph holds for the memory `id` (its copy in the saved graph file),
/// if it is indexed.
pub fn graph_vector(store: &SqliteStore, id: MemoryId) -> Option<Vec<i8>> {
    let seq = seq_of(store, id)?;
    store.ann.read().as_ref()?.graph_vector(seq)
}

/// The half-precision copy the index keeps of the memory `id`'s vector, as the saved
/// `.hnsw.f16` file holds it (little-endian halves), if it is indexed.
pub fn exact_vector_bytes(store: &SqliteStore, id: MemoryId) -> Option<Vec<u8>> {
    let seq = seq_of(store, id)?;
    store.ann.read().as_ref()?.exact_bytes(seq)
}

fn seq_of(store: &SqliteStore, id: MemoryId) -> Option<u64> {
    store
        .writer
        .lock()
        .query_row(
            "SELECT seq FROM memories WHERE id = ?1",
            [id.to_string()],
            |r| r.get::<_, i64>(0),
        )
        .ok()
        .map(|s| s as u64)
}

/// Rows in every table, by table name (for all-or-nothing checks).
pub fn row_counts(store: &SqliteStore) -> Vec<(String, i64)> {
    let conn = store.writer.lock();
    [
        "memories",
        "vectors",
        "messages",
        "memory_sources",
        "history",
        "links",
        "entities",
        "entity_memories",
        "idempotency",
        "vector_changes",
        "pages",
        "segments",
    ]
    .iter()
    .map(|t| {
        let n = conn
            .query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| r.get(0))
            .expect("table exists");
        (t.to_string(), n)
    })
    .collect()
}

/// True when the saved vector index beside a closed store file loads as it is (no rebuild).
pub fn saved_index_loads(path: &Path) -> Result<bool> {
    let conn = Connection::open(path).map_err(sql_err)?;
    let dim = read_dimension(&conn)?
        .ok_or_else(|| Error::internal("the store has no embedding model bound"))?;
    Ok(crate::ann::Ann::load(&conn, path, dim)?.is_some())
}

/// Checkpoints the store's background thread has run that copied frames into the main file
/// (0 for in-memory stores).
pub fn background_checkpoints(store: &SqliteStore) -> u64 {
    store.checkpointer.as_ref().map_or(0, |c| c.runs())
}

/// Stops the store's checkpoint thread for good, as if it could not keep up: from then on
/// only writers checkpoint, at the inline mark.
pub fn stop_background_checkpoints(store: &mut SqliteStore) {
    if let Some(c) = store.checkpointer.as_mut() {
        c.stop();
    }
}

/// Checkpoints writers ran themselves, and the longest write-ahead log (in frames) a
/// commit reported.
pub fn inline_checkpoints(store: &SqliteStore) -> (u64, i32) {
    store
        .checkpointer
        .as_ref()
        .map_or((0, 0), |c| c.inline_runs())
}

/// Sets the log lengths (frames) at which the thread, and past it the writer, checkpoint.
pub fn set_checkpoint_marks(store: &SqliteStore, background_at: i32, inline_at: i32) {
    if let Some(c) = store.checkpointer.as_ref() {
        c.set_marks(background_at, inline_at);
    }
}

/// Graph inserts made ahead of their write's commit and not yet settled by a catch-up
/// (see `ann::ahead`): during a planned write, its own early inserts.
pub fn early_inserts(store: &SqliteStore) -> usize {
    // Recursive: a test's plan asks from inside the write, which holds the index shared.
    store
        .ann
        .read_recursive()
        .as_ref()
        .map_or(0, |a| a.ahead_len())
}

/// Sets the schema version of a closed store file.
pub fn set_user_version(path: &Path, version: u32) -> Result<()> {
    let conn = Connection::open(path).map_err(sql_err)?;
    conn.pragma_update(None, "user_version", version)
        .map_err(sql_err)
}
