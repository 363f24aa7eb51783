//! [`mnemo_core::Retrieval`] on PostgreSQL: pgvector dense candidates, lexical ones from the
//! maintained BM25 statistics, entity candidates, exact scores and loading hits.
use crate::codec::keyed_memory_from_row;
use crate::codec::MEMORY_COLUMNS;
use crate::lexical::DEPTH;
use crate::lexical::KEEP_FACTOR;
use crate::lexical::MAX_TERMS;
use crate::pg_err;
use crate::predicate;
use crate::predicate::Pred;
use crate::search::candidate_pred;
use crate::search::candidate_pred_into;
use crate::search::entity::matching;
use crate::search::old_pgvector;
use crate::search::ranked;
use crate::search::similarity;
use crate::search::*;
use crate::PgStore;
use mnemo_core::*;
use pgvector::Vector;
use std::collections::HashMap;
use uuid::Uuid;

impl Retrieval for PgStore {
    fn dense_candidates(&self, q: &CandidateQuery<'_>, vector: &[f32]) -> Result<Vec<Candidate>> {
        if q.limit == 0 {
            return Ok(Vec::new());
        }
        self.with_conn(|c| {
            let Some(dim) = self.dim(c)? else {
                return Ok(Vec::new());
            };
            check_vector("vector", vector, dim)?;
            // With the filter in the query, an HNSW scan that stopped at `ef_search` entries
            // could return fewer rows than asked; pgvector 0.8's iterative scan goes on through
            // the graph until the limit is met (or `hnsw.max_scan_tuples`). Relaxed order is
            // why the rows are sorted again below. Both are session settings of the pooled
            // connection, set again only when the `ef_search` a query needs changes.
            let ef = ef_search(c, q.limit)?;
            if c.ef_search != Some(ef) {
                c.client
                    .batch_execute(&format!(
                        "SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = {ef}"
                    ))
                    .map_err(old_pgvector)?;
                c.ef_search = Some(ef);
            }
            let mut p = candidate_pred(q)?;
            p.and("m.embedding IS NOT NULL");
            let v = p.arg(Vector::from(vector.to_vec()));
            let limit = p.arg(q.limit as i64);
            let query = |order: &str| {
                format!(
                    "SELECT m.seq, m.embedding <=> {v} FROM memories m WHERE {} \
                     ORDER BY {order} LIMIT {limit}",
                    p.where_sql()
                )
            };
            let by_index = query(&format!("m.embedding <=> {v}"));
            let mut rows = self.vector_query(c, &by_index, &p.params(), vector)?;
            if rows.len() < q.limit {
                // Short: either the candidates are fewer than the limit, or the iterative scan
                // gave up at `hnsw.max_scan_tuples` under a filter few rows pass. An order the
                // HNSW index cannot serve (the distance plus 0) makes the scan exact: a scope
                // index or the table is read and sorted.
                let exact = query(&format!("(m.embedding <=> {v}) + 0"));
                rows = self.vector_query(c, &exact, &p.params(), vector)?;
            }
            Ok(ranked(rows.iter().map(similarity).collect()))
        })
    }

    fn lexical_candidates(
        &self,
        q: &CandidateQuery<'_>,
        terms: &[String],
    ) -> Result<Vec<Candidate>> {
        let mut words: Vec<&str> = terms.iter().map(String::as_str).collect();
        words.sort_unstable();
        words.dedup();
        words.truncate(MAX_TERMS);
        if words.is_empty() || q.limit == 0 {
            return Ok(Vec::new());
        }
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        self.with_conn(|c| {
            let limit = q.limit as i64;
            let (mut depth, mut keep) = (DEPTH.max(limit), (limit * KEEP_FACTOR).max(64));
            loop {
                let (found, st) = crate::lexical::ranked(c, q, &words, depth, keep)?;
                let whole = depth >= st.max_df && keep >= st.sum_df;
                if found.len() >= q.limit || whole {
                    return Ok(found);
                }
                depth = depth.saturating_mul(4);
                keep = keep.saturating_mul(4);
            }
        })
    }

    fn vector_scores(&self, scoring: &ScoreQuery<'_>) -> Result<Vec<Candidate>> {
        let (keys, vector) = (scoring.keys, scoring.vector);
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.with_conn(|c| {
            let Some(dim) = self.dim(c)? else {
                return Ok(Vec::new());
            };
            check_vector("vector", vector, dim)?;
            let mut p = Pred::default();
            predicate::scope(&mut p, "m", scoring.query.scope);
            let v = p.arg(Vector::from(vector.to_vec()));
            let k = p.arg(keys.to_vec());
            p.and(&format!(
                "m.seq = ANY({k}::bigint[]) AND m.embedding IS NOT NULL"
            ));
            let sql = format!(
                "SELECT m.seq, m.embedding <=> {v} FROM memories m WHERE {}",
                p.where_sql()
            );
            let rows = self.vector_query(c, &sql, &p.params(), vector)?;
            Ok(rows.iter().map(similarity).collect())
        })
    }

