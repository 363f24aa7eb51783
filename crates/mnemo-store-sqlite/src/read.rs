//! The read half of the store: get, list, history, candidates for search, export and checks.
//! Every query builds its WHERE clause from `predicate`, so scope and visibility are uniform.

use crate::ann::EXACT_MAX;
use crate::codec::*;
use crate::predicate::{self, Pred};
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection, OptionalExtension};
use std::collections::{HashMap, HashSet};

pub(crate) fn sources_of(
    conn: &Connection,
    ids: &[MemoryId],
) -> Result<HashMap<MemoryId, Vec<MessageId>>> {
    let mut out: HashMap<MemoryId, Vec<MessageId>> = HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let marks = predicate::marks(ids.len());
    let sql = format!(
        "SELECT s.memory_id, s.message_id FROM memory_sources s LEFT JOIN messages g ON g.id = s.message_id \
         WHERE s.memory_id IN ({marks}) ORDER BY s.memory_id, g.seq"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
    let mut rows = stmt
        .query(params_from_iter(ids.iter().map(|i| i.to_string())))
        .map_err(sql_err)?;
    while let Some(r) = rows.next().map_err(sql_err)? {
        let m: String = r.get(0).map_err(sql_err)?;
        let g: String = r.get(1).map_err(sql_err)?;
        out.entry(MemoryId::parse(&m)?)
            .or_default()
            .push(MessageId::parse(&g)?);
    }
    Ok(out)
}

pub(crate) fn with_sources(
    conn: &Connection,
    mut rows: Vec<(i64, Memory)>,
) -> Result<Vec<(i64, Memory)>> {
    let ids: Vec<MemoryId> = rows.iter().map(|(_, m)| m.id).collect();
    let mut sources = sources_of(conn, &ids)?;
    for (_, m) in &mut rows {
        m.sources = sources.remove(&m.id).unwrap_or_default();
    }
    Ok(rows)
}

pub(crate) fn query_memories(
    conn: &Connection,
    where_sql: &str,
    tail: &str,
    params: &[Sql],
) -> Result<Vec<(i64, Memory)>> {
    let sql = format!("SELECT {MEMORY_COLS} FROM memories m WHERE {where_sql} {tail}");
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
    let rows = stmt
        .query_map(params_from_iter(params.iter()), memory_from_row)
        .map_err(sql_err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
}

/// Scope, visibility, kinds and filter for a candidate query.
pub(crate) fn candidate_pred(q: &CandidateQuery<'_>) -> Result<Pred> {
    candidate_pred_with(q, false)
}

/// `by_key`: the rows are reached through another table's index (keys, entity links), so the
/// scope test must not tempt SQLite into scanning the whole scope instead.
pub(crate) fn candidate_pred_with(q: &CandidateQuery<'_>, by_key: bool) -> Result<Pred> {
    let mut p = Pred::default();
    if by_key {
        predicate::scope_unindexed(&mut p, "m", q.scope);
    } else {
        predicate::scope(&mut p, "m", q.scope);
    }
    predicate::visibility(&mut p, "m", &q.read);
    predicate::kinds(&mut p, "m", q.kinds);
    if let Some(f) = q.filter {
        predicate::filter(&mut p, "m", f)?;
    }
    Ok(p)
}

/// How the derived indexes apply a candidate query's predicate.
enum Prefilter<F> {
    Nothing,
    All,
    Keep(F),
}

/// The list cursor codec ([`mnemo_core::CursorCodec`]) with this store's key: random per store,
/// kept in `meta` so cursors survive restarts.
pub(crate) use mnemo_core::CursorCodec as Cursors;

/// The store's cursor codec, its key made on first use.
pub(crate) fn load_cursors(conn: &Connection) -> Result<Cursors> {
    let fresh = {
        use rand::RngCore;
        let mut b = [0u8; 32];
        rand::rng().fill_bytes(&mut b);
        hex::encode(b)
    };
    // Read-only handles (a second process) find the key already there.
    let _ = conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('cursor_key', ?1)",
        [&fresh],
    );
    let stored: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'cursor_key'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql_err)?;
    Cursors::from_hex(&stored.unwrap_or(fresh))
}

