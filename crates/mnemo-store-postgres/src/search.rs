// Stubs until this module is implemented (issue 14); remove this allow with them.
#![allow(unused_variables, unused_imports, dead_code)]
//! Search candidates on PostgreSQL: pgvector HNSW dense candidates with the scope filter in
//! the query, full-text candidates from the database's own text search, exact vector scores,
//! entity candidates; binding and rebinding the embedding model.
//!
//! Binding records `model_id` and `dimension` in `mnemo_meta`, fixes the `embedding` columns of
//! memories, pages and segments to `vector(D)` and builds the HNSW index on memories
//! (`vector_cosine_ops`). The first bind of a database does that DDL under an advisory lock;
//! every later bind to the same model is one read.

use crate::{pg_err, PgStore};
use mnemo_core::tier::*;
use mnemo_core::*;
use postgres::GenericClient;

/// The advisory lock binds and rebinds take, so two servers never alter the columns together.
const BIND_LOCK: i64 = 0x006d_6e65_6d62;

/// pgvector's HNSW index takes `vector` columns of at most this many dimensions; a store bound
/// to a wider model searches by exact scan.
const HNSW_MAX_DIM: usize = 2000;

/// The model family: the part before the first `/` ("hash-embedder/v1" → "hash-embedder"),
/// the same rule as the embedded store (a new revision of one model keeps its vectors).
fn family(model: &str) -> &str {
    model.split('/').next().unwrap_or(model)
}

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
        let (k, v): (String, String) = (r.get(0), r.get(1));
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
fn set_binding(tx: &mut postgres::Transaction<'_>, model_id: &str, dimension: usize) -> Result<()> {
    tx.batch_execute("DROP INDEX IF EXISTS memories_embedding_hnsw")
        .map_err(pg_err)?;
    for table in ["memories", "pages", "segments"] {
        tx.batch_execute(&format!(
            "ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({dimension})"
        ))
        .map_err(pg_err)?;
    }
    if dimension <= HNSW_MAX_DIM {
        tx.batch_execute(
            "CREATE INDEX memories_embedding_hnsw ON memories \
             USING hnsw (embedding vector_cosine_ops)",
        )
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
    pub(crate) fn bind(&self, model_id: &str, dimension: usize) -> Result<()> {
        if dimension == 0 {
            return Err(Error::invalid("dimension", "must be positive"));
        }
        let check = |current: Option<(String, usize)>| {
            match current {
            Some((m, d)) if family(&m) != family(model_id) || d != dimension => {
                Err(Error::Conflict {
                    reason: format!(
                        "this store holds {d}-dimensional vectors from {m}, but the embedder is {model_id} ({dimension} dimensions); \
                         to re-embed every memory, run `mnemo reembed` with the new embedder configured, \
                         or configure the embedder this store was written with"
                    ),
                })
            }
            Some(_) => Ok(true),
            None => Ok(false),
        }
        };
        // The common case (every connect after the first): one read, no lock, no DDL.
        if self.with(|c| check(bound(c)?))? {
            return Ok(());
        }
        self.tx(|tx| {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&BIND_LOCK])
                .map_err(pg_err)?;
            if check(bound(tx)?)? {
                return Ok(()); // another server bound it meanwhile
            }
            set_binding(tx, model_id, dimension)
        })
    }

    pub(crate) fn rebind(
        &self,
        model_id: &str,
        dimension: usize,
        batch: usize,
        embed: &mut EmbedBatch<'_>,
    ) -> Result<u64> {
        Err(crate::not_yet("rebind"))
    }

    pub(crate) fn dense(
        &self,
        query: &CandidateQuery<'_>,
        vector: &[f32],
    ) -> Result<Vec<Candidate>> {
        Err(crate::not_yet("dense"))
    }

    pub(crate) fn lexical(
        &self,
        query: &CandidateQuery<'_>,
        terms: &[String],
    ) -> Result<Vec<Candidate>> {
        Err(crate::not_yet("lexical"))
    }

    pub(crate) fn exact_scores(&self, keys: &[i64], vector: &[f32]) -> Result<Vec<Candidate>> {
        Err(crate::not_yet("exact_scores"))
    }

    pub(crate) fn by_entities(
        &self,
        query: &CandidateQuery<'_>,
        names: &[String],
        pooled: &[i64],
    ) -> Result<Vec<Candidate>> {
        Err(crate::not_yet("by_entities"))
    }
}
