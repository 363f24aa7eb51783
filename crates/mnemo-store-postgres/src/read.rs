//! The read path on PostgreSQL: get, list (with cursors), locate, history, fetch by candidate
//! key, duplicates by hash and owners. Links, entities and messages are in `read/graph.rs` and
//! `read/log.rs`; the checks and counts in `read/report.rs`.
//!
//! Every memory query builds its WHERE clause in `predicate`, so the scope and the visibility
//! rule are written once. A scope covers the records whose parts match the ones it names (a
//! user's scope sees that user's agent and run records), as in the embedded store.

mod cursor;
mod graph;
mod log;
mod report;
mod sessions;

pub(crate) use mnemo_core::CursorCodec as Cursors;

use crate::codec::{keyed_memory_from_row, scope_from_row, HISTORY_COLUMNS, MEMORY_COLUMNS};
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::{GenericClient, IsolationLevel};
use std::collections::HashMap;

/// Memories matching `p` (on `memories` aliased `m`), `tail` (ORDER BY, LIMIT) appended, as
/// `(seq, memory)` with their sources.
pub(crate) fn query_memories(
    c: &mut impl GenericClient,
    p: &Pred,
    tail: &str,
) -> Result<Vec<(i64, Memory)>> {
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM memories m WHERE {} {tail}",
        p.where_sql()
    );
    let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
    let memories = rows
        .iter()
        .map(keyed_memory_from_row)
        .collect::<Result<Vec<_>>>()?;
    with_sources(c, memories)
}

/// Fills each memory's `sources` (its messages in the order they were appended).
pub(crate) fn with_sources(
    c: &mut impl GenericClient,
    mut rows: Vec<(i64, Memory)>,
) -> Result<Vec<(i64, Memory)>> {
    if rows.is_empty() {
        return Ok(rows);
    }
    // (scope_key, memory_id) pairs: the primary key of memory_sources.
    let mut keys = Vec::with_capacity(rows.len());
    let mut ids = Vec::with_capacity(rows.len());
    for (_, m) in &rows {
        keys.push(m.scope()?.key());
        ids.push(m.id.0);
    }
    let found = c
        .query(
            "SELECT s.memory_id, s.message_id FROM memory_sources s \
             LEFT JOIN messages g ON g.scope_key = s.scope_key AND g.id = s.message_id \
             WHERE (s.scope_key, s.memory_id) IN (SELECT * FROM unnest($1::text[], $2::uuid[])) \
             ORDER BY s.memory_id, g.seq NULLS FIRST, s.message_id",
            &[&keys, &ids],
        )
        .map_err(pg_err)?;
    let mut sources: HashMap<uuid::Uuid, Vec<MessageId>> = HashMap::new();
    for r in &found {
        let m: uuid::Uuid = crate::codec::col(r, "memory_id")?;
        let g: uuid::Uuid = crate::codec::col(r, "message_id")?;
        sources.entry(m).or_default().push(MessageId(g));
    }
    for (_, m) in &mut rows {
        m.sources = sources.remove(&m.id.0).unwrap_or_default();
    }
    Ok(rows)
}

/// The exact owner key of a memory of (or under) `scope`, in any state and expiry; `None` when
/// the scope has no such memory.
pub(crate) fn owned_key(
    c: &mut impl GenericClient,
    scope: &Scope,
    id: MemoryId,
) -> Result<Option<String>> {
    let mut p = Pred::default();
    let a = p.arg(id.0);
    p.and(&format!("m.id = {a}"));
    predicate::scope(&mut p, "m", scope);
    let sql = format!(
        "SELECT m.scope_key FROM memories m WHERE {} LIMIT 1",
        p.where_sql()
    );
    let row = c.query_opt(&sql, &p.params()).map_err(pg_err)?;
    Ok(row.map(|r| r.get(0)))
}

/// A listing's query as a candidate query (the same predicate for list and locate).
fn listing(q: &ListQuery) -> CandidateQuery<'_> {
    CandidateQuery {
        scope: &q.scope,
        kinds: q.kinds.as_deref(),
        filter: q.filter.as_ref(),
        read: q.read,
        limit: q.limit,
    }
}

