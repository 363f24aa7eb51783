//! Search candidates on PostgreSQL: pgvector HNSW dense candidates with the scope filter in
//! the query, full-text candidates from the database's own text search (`lexical.rs`), exact
//! vector scores, entity candidates (`entity`); binding and rebinding the embedding model.
//!
//! Binding records `model_id` and `dimension` in `mnemo_meta`, fixes the `embedding` columns of
//! memories, pages and segments to `vector(D)` and builds the HNSW index on memories
//! (`vector_cosine_ops`). The first bind of a database does that DDL under an advisory lock;
//! every later bind to the same model is one read.
//!
//! A memory is indexed exactly when its `embedding` is not NULL (a deleted memory has neither
//! an embedding nor a `lexical` vector), so candidates need no other index table.

pub(crate) mod entity;

use crate::codec::col;
use crate::pool::Conn;
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use pgvector::Vector;
use postgres::GenericClient;
use std::sync::atomic::Ordering;

/// `hnsw.ef_search` bounds: at least pgvector's default 40 raised for recall on filtered
/// scans, at most the 1,000 pgvector accepts. A database or role whose own `hnsw.ef_search` is
/// higher (`ALTER DATABASE … SET hnsw.ef_search = 200`, or `options=-c hnsw.ef_search=200` in
/// the URL) raises the lower bound: an operator trades dense latency for recall there.
const EF_SEARCH_MIN: usize = 100;
const EF_SEARCH_MAX: usize = 1000;

/// The advisory lock binds and rebinds take, so two servers never alter the columns together.
pub(crate) const BIND_LOCK: i64 = 0x006d_6e65_6d62;

/// pgvector's HNSW index takes `vector` columns of at most this many dimensions; a store bound
/// to a wider model searches by exact scan.
const HNSW_MAX_DIM: usize = 2000;

/// The bound model and dimension recorded in `mnemo_meta`, if any.
pub(crate) fn bound(c: &mut impl GenericClient) -> Result<Option<(String, usize)>> {
    let rows = c
        .query(
            "SELECT key, value FROM mnemo_meta WHERE key IN ('model_id', 'dimension')",
            &[],
        )
        .map_err(pg_err)?;
    let (mut model, mut dim) = (None, None);
    for r in rows {
        // `mnemo_meta` may predate mnemo in a shared database: a wrong type is an error.
        let (k, v): (String, String) = (col(&r, "key")?, col(&r, "value")?);
        if k == "model_id" {
            model = Some(v);
        } else {
            dim = v.parse::<usize>().ok();
        }
    }
    Ok(model.zip(dim))
}

/// The bound dimension, or a conflict saying the store has no model yet (writes need one).
pub(crate) fn dimension_of(c: &mut impl GenericClient) -> Result<usize> {
    bound(c)?.map(|(_, d)| d).ok_or_else(|| Error::Conflict {
        reason: "the store has no embedding model bound yet; bind one before writing".into(),
    })
}

/// Records the model and fixes the vector columns to `dimension` (and builds the HNSW index);
/// part of a bind's or a rebind's transaction.
pub(crate) fn set_binding(
    tx: &mut postgres::Transaction<'_>,
    model_id: &str,
    dimension: usize,
) -> Result<()> {
    // Rewriting the vector columns and building the index take as long as the table needs.
    tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
        .map_err(pg_err)?;
    tx.batch_execute("DROP INDEX IF EXISTS memories_embedding_hnsw")
        .map_err(pg_err)?;
    for table in ["memories", "pages", "segments"] {
        tx.batch_execute(&format!(
            "ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({dimension})"
        ))
        .map_err(pg_err)?;
    }
    if dimension <= HNSW_MAX_DIM {
        tx.batch_execute(crate::schema::HNSW_INDEX)
            .map_err(pg_err)?;
    } else {
        tracing::warn!(
            dimension,
            "vectors wider than {HNSW_MAX_DIM} dimensions have no HNSW index; dense search scans"
        );
    }
    tx.execute(
        "INSERT INTO mnemo_meta (key, value) VALUES ('model_id', $1), ('dimension', $2) \
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        &[&model_id, &dimension.to_string()],
    )
    .map_err(pg_err)?;
    Ok(())
}

impl PgStore {
    /// The bound dimension: read once, then kept (a bind or rebind here sets it again); `None`
    /// while no model is bound.
    pub(crate) fn dim(&self, c: &mut Conn) -> Result<Option<usize>> {
        match self.dim.load(Ordering::Acquire) {
            0 => {
                let d = bound(&mut c.client)?.map(|(_, d)| d);
                self.dim.store(d.unwrap_or(0), Ordering::Release);
                Ok(d)
            }
            d => Ok(Some(d)),
        }
    }