/// FTS5 query: each term quoted (so no term is read as syntax), any term may match.
fn fts_query(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

impl SqliteStore {
    pub(crate) fn get_memory(
        &self,
        scope: &Scope,
        id: MemoryId,
        read: &ReadOptions,
    ) -> Result<Memory> {
        scope.validate()?;
        self.read(|conn| {
            let mut p = Pred::default();
            p.push("m.id = ?", [Sql::Text(id.to_string())]);
            predicate::scope(&mut p, "m", scope);
            predicate::visibility(&mut p, "m", read);
            let rows = with_sources(conn, query_memories(conn, &p.where_sql(), "", &p.params)?)?;
            rows.into_iter()
                .next()
                .map(|(_, m)| m)
                .ok_or_else(|| Error::not_found("memory", id))
        })
    }

    pub(crate) fn owner(&self, id: MemoryId) -> Result<Scope> {
        self.read(|conn| {
            let row: Option<(Option<String>, Option<String>, Option<String>)> = conn
                .query_row(
                    "SELECT user_id, agent_id, run_id FROM memories WHERE id = ?1",
                    [id.to_string()],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .map_err(sql_err)?;
            let (u, a, r) = row.ok_or_else(|| Error::not_found("memory", id))?;
            Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref())
        })
    }

    pub(crate) fn owner_counts(&self) -> Result<Vec<(Scope, u64)>> {
        self.read(|conn| {
            let mut p = Pred::default();
            predicate::visibility(&mut p, "m", &ReadOptions::default());
            let sql = format!(
                "SELECT m.user_id, m.agent_id, m.run_id, COUNT(*) FROM memories m WHERE {}
                 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
                p.where_sql()
            );
            let mut stmt = conn.prepare(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, i64>(3)?,
                    ))
                })
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for row in rows {
                let (u, a, r, n) = row.map_err(sql_err)?;
                out.push((
                    Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref())?,
                    n as u64,
                ));
            }
            Ok(out)
        })
    }

    pub(crate) fn list_memories(&self, q: &ListQuery) -> Result<Page> {
        q.scope.validate()?;
        if q.limit == 0 || q.limit > 1000 {
            return Err(Error::invalid("limit", "must be between 1 and 1000"));
        }
        let after = q
            .cursor
            .as_deref()
            .map(|c| self.cursors.decode(&q.scope, c))
            .transpose()?
            .unwrap_or(0);
        self.read(|conn| {
            let cq = CandidateQuery {
                scope: &q.scope,
                kinds: q.kinds.as_deref(),
                filter: q.filter.as_ref(),
                read: q.read,
                limit: q.limit,
            };
            let mut p = candidate_pred(&cq)?;
            p.push("m.seq > ?", [Sql::Integer(after)]);
            let tail = format!("ORDER BY m.seq LIMIT {}", q.limit + 1);
            let mut rows = with_sources(
                conn,
                query_memories(conn, &p.where_sql(), &tail, &p.params)?,
            )?;
            let next_cursor = if rows.len() > q.limit {
                rows.truncate(q.limit);
                rows.last()
                    .map(|(seq, _)| self.cursors.encode(&q.scope, *seq))
            } else {
                None
            };
            Ok(Page {
                results: rows.into_iter().map(|(_, m)| m).collect(),
                next_cursor,
            })
        })
    }

    /// The count and the positioned cursor of [`Store::locate`]: one `COUNT` and one `OFFSET`
    /// read over the listing's own index order, in one read transaction.
    pub(crate) fn locate_memories(&self, q: &ListQuery, skip: u64) -> Result<ListPosition> {
        q.scope.validate()?;
        self.read(|conn| {
            let cq = CandidateQuery {
                scope: &q.scope,
                kinds: q.kinds.as_deref(),
                filter: q.filter.as_ref(),
                read: q.read,
                limit: 1,
            };
            let p = candidate_pred(&cq)?;
            let tx = conn.unchecked_transaction().map_err(sql_err)?;
            let total: i64 = tx
                .prepare_cached(&format!(
                    "SELECT COUNT(*) FROM memories m WHERE {}",
                    p.where_sql()
                ))
                .and_then(|mut st| st.query_row(params_from_iter(p.params.iter()), |r| r.get(0)))
                .map_err(sql_err)?;
            let total = u64::try_from(total).unwrap_or(0);
            let cursor = if skip == 0 || skip >= total {
                None
            } else {
                let offset = i64::try_from(skip - 1).map_err(|_| Error::invalid("page", "too large"))?;
                let seq: i64 = tx
                    .prepare_cached(&format!(
                        "SELECT m.seq FROM memories m WHERE {} ORDER BY m.seq LIMIT 1 OFFSET {offset}",
                        p.where_sql()
                    ))
                    .and_then(|mut st| {
                        st.query_row(params_from_iter(p.params.iter()), |r| r.get(0))
                    })
                    .map_err(sql_err)?;
                Some(self.cursors.encode(&q.scope, seq))
            };
            tx.finish().map_err(sql_err)?;
            Ok(ListPosition { total, cursor })
        })
    }

    pub(crate) fn history_of(
        &self,
        scope: &Scope,
        id: MemoryId,
        read: &ReadOptions,
    ) -> Result<Vec<HistoryEvent>> {
        scope.validate()?;
        self.read(|conn| {
            // A memory that still exists must be visible to the scope (expiry included; state not:
            // the history of a deleted memory stays readable). A hard-deleted memory's history is
            // checked against the scope recorded on its history rows.
            let exists: bool = conn
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM memories WHERE id = ?1)",
                    [id.to_string()],
                    |r| r.get(0),
                )
                .map_err(sql_err)?;
            if exists {
                let mut p = Pred::default();
                p.push("m.id = ?", [Sql::Text(id.to_string())]);
                predicate::scope(&mut p, "m", scope);
                predicate::visibility(
                    &mut p,
                    "m",
                    &ReadOptions {
                        include_inactive: true,
                        ..*read
                    },
                );
                if query_memories(conn, &p.where_sql(), "", &p.params)?.is_empty() {
                    return Err(Error::not_found("memory", id));
                }
            }
            let mut p = Pred::default();
            p.push("h.memory_id = ?", [Sql::Text(id.to_string())]);
            predicate::scope(&mut p, "h", scope);
            let sql = format!(
                "SELECT {HISTORY_COLS} FROM history h WHERE {} ORDER BY h.id",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let events = stmt
                .query_map(params_from_iter(p.params.iter()), history_from_row)
                .map_err(sql_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql_err)?;
            if events.is_empty() {
                return Err(Error::not_found("memory", id));
            }
            Ok(events)
        })
    }

    /// Every key the candidate predicate admits (scope, visibility, kinds, filter), in SQL.
    fn allowed_keys(conn: &Connection, q: &CandidateQuery<'_>) -> Result<Vec<i64>> {
        let p = candidate_pred(q)?;
        let sql = format!("SELECT m.seq FROM memories m WHERE {}", p.where_sql());
        let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
        let rows = stmt
            .query_map(params_from_iter(p.params.iter()), |r| r.get(0))
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<Vec<i64>>>()
            .map_err(sql_err)
    }

    /// Decides how the derived indexes apply the candidate predicate: not at all when the
    /// query sees every indexed entry, nothing when the scope names a part never indexed, else a
    /// closure over index keys. `allowed` is the key set a metadata filter resolved to in SQL.
    fn prefilter<'b, 'q: 'b>(
        ann: &'b crate::ann::Ann,
        q: &CandidateQuery<'q>,
        allowed: Option<HashSet<i64>>,
    ) -> Prefilter<impl Fn(u64) -> bool + 'b> {
        let Some(ids) = ann.scope_ids(q.scope) else {
            return Prefilter::Nothing;
        };
        let kinds = q.kinds.filter(|k| !k.is_empty());
        if allowed.is_none() && kinds.is_none() && ann.covers_all(ids) {
            // `fetch` re-checks every hit in SQL anyway.
            return Prefilter::All;
        }
        let read = q.read;
        // An as-of read needs validity times the index does not keep: its admitted keys come
        // from SQL (`allowed`), which applies the whole rule.
        let by_rule = read.as_of.is_none();
        Prefilter::Keep(move |key: u64| -> bool {
            let Some(info) = ann.info(key) else {
                return false;
            };
            info.in_scope(ids)
                && (!by_rule || read.admits(&info.validity()))
                && kinds.is_none_or(|k| k.contains(&info.kind))
                && allowed.as_ref().is_none_or(|s| s.contains(&(key as i64)))
        })
    }

    pub(crate) fn dense(&self, q: &CandidateQuery<'_>, vector: &[f32]) -> Result<Vec<Candidate>> {
        q.scope.validate()?;
        self.read(|conn| {
            self.sync_ann(conn)?;
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

    pub(crate) fn lexical(
        &self,
        q: &CandidateQuery<'_>,
        terms: &[String],
    ) -> Result<Vec<Candidate>> {
        q.scope.validate()?;
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            self.sync_ann(conn)?;
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
                Prefilter::Keep(keep) => ann.lex.search(terms, q.limit, keep),
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

    /// BM25 straight from FTS5 (before any embedder is bound, the derived index does not exist).
    fn lexical_fts(
        conn: &Connection,
        q: &CandidateQuery<'_>,
        terms: &[String],
    ) -> Result<Vec<Candidate>> {
        let mut p = Pred::default();
        p.push("memories_fts MATCH ?", [Sql::Text(fts_query(terms))]);
        let rest = candidate_pred(q)?;
        p.push(&rest.where_sql(), rest.params);
        let sql = format!(
            "SELECT m.seq, -bm25(memories_fts) FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid \
             WHERE {} ORDER BY bm25(memories_fts) LIMIT {}",
            p.where_sql(),
            q.limit
        );
        let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
        let rows = stmt
            .query_map(params_from_iter(p.params.iter()), |r| {
                Ok(Candidate {
                    key: r.get(0)?,
                    score: r.get::<_, f64>(1)? as f32,
                })
            })
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
    }

    /// Exact scores of the `keys` that memories of `scope` hold, read from the in-memory
    /// vector index, which knows each key's owner (the same check as the graph's pre-filter).
    pub(crate) fn scores(
        &self,
        scope: &Scope,
        keys: &[i64],
        vector: &[f32],
    ) -> Result<Vec<Candidate>> {
        scope.validate()?;
        let guard = self.ann.read();
        match guard.as_ref() {
            Some(ann) => ann.score_in_scope(vector, keys, scope),
            None => Ok(Vec::new()),
        }
    }

    pub(crate) fn fetch_keys(
        &self,
        q: &CandidateQuery<'_>,
        keys: &[i64],
    ) -> Result<Vec<(i64, Memory)>> {
        q.scope.validate()?;
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

    pub(crate) fn recent_messages(
        &self,
        scope: &Scope,
        session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        scope.validate()?;
        self.read(|conn| {
            let mut p = Pred::default();
            predicate::scope(&mut p, "g", scope);
            if let Some(s) = session {
                p.push("g.session_id = ?", [Sql::Text(s.into())]);
            }
            let sql = format!(
                "SELECT * FROM (SELECT g.seq AS seq, {MESSAGE_COLS} FROM messages g WHERE {} ORDER BY g.seq DESC LIMIT {limit}) ORDER BY seq",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), |r| {
                    // Skip the leading seq column.
                    message_from_row_offset(r)
                })
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
        })
    }

    pub(crate) fn messages_with_ids(
        &self,
        scope: &Scope,
        ids: &[MessageId],
    ) -> Result<Vec<Message>> {
        scope.validate()?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let mut p = Pred::default();
            predicate::scope_unindexed(&mut p, "g", scope);
            let marks = predicate::marks(ids.len());
            p.push(
                &format!("g.id IN ({marks})"),
                ids.iter().map(|i| Sql::Text(i.to_string())),
            );
            let sql = format!(
                "SELECT g.seq, {MESSAGE_COLS} FROM messages g WHERE {} ORDER BY g.seq",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), message_from_row_offset)
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
        })
    }

    /// Raw memories (any state) whose message is among `ids`, of (or under) the scope.
    pub(crate) fn raw_memories_of(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Memory>> {
        scope.validate()?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let mut out = Vec::new();
            for chunk in ids.chunks(500) {
                let mut p = Pred::default();
                predicate::scope_unindexed(&mut p, "m", scope);
                let marks = predicate::marks(chunk.len());
                p.push(
                    &format!(
                        "m.kind = 'raw' AND m.id IN (SELECT memory_id FROM memory_sources \
                         WHERE message_id IN ({marks}))"
                    ),
                    chunk.iter().map(|i| Sql::Text(i.to_string())),
                );
                let rows =
                    with_sources(conn, query_memories(conn, &p.where_sql(), "", &p.params)?)?;
                out.extend(rows.into_iter().map(|(_, m)| m));
            }
            Ok(out)
        })
    }

    pub(crate) fn export_all(
        &self,
        sink: &mut dyn FnMut(ExportRecord) -> Result<()>,
    ) -> Result<()> {
        self.read(|conn| {
            let tx = conn.unchecked_transaction().map_err(sql_err)?;
            {
                let mut stmt = tx
                    .prepare(&format!(
                        "SELECT g.seq, {MESSAGE_COLS} FROM messages g ORDER BY g.seq"
                    ))
                    .map_err(sql_err)?;
                let mut rows = stmt.query([]).map_err(sql_err)?;
                while let Some(r) = rows.next().map_err(sql_err)? {
                    sink(ExportRecord::Message(Box::new(
                        message_from_row_offset(r).map_err(sql_err)?,
                    )))?;
                }
            }
            let mut after = 0i64;
            loop {
                let batch = with_sources(
                    &tx,
                    query_memories(
                        &tx,
                        "m.seq > ?",
                        "ORDER BY m.seq LIMIT 500",
                        &[Sql::Integer(after)],
                    )?,
                )?;
                let Some((last, _)) = batch.last() else { break };
                after = *last;
                for (_, m) in batch {
                    sink(ExportRecord::Memory(Box::new(m)))?;
                }
            }
            Self::export_links(&tx, sink)?;
            crate::transfer::export_rest(&tx, sink)?;
            tx.finish().map_err(sql_err)
        })
    }

    pub(crate) fn check(&self) -> Result<IntegrityReport> {
        let conn = self.writer.lock();
        self.sync_ann(&conn)?;
        let count = |sql: &str| -> Result<u64> {
            conn.query_row(sql, [], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .map_err(sql_err)
        };
        Ok(IntegrityReport {
            memories: count("SELECT COUNT(*) FROM memories")?,
            indexed_memories: count("SELECT COUNT(*) FROM memories WHERE state <> 'deleted'")?,
            lexical_rows: count("SELECT COUNT(*) FROM memories_fts")?,
            vectors: count("SELECT COUNT(*) FROM vectors v JOIN memories m ON m.seq = v.seq")?,
            memories_without_add_history: count(
                "SELECT COUNT(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM history h WHERE h.memory_id = m.id AND h.event = 'ADD')",
            )?,
            ann_entries: self.ann.read().as_ref().map_or(0, |a| a.len() as u64),
            lexical_index_entries: self.ann.read().as_ref().map_or(0, |a| a.lex.docs()),
            messages: count("SELECT COUNT(*) FROM messages")?,
            entities_with_wrong_mentions: count(
                "SELECT COUNT(*) FROM entities e WHERE e.mentions <> \
                 (SELECT COUNT(*) FROM entity_memories em WHERE em.entity_id = e.id)",
            )?,
            pages: count("SELECT COUNT(*) FROM pages")?,
            mid_pages_without_segment: crate::tiers::inconsistent_pages(&conn)?,
        })
    }

    pub(crate) fn statistics(&self) -> Result<StoreStats> {
        self.read(|conn| {
            let count = |sql: &str| -> Result<u64> {
                conn.query_row(sql, [], |r| r.get::<_, i64>(0))
                    .map(|n| n as u64)
                    .map_err(sql_err)
            };
            let model: Option<String> = conn
                .query_row(
                    "SELECT value FROM meta WHERE key = 'embedding_model'",
                    [],
                    |r| r.get(0),
                )
                .ok();
            let file_bytes = self.path().map_or(0, |p| {
                let mut total = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
                let mut wal = p.as_os_str().to_owned();
                wal.push("-wal");
                total += std::fs::metadata(std::path::PathBuf::from(wal))
                    .map(|m| m.len())
                    .unwrap_or(0);
                total
            });
            Ok(StoreStats {
                schema_version: crate::SCHEMA_VERSION,
                memories: count("SELECT COUNT(*) FROM memories WHERE state = 'active'")?,
                messages: count("SELECT COUNT(*) FROM messages")?,
                file_bytes,
                embedding_model: model,
                dimension: crate::read_dimension(conn)?,
            })
        })
    }
}

pub(crate) fn message_from_row_offset(r: &rusqlite::Row<'_>) -> rusqlite::Result<Message> {
    // Rows here start with `seq`; read the message columns after it.
    let role: String = r.get(6)?;
    Ok(Message {
        id: MessageId(uuid::Uuid::parse_str(&r.get::<_, String>(1)?).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
        })?),
        user_id: r.get(2)?,
        agent_id: r.get(3)?,
        run_id: r.get(4)?,
        session_id: r.get(5)?,
        role: role.parse().map_err(|e: Error| {
            rusqlite::Error::FromSqlConversionFailure(6, rusqlite::types::Type::Text, Box::new(e))
        })?,
        name: r.get(7)?,
        content: r.get(8)?,
        created_at: from_ms(r.get(9)?),
    })
}