impl PgStore {
    /// The list cursor key, read (or made) on first use.
    fn cursors(&self) -> Result<&Cursors> {
        if let Some(c) = self.cursors.get() {
            return Ok(c);
        }
        let loaded = self.with(cursor::load)?;
        Ok(self.cursors.get_or_init(|| loaded))
    }

    pub(crate) fn get_memory(
        &self,
        scope: &Scope,
        id: MemoryId,
        read: &ReadOptions,
    ) -> Result<Memory> {
        scope.validate()?;
        self.with(|c| {
            let mut p = Pred::default();
            let a = p.arg(id.0);
            p.and(&format!("m.id = {a}"));
            predicate::scope(&mut p, "m", scope);
            predicate::visibility(&mut p, "m", read);
            query_memories(c, &p, "")?
                .into_iter()
                .next()
                .map(|(_, m)| m)
                .ok_or_else(|| Error::not_found("memory", id))
        })
    }

    /// One page in `seq` order after the cursor's position. Cursors hold a position, not an
    /// offset, so rows inserted while a caller pages never shift a page and none is repeated.
    pub(crate) fn list_memories(&self, q: &ListQuery) -> Result<Page> {
        q.scope.validate()?;
        if q.limit == 0 || q.limit > 1000 {
            return Err(Error::invalid("limit", "must be between 1 and 1000"));
        }
        let cursors = self.cursors()?;
        let after = q
            .cursor
            .as_deref()
            .map(|c| cursors.decode(&q.scope, c))
            .transpose()?
            .unwrap_or(0);
        self.with(|c| {
            let mut p = predicate::candidate(&listing(q))?;
            let a = p.arg(after);
            p.and(&format!("m.seq > {a}"));
            let tail = format!("ORDER BY m.seq LIMIT {}", q.limit + 1);
            let mut rows = query_memories(c, &p, &tail)?;
            let next_cursor = if rows.len() > q.limit {
                rows.truncate(q.limit);
                rows.last().map(|(seq, _)| cursors.encode(&q.scope, *seq))
            } else {
                None
            };
            Ok(Page {
                results: rows.into_iter().map(|(_, m)| m).collect(),
                next_cursor,
            })
        })
    }

