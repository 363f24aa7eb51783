//! [`mnemo_core::Retrieval`] on SQLite: dense candidates from the derived HNSW index, lexical
//! ones from the BM25 index, entity candidates, exact scores and loading hits.
use crate::ann::EXACT_MAX;
use crate::codec::*;
use crate::graph::matching_entities;
use crate::graph::EntityLookup;
use crate::predicate;
use crate::predicate::marks;
use crate::read::Prefilter;
use crate::read::*;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::params_from_iter;
use rusqlite::types::Value as Sql;
use std::collections::HashMap;

impl Retrieval for SqliteStore {
    fn vector_scores(&self, scoring: &ScoreQuery<'_>) -> Result<Vec<Candidate>> {
        // Read from the in-memory vector index, which knows each key's owner (the same check as
        // the graph's pre-filter): only the keys the query's scope owns are scored, as the trait
        // promises (a key of another owner scores nothing).
        let guard = self.ann.read();
        match guard.as_ref() {
            Some(ann) => ann.score_in_scope(scoring.vector, scoring.keys, scoring.query.scope),
            None => Ok(Vec::new()),
        }
    }

    fn dense_candidates(&self, q: &CandidateQuery<'_>, vector: &[f32]) -> Result<Vec<Candidate>> {
        self.read(|conn| {
            self.sync_ann_for_read(conn)?;
            let guard = self.ann.read();
            let Some(ann) = guard.as_ref() else {
                return Ok(Vec::new());
            };
            if vector.len() != ann.dim() {
                return Err(Error::invalid(
                    "vector",
                    format!(
                        "has {} dimensions, the store holds {}",
                        vector.len(),
                        ann.dim()
                    ),
                ));
            }
            let Some(ids) = ann.scope_ids(q.scope) else {
                return Ok(Vec::new());
            };
            // Few candidates (a small scope, a selective filter): score them exactly, since a
            // filtered graph search degrades there. A filter's key set is read once either way.
            let small = ann.scope_size(ids) <= EXACT_MAX;
            let keys = if small || q.filter.is_some() || q.read.as_of.is_some() {
                Some(Self::allowed_keys(conn, q)?)
            } else {
                None
            };
            if let Some(keys) = keys.as_ref().filter(|k| small || k.len() <= 4 * EXACT_MAX) {
                let mut scored = ann.score(vector, keys)?;
                scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.key.cmp(&b.key)));
                scored.truncate(q.limit);
                return Ok(scored);
            }
            let allowed = keys.map(|k| k.into_iter().collect());
            let hits = match Self::prefilter(ann, q, allowed) {
                Prefilter::Nothing => Vec::new(),
                Prefilter::All => ann.search(vector, q.limit, None::<fn(u64) -> bool>)?,
                Prefilter::Keep(keep) => ann.search(vector, q.limit, Some(keep))?,
            };
            Ok(hits)
        })
    }

    fn lexical_candidates(
        &self,
        q: &CandidateQuery<'_>,
        terms: &[String],
    ) -> Result<Vec<Candidate>> {
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            self.sync_ann_for_read(conn)?;
            let guard = self.ann.read();
            let Some(ann) = guard.as_ref() else {
                return Self::lexical_fts(conn, q, terms);
            };
            let allowed = if q.filter.is_some() || q.read.as_of.is_some() {
                Some(Self::allowed_keys(conn, q)?.into_iter().collect())
            } else {
                None
            };
            let hits = match Self::prefilter(ann, q, allowed) {
                Prefilter::Nothing => Vec::new(),
                Prefilter::All => ann.lex.search(terms, q.limit, |_| true),
                // Every key `keep` passes belongs to each part of the scope, so to the
                // members of its least common one: a small scope is scored from its own.
                Prefilter::Keep(keep) => {
                    let members = ann
                        .scope_ids(q.scope)
                        .and_then(|ids| ann.scope_members(ids));
                    ann.lex.search_among(terms, q.limit, members, keep)
                }
            };
            Ok(hits
                .into_iter()
                .map(|(key, score)| Candidate {
                    key: key as i64,
                    score,
                })
                .collect())
        })
    }

    fn fetch(&self, q: &CandidateQuery<'_>, keys: &[i64]) -> Result<Vec<(i64, Memory)>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let mut p = candidate_pred_with(q, true)?;
            let marks = predicate::marks(keys.len());
            p.push(
                &format!("m.seq IN ({marks})"),
                keys.iter().map(|k| Sql::Integer(*k)),
            );
            with_sources(conn, query_memories(conn, &p.where_sql(), "", &p.params)?)
        })
    }

    fn entity_candidates(&self, entities: &EntityQuery<'_>) -> Result<Vec<Candidate>> {
        if entities.finds_nothing() {
            return Ok(Vec::new());
        }
        let (q, names, pooled) = (&entities.query, entities.names, entities.pooled);
        self.read(|conn| {
            let lookup = EntityLookup::covered(q.scope);
            let mut matched = EntityMatches::new(names.len());
            for (i, name) in names.iter().enumerate() {
                for n in matching_entities(conn, &lookup, name, false)? {
                    matched.add(i, n.id, n.mentions);
                }
            }
            if matched.is_empty() {
                return Ok(Vec::new());
            }
            // A rare entity's memories are all candidates; a common one (a speaker on every
            // other memory) only scores the pooled keys (see `EntityMatches::split`).
            let (rare, common) = matched.split(q.limit);
            let mut per_memory: HashMap<i64, Vec<String>> = HashMap::new();
            let mut collect = |sql: &str, params: &[Sql]| -> Result<()> {
                let mut stmt = conn.prepare_cached(sql).map_err(sql_err)?;
                let rows = stmt
                    .query_map(params_from_iter(params.iter()), |r| {
                        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                    })
                    .map_err(sql_err)?;
                for r in rows {
                    let (seq, entity) = r.map_err(sql_err)?;
                    if matched.contains(&entity) {
                        per_memory.entry(seq).or_default().push(entity);
                    }
                }
                Ok(())
            };
            if !rare.is_empty() {
                // Driven by the entity links: a scope index would scan every memory of the scope
                // (measured 47 ms per search at 100,000 memories, against 0.1 ms this way).
                let mut p = crate::read::candidate_pred_with(q, true)?;
                p.push(
                    &format!("em.entity_id IN ({})", marks(rare.len())),
                    rare.iter().map(|k| Sql::Text(k.clone())),
                );
                collect(
                    &format!(
                        "SELECT m.seq, em.entity_id FROM entity_memories em JOIN memories m ON m.seq = em.memory_seq WHERE {}",
                        p.where_sql()
                    ),
                    &p.params,
                )?;
            }
            if !common.is_empty() && !pooled.is_empty() {
                // The pooled keys already passed the scope and filters on their own side; all of
                // a key's links are read from the key index and the matched ones kept.
                collect(
                    &format!(
                        "SELECT memory_seq, entity_id FROM entity_memories INDEXED BY entity_memories_by_seq \
                         WHERE memory_seq IN ({})",
                        marks(pooled.len()),
                    ),
                    &pooled.iter().map(|k| Sql::Integer(*k)).collect::<Vec<_>>(),
                )?;
            }
            // Informativeness of a name: BM25's idf with the entity's link count as its document
            // frequency and the scope's indexed memories (the vector index keeps that count) as
            // N, so a name on every other memory counts little and a rare one a lot.
            self.sync_ann_for_read(conn)?;
            let total = self
                .ann
                .read()
                .as_ref()
                .and_then(|a| a.scope_ids(q.scope).map(|ids| a.scope_size(ids)))
                .unwrap_or(0) as u64;
            let mut out = matched.scores(per_memory, total);
            out.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.key.cmp(&a.key)));
            out.truncate(q.limit);
            Ok(out)
        })
    }
}
