// Stubs until this module is implemented (issue 14); remove this allow with them.
#![allow(unused_variables, unused_imports, dead_code)]
//! Search candidates on PostgreSQL: pgvector HNSW dense candidates with the scope filter in
//! the query, full-text candidates from the database's own text search, exact vector scores,
//! entity candidates; binding and rebinding the embedding model.

use crate::PgStore;
use mnemo_core::tier::*;
use mnemo_core::*;

impl PgStore {
    pub(crate) fn bind(&self, model_id: &str, dimension: usize) -> Result<()> {
        Err(crate::not_yet("bind"))
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