    fn fetch(&self, q: &CandidateQuery<'_>, keys: &[i64]) -> Result<Vec<(i64, Memory)>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut p = predicate::candidate(q)?;
        let a = p.arg(keys.to_vec());
        p.and(&format!("m.seq = ANY({a}::bigint[])"));
        // One statement with each memory's sources beside it (`with_sources` reads them on a
        // second): a search fetches on its critical path, from its statement cache.
        let sql = format!(
            "SELECT {MEMORY_COLUMNS}, ARRAY(SELECT s.message_id FROM memory_sources s \
             LEFT JOIN messages g ON g.scope_key = s.scope_key AND g.id = s.message_id \
             WHERE s.scope_key = m.scope_key AND s.memory_id = m.id \
             ORDER BY g.seq NULLS FIRST, s.message_id) AS sources \
             FROM memories m WHERE {} ORDER BY m.seq",
            p.where_sql()
        );
        self.with_conn(|c| {
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            rows.iter()
                .map(|r| {
                    let (key, mut m) = keyed_memory_from_row(r)?;
                    let sources: Vec<uuid::Uuid> = crate::codec::col(r, "sources")?;
                    m.sources = sources.into_iter().map(MessageId).collect();
                    Ok((key, m))
                })
                .collect()
        })
    }

    fn entity_candidates(&self, entities: &EntityQuery<'_>) -> Result<Vec<Candidate>> {
        if entities.finds_nothing() {
            return Ok(Vec::new());
        }
        let (q, names, pooled) = (&entities.query, entities.names, entities.pooled);
        self.with_conn(|c| {
            // entity id → (memories it is linked to, which query names it matched)
            let matched = matching(c, q.scope, names)?;
            if matched.is_empty() {
                return Ok(Vec::new());
            }
            let (rare, common) = matched.split(q.limit);
            // One statement: the scope's indexed memories (every one not deleted) from the
            // per-owner counts the lexical triggers keep (counting the rows read the whole scope
            // on every search); the memories of rare entities, with the candidate predicate on
            // each; the pooled keys linked to common ones (they passed the scope and filters on
            // their own side already; the scope stays in the query all the same). A part with
            // nothing to look for is left out: each mention of `memories` costs planning time.
            let mut p = Pred::default();
            predicate::scope(&mut p, "s", q.scope);
            let mut sql = format!(
                "SELECT NULL::bigint, NULL::uuid, COALESCE(sum(s.docs), 0)::bigint \
                 FROM lexical_scopes s WHERE {}",
                p.take_sql()
            );
            if !rare.is_empty() {
                candidate_pred_into(&mut p, q)?;
                let walk = p.take_sql();
                let rare = p.arg(rare);
                sql.push_str(&format!(
                    " UNION ALL SELECT m.seq, em.entity_id, NULL FROM entity_memories em \
                     JOIN memories m ON m.scope_key = em.scope_key AND m.id = em.memory_id \
                     WHERE {walk} AND em.entity_id = ANY({rare}::uuid[])"
                ));
            }
            if !common.is_empty() && !pooled.is_empty() {
                predicate::scope(&mut p, "m", q.scope);
                let scope = p.take_sql();
                let (common, pooled) = (p.arg(common), p.arg(pooled.to_vec()));
                sql.push_str(&format!(
                    " UNION ALL SELECT m.seq, em.entity_id, NULL FROM memories m \
                     JOIN entity_memories em ON em.scope_key = m.scope_key AND em.memory_id = m.id \
                     WHERE {scope} AND m.seq = ANY({pooled}::bigint[]) \
                     AND em.entity_id = ANY({common}::uuid[])"
                ));
            }
            let mut per_memory: HashMap<i64, Vec<Uuid>> = HashMap::new();
            let mut total = 0i64;
            for r in c.query(&sql, &p.params()).map_err(pg_err)? {
                match r.get::<_, Option<i64>>(0) {
                    Some(key) => {
                        let entities = per_memory.entry(key).or_default();
                        let id: Uuid = r.get(1);
                        if !entities.contains(&id) {
                            entities.push(id);
                        }
                    }
                    None => total = r.get(2),
                }
            }
            let mut out = ranked(matched.scores(per_memory, total.max(0) as u64));
            out.truncate(q.limit);
            Ok(out)
        })
    }
}