    /// [`Store::locate`]: one count and one positioned read over the listing's order, in one
    /// repeatable-read snapshot so the two agree.
    pub(crate) fn locate_memories(&self, q: &ListQuery, skip: u64) -> Result<ListPosition> {
        q.scope.validate()?;
        let p = predicate::candidate(&listing(q))?;
        let cursors = self.cursors()?;
        self.with(|c| {
            let mut tx = c
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(pg_err)?;
            let total: i64 = tx
                .query_one(
                    &format!("SELECT COUNT(*) FROM memories m WHERE {}", p.where_sql()),
                    &p.params(),
                )
                .map_err(pg_err)?
                .get(0);
            let total = u64::try_from(total).unwrap_or(0);
            let cursor = if skip == 0 || skip >= total {
                None
            } else {
                // skip < total ≤ i64::MAX, so the offset fits.
                let offset = (skip - 1) as i64;
                let seq: i64 = tx
                    .query_one(
                        &format!(
                            "SELECT m.seq FROM memories m WHERE {} ORDER BY m.seq LIMIT 1 OFFSET {offset}",
                            p.where_sql()
                        ),
                        &p.params(),
                    )
                    .map_err(pg_err)?
                    .get(0);
                Some(cursors.encode(&q.scope, seq))
            };
            tx.commit().map_err(pg_err)?;
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
        self.with(|c| {
            // A memory that still exists must be visible to the scope (expiry and as-of included;
            // state not: a deleted memory's history stays readable). A hard-deleted memory's
            // history is checked against the owner recorded on its history rows.
            let owner: Option<String> = c
                .query_opt(
                    "SELECT scope_key FROM memories WHERE id = $1 LIMIT 1",
                    &[&id.0],
                )
                .map_err(pg_err)?
                .map(|r| r.get(0));
            let mut p = Pred::default();
            let a = p.arg(id.0);
            p.and(&format!("h.memory_id = {a}"));
            predicate::scope(&mut p, "h", scope);
            if let Some(key) = owner {
                let mut seen = Pred::default();
                let a = seen.arg(id.0);
                seen.and(&format!("m.id = {a}"));
                predicate::scope(&mut seen, "m", scope);
                predicate::visibility(
                    &mut seen,
                    "m",
                    &ReadOptions {
                        include_inactive: true,
                        ..*read
                    },
                );
                let sql = format!(
                    "SELECT 1 FROM memories m WHERE {} LIMIT 1",
                    seen.where_sql()
                );
                if c.query_opt(&sql, &seen.params()).map_err(pg_err)?.is_none() {
                    return Err(Error::not_found("memory", id));
                }
                // A memory's history rows carry its owner: their index starts with it.
                let k = p.arg(key);
                p.and(&format!("h.scope_key = {k}"));
            }
            let sql = format!(
                "SELECT {HISTORY_COLUMNS} FROM history h WHERE {} ORDER BY h.id",
                p.where_sql()
            );
            let events = c
                .query(&sql, &p.params())
                .map_err(pg_err)?
                .iter()
                .map(crate::codec::history_from_row)
                .collect::<Result<Vec<_>>>()?;
            if events.is_empty() {
                return Err(Error::not_found("memory", id));
            }
            Ok(events)
        })
    }

    /// The memories behind candidate keys (`memories.seq`), re-checked against the query's
    /// scope, visibility, kinds and filter: a key that no longer qualifies is left out.
    pub(crate) fn fetch_keys(
        &self,
        q: &CandidateQuery<'_>,
        keys: &[i64],
    ) -> Result<Vec<(i64, Memory)>> {
        q.scope.validate()?;
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

    /// Active, unexpired memories of exactly `scope` with these content hashes (what a read
    /// sees now: an expired copy must not make a restated fact a duplicate).
    pub(crate) fn by_hash(
        &self,
        scope: &Scope,
        hashes: &[String],
    ) -> Result<Vec<(String, MemoryId)>> {
        scope.validate()?;
        if hashes.is_empty() {
            return Ok(Vec::new());
        }
        let mut p = Pred::default();
        predicate::exact_scope(&mut p, "m", scope);
        predicate::visibility(&mut p, "m", &ReadOptions::default());
        let a = p.arg(hashes.to_vec());
        p.and(&format!("m.hash = ANY({a}::text[])"));
        let sql = format!(
            "SELECT m.hash, m.id FROM memories m WHERE {} ORDER BY m.seq",
            p.where_sql()
        );
        self.with(|c| {
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, String>(0), MemoryId(r.get(1))))
                .collect())
        })
    }

    pub(crate) fn owner(&self, id: MemoryId) -> Result<Scope> {
        self.with(|c| {
            let row = c
                .query_opt(
                    "SELECT user_id, agent_id, run_id FROM memories WHERE id = $1 LIMIT 1",
                    &[&id.0],
                )
                .map_err(pg_err)?
                .ok_or_else(|| Error::not_found("memory", id))?;
            scope_from_row(&row)
        })
    }

    /// Every owner with its count of memories a default read sees, in the embedded store's
    /// order (byte order, missing parts first).
    pub(crate) fn owner_counts(&self) -> Result<Vec<(Scope, u64)>> {
        let mut p = Pred::default();
        predicate::visibility(&mut p, "m", &ReadOptions::default());
        let sql = format!(
            "SELECT m.user_id, m.agent_id, m.run_id, COUNT(*) FROM memories m WHERE {} \
             GROUP BY 1, 2, 3 ORDER BY m.user_id COLLATE \"C\" NULLS FIRST, \
             m.agent_id COLLATE \"C\" NULLS FIRST, m.run_id COLLATE \"C\" NULLS FIRST",
            p.where_sql()
        );
        self.with(|c| {
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            rows.iter()
                .map(|r| Ok((scope_from_row(r)?, r.get::<_, i64>(3).max(0) as u64)))
                .collect()
        })
    }
}