    /// Runs a query comparing stored vectors with `vector` (checked against the kept
    /// dimension). Another server's rebind to a new dimension makes PostgreSQL refuse the
    /// comparison: the kept dimension is read again and a vector of the old one is invalid
    /// input, as if the check had seen the new dimension.
    pub(crate) fn vector_query(
        &self,
        c: &mut Conn,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
        vector: &[f32],
    ) -> Result<Vec<postgres::Row>> {
        match c.query(sql, params) {
            Ok(rows) => Ok(rows),
            Err(e) if e.code() == Some(&postgres::error::SqlState::DATA_EXCEPTION) => {
                self.dim.store(0, Ordering::Release);
                if let Some(d) = self.dim(c)? {
                    check_vector("vector", vector, d)?;
                }
                Err(pg_err(e))
            }
            Err(e) => Err(pg_err(e)),
        }
    }
}

/// The `hnsw.ef_search` a dense query for `limit` candidates runs with on this connection:
/// four times the limit within [`EF_SEARCH_MIN`, `EF_SEARCH_MAX`], and never below the
/// session's own setting as it was before mnemo first set it (the server's, database's, role's
/// or URL's; read once per connection).
pub(crate) fn ef_search(c: &mut Conn, limit: usize) -> Result<usize> {
    let floor = match c.ef_floor {
        Some(f) => f,
        None => {
            // NULL (no floor) while pgvector is not loaded in the session and nothing set it.
            let rows = c
                .query("SELECT current_setting('hnsw.ef_search', true)", &[])
                .map_err(pg_err)?;
            let f = rows
                .first()
                .and_then(|r| r.get::<_, Option<String>>(0))
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            c.ef_floor = Some(f);
            f
        }
    };
    Ok(limit
        .saturating_mul(4)
        .max(floor)
        .clamp(EF_SEARCH_MIN, EF_SEARCH_MAX))
}

/// The text a memory is embedded from: its index text (or text) with repeated lines collapsed,
/// as the write path embeds it.
pub(crate) fn memory_text(text: &str) -> String {
    mnemo_core::text::collapse_repeated_lines(text)
}

/// Embeds the text of each `(scope_key, id, text)` row (as `prepare` gives it) through `embed`
/// (batches of at most `batch`) and stores the vectors in `table`'s `embedding`; returns the
/// rows embedded.
pub(crate) fn embed_rows(
    tx: &mut postgres::Transaction<'_>,
    (table, prepare): (&str, fn(&str) -> String),
    rows: &[postgres::Row],
    (dimension, batch): (usize, usize),
    embed: &mut EmbedBatch<'_>,
) -> Result<u64> {
    let sql = format!("UPDATE {table} SET embedding = $1 WHERE scope_key = $2 AND id = $3");
    reembed(
        rows,
        (dimension, batch),
        embed,
        |r| prepare(r.get::<_, &str>(2)),
        |row, v| {
            let (key, id): (&str, uuid::Uuid) = (row.get(0), row.get(1));
            tx.execute(&sql, &[&Vector::from(v), &key, &id])
                .map_err(pg_err)?;
            Ok(())
        },
    )?;
    Ok(rows.len() as u64)
}

/// A refused `hnsw.iterative_scan` means a pgvector older than 0.8: say what to do.
pub(crate) fn old_pgvector(e: postgres::Error) -> Error {
    use postgres::error::SqlState;
    match e.code() {
        Some(c) if *c == SqlState::INVALID_NAME || *c == SqlState::UNDEFINED_OBJECT => {
            Error::Conflict {
                reason: format!(
                    "dense search needs pgvector 0.8 or newer (iterative index scans): {e}; \
                     upgrade the extension on the server and run ALTER EXTENSION vector UPDATE"
                ),
            }
        }
        _ => pg_err(e),
    }
}

/// A `(seq, cosine distance)` row as a candidate scored by cosine similarity.
pub(crate) fn similarity(r: &postgres::Row) -> Candidate {
    Candidate {
        key: r.get(0),
        score: (1.0 - r.get::<_, f64>(1)) as f32,
    }
}

/// Best first, ties by key (a relaxed-order index scan returns rows nearly sorted).
pub(crate) fn ranked(mut c: Vec<Candidate>) -> Vec<Candidate> {
    c.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
    c
}

/// Scope, visibility, kinds and filter of a candidate query, on `memories` aliased `m`.
pub(crate) fn candidate_pred(q: &CandidateQuery<'_>) -> Result<Pred> {
    let mut p = Pred::default();
    candidate_pred_into(&mut p, q)?;
    Ok(p)
}

/// [`candidate_pred`] added to `p` (after the conditions and parameters it has).
pub(crate) fn candidate_pred_into(p: &mut Pred, q: &CandidateQuery<'_>) -> Result<()> {
    predicate::scope(p, "m", q.scope);
    predicate::visibility(p, "m", &q.read);
    predicate::kinds(p, "m", q.kinds);
    if let Some(f) = q.filter {
        predicate::filter(p, "m", f)?;
    }
    Ok(())
}
