//! The hierarchy on PostgreSQL: pages (the short-term window and mid-term members), segments,
//! migrations, evictions, analysed marks and segment visits.
//!
//! Writes arrive as a [`TierWrite`] inside an add's batch and run in its transaction, in the
//! order new pages → segment writes → migrations → evictions → analysed marks. Every step
//! re-checks the snapshot the pipeline planned from in the statement that writes (a migrating
//! page is still `short`, a rewritten segment still has the version the plan saw): under READ
//! COMMITTED a concurrent writer's row is re-read before the `WHERE` is judged, so two plans
//! racing for the same rows cannot both commit. A failed check fails the batch with a conflict.
//!
//! Re-embedding on a model change (`rebind_tiers`), erase's scrubbing (`scrub_tiers`) and the
//! consistency count for `integrity` live in [`rebind`]; export and import of pages and segments
//! in `transfer`.

mod rebind;

// `scrub_tiers` is for erase, `inconsistent_pages` for integrity (allowed until they call it).
#[allow(unused_imports)]
pub(crate) use rebind::{inconsistent_pages, scrub_tiers, set_vector_from_pages};

use crate::codec::{col, from_ms, scope_from_row};
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::tier::{Eviction, Migration, SegmentWrite};
use mnemo_core::*;
use pgvector::Vector;
use postgres::{GenericClient, Row, Transaction};
use std::collections::HashSet;

/// The page columns [`page_from_row`] reads, in its order.
pub(crate) const PAGE_COLS: &str = "p.seq, p.id, p.user_id, p.agent_id, p.run_id, p.session_id, \
     p.message_ids, p.text, p.tokens, p.at, p.embedding, p.keywords, p.tier, p.segment_id, \
     p.continues, p.analysed";

/// The segment columns [`segment_from_row`] reads, in its order.
pub(crate) const SEGMENT_COLS: &str = "s.id, s.user_id, s.agent_id, s.run_id, s.summary, \
     s.summary_author, s.keywords, s.embedding, s.page_count, s.length_tokens, s.visits, \
     s.last_visit_at, s.created_at, s.updated_at, s.evicted_at, s.version";

/// The owners `scope` covers (exactly `scope` when `exact`), on the table aliased `alias`.
fn scope_pred(p: &mut Pred, alias: &str, scope: &Scope, exact: bool) {
    if exact {
        predicate::exact_scope(p, alias, scope);
    } else {
        predicate::scope(p, alias, scope);
    }
}

/// A scope's owner columns.
pub(crate) fn cols(s: &Scope) -> (Option<&str>, Option<&str>, Option<&str>) {
    (
        s.user_id.as_ref().map(|v| v.as_str()),
        s.agent_id.as_ref().map(|v| v.as_str()),
        s.run_id.as_ref().map(|v| v.as_str()),
    )
}

/// A list (ids, keywords) as a JSONB value.
pub(crate) fn json_list<T: ToString>(items: &[T]) -> serde_json::Value {
    serde_json::Value::Array(
        items
            .iter()
            .map(|i| serde_json::Value::String(i.to_string()))
            .collect(),
    )
}

/// A JSONB list of strings (ids, keywords).
pub(crate) fn strings_of(col: &str, v: serde_json::Value) -> Result<Vec<String>> {
    serde_json::from_value(v).map_err(|e| Error::storage(format!("bad {col} in a row: {e}")))
}

/// A page from the columns of [`PAGE_COLS`].
pub(crate) fn page_from_row(row: &Row) -> Result<StoredPage> {
    Ok(StoredPage {
        seq: col(row, "seq")?,
        id: PageId(col(row, "id")?),
        scope: scope_from_row(row)?,
        session_id: col(row, "session_id")?,
        message_ids: strings_of("message_ids", col(row, "message_ids")?)?
            .iter()
            .map(|m| MessageId::parse(m))
            .collect::<Result<_>>()?,
        text: col(row, "text")?,
        tokens: col::<i32>(row, "tokens")? as u32,
        at: from_ms(col(row, "at")?),
        vector: col::<Vector>(row, "embedding")?.to_vec(),
        keywords: strings_of("keywords", col(row, "keywords")?)?,
        tier: col::<&str>(row, "tier")?.parse()?,
        segment: col::<Option<uuid::Uuid>>(row, "segment_id")?.map(SegmentId),
        continues: col::<Option<uuid::Uuid>>(row, "continues")?.map(PageId),
        analysed: col(row, "analysed")?,
    })
}

/// A segment from the columns of [`SEGMENT_COLS`].
pub(crate) fn segment_from_row(row: &Row) -> Result<Segment> {
    Ok(Segment {
        id: SegmentId(col(row, "id")?),
        scope: scope_from_row(row)?,
        summary: col(row, "summary")?,
        summary_author: col::<&str>(row, "summary_author")?.parse()?,
        keywords: strings_of("keywords", col(row, "keywords")?)?,
        vector: col::<Vector>(row, "embedding")?.to_vec(),
        page_count: col::<i32>(row, "page_count")? as u32,
        length_tokens: col::<i64>(row, "length_tokens")? as u64,
        visits: col::<i64>(row, "visits")? as u64,
        last_visit_at: from_ms(col(row, "last_visit_at")?),
        created_at: from_ms(col(row, "created_at")?),
        updated_at: from_ms(col(row, "updated_at")?),
        evicted_at: col::<Option<i64>>(row, "evicted_at")?.map(from_ms),
        version: col::<i64>(row, "version")? as u64,
    })
}

fn conflict(reason: String) -> Error {
    Error::Conflict { reason }
}

impl PgStore {
    pub(crate) fn stored_pages(&self, q: &PageQuery) -> Result<Vec<StoredPage>> {
        let mut c = Pred::default();
        if let Some(s) = &q.scope {
            s.validate()?;
            scope_pred(&mut c, "p", s, q.exact);
        }
        match &q.session {
            Some(Some(s)) => {
                let a = c.arg(s.clone());
                c.and(&format!("p.session_id = {a}"));
            }
            Some(None) => c.and("p.session_id IS NULL"),
            None => {}
        }
        if let Some(t) = q.tier {
            let a = c.arg(t.as_str().to_string());
            c.and(&format!("p.tier = {a}"));
        }
        if let Some(s) = q.segment {
            let a = c.arg(s.0);
            c.and(&format!("p.segment_id = {a}"));
        }
        if let Some(analysed) = q.analysed {
            let a = c.arg(analysed);
            c.and(&format!("p.analysed = {a}"));
        }
        if let Some(ids) = &q.ids {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let a = c.arg(ids.iter().map(|i| i.0).collect::<Vec<uuid::Uuid>>());
            c.and(&format!("p.id = ANY({a})"));
        }
        let limit = q.limit.map(|l| format!(" LIMIT {l}")).unwrap_or_default();
        // Newest first so that `limit` keeps the newest; reversed to oldest first below.
        let sql = format!(
            "SELECT {PAGE_COLS} FROM pages p WHERE {} ORDER BY p.seq DESC{limit}",
            c.where_sql()
        );
        self.with(|client| {
            let rows = client.query(&sql, &c.params()).map_err(pg_err)?;
            let mut pages = rows.iter().map(page_from_row).collect::<Result<Vec<_>>>()?;
            pages.reverse();
            Ok(pages)
        })
    }

    pub(crate) fn stored_segments(
        &self,
        scope: &Scope,
        exact: bool,
        evicted: bool,
    ) -> Result<Vec<Segment>> {
        scope.validate()?;
        let mut c = Pred::default();
        scope_pred(&mut c, "s", scope, exact);
        if !evicted {
            c.and("s.evicted_at IS NULL");
        }
        let sql = format!(
            "SELECT {SEGMENT_COLS} FROM segments s WHERE {} ORDER BY s.seq",
            c.where_sql()
        );
        self.with(|client| {
            let rows = client.query(&sql, &c.params()).map_err(pg_err)?;
            rows.iter().map(segment_from_row).collect()
        })
    }

    pub(crate) fn visit_segments(
        &self,
        scope: &Scope,
        visits: &[(SegmentId, u32)],
        at: Timestamp,
    ) -> Result<u64> {
        scope.validate()?;
        if visits.is_empty() {
            return Ok(0);
        }
        let at = at.timestamp_millis();
        self.tx(|tx| {
            let mut n = 0u64;
            for (id, count) in visits {
                let mut c = Pred::default();
                let count = c.arg(i64::from(*count));
                let at = c.arg(at);
                let id = c.arg(id.0);
                c.and(&format!("s.id = {id} AND s.evicted_at IS NULL"));
                predicate::scope(&mut c, "s", scope);
                let sql = format!(
                    "UPDATE segments AS s SET visits = s.visits + {count}, \
                     last_visit_at = GREATEST(s.last_visit_at, {at}), version = s.version + 1 \
                     WHERE {}",
                    c.where_sql()
                );
                n += tx.execute(&sql, &c.params()).map_err(pg_err)?;
            }
            Ok(n)
        })
    }

    /// Applies one batch's hierarchy changes inside its transaction (see the module docs). The
    /// batch's shape (scopes, vectors, pages' messages) was checked by `WriteBatch::validate`.
    pub(crate) fn write_tiers(
        &self,
        tx: &mut Transaction<'_>,
        scope: &Scope,
        w: &TierWrite,
    ) -> Result<()> {
        if w.is_empty() {
            return Ok(());
        }
        let key = scope.key();
        let (u, a, r) = cols(scope);
        for p in &w.pages {
            self.step("page")?;
            tx.execute(
                "INSERT INTO pages (scope_key, id, user_id, agent_id, run_id, session_id, \
                 message_ids, text, tokens, at, embedding, keywords, tier, analysed) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'short', FALSE)",
                &[
                    &key,
                    &p.id.0,
                    &u,
                    &a,
                    &r,
                    &p.session_id,
                    &json_list(&p.message_ids),
                    &p.text,
                    &(p.tokens as i32),
                    &p.at.timestamp_millis(),
                    &Vector::from(p.vector.clone()),
                    &json_list(&p.keywords),
                ],
            )
            .map_err(pg_err)?;
        }
        let mut written: HashSet<SegmentId> = HashSet::new();
        for s in &w.segments {
            self.step("segment")?;
            write_segment(tx, scope, &key, s)?;
            written.insert(s.segment.id);
        }
        for m in &w.migrations {
            self.step("migrate")?;
            migrate(tx, &key, m)?;
        }
        let now = chrono::Utc::now().timestamp_millis();
        for e in &w.evictions {
            self.step("evict")?;
            evict(tx, scope, &key, e, written.contains(&e.segment), now)?;
        }
        for id in &w.analysed {
            self.step("analyse")?;
            // Only an unanalysed page can be consumed: of two analyses racing for the same
            // pages, the later one fails whole and writes nothing.
            let n = tx
                .execute(
                    "UPDATE pages SET analysed = TRUE \
                     WHERE scope_key = $1 AND id = $2 AND NOT analysed",
                    &[&key, &id.0],
                )
                .map_err(pg_err)?;
            if n == 0 {
                return Err(if page_exists(tx, &key, *id)? {
                    conflict(format!(
                        "page {id} was already analysed by another analysis; refresh again"
                    ))
                } else {
                    Error::not_found("page", id)
                });
            }
        }
        Ok(())
    }
}

fn page_exists(tx: &mut impl GenericClient, key: &str, id: PageId) -> Result<bool> {
    Ok(tx
        .query_opt(
            "SELECT 1 FROM pages WHERE scope_key = $1 AND id = $2",
            &[&key, &id.0],
        )
        .map_err(pg_err)?
        .is_some())
}

fn write_segment(
    tx: &mut Transaction<'_>,
    scope: &Scope,
    key: &str,
    w: &SegmentWrite,
) -> Result<()> {
    let s = &w.segment;
    let keywords = json_list(&s.keywords);
    let vector = Vector::from(s.vector.clone());
    let (u, a, r) = cols(scope);
    let n = match w.expected_version {
        None => tx
            .execute(
                "INSERT INTO segments (scope_key, id, user_id, agent_id, run_id, summary, \
                 summary_author, keywords, embedding, page_count, length_tokens, visits, \
                 last_visit_at, created_at, updated_at, evicted_at, version) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, NULL, 1) \
                 ON CONFLICT (scope_key, id) DO NOTHING",
                &[
                    &key,
                    &s.id.0,
                    &u,
                    &a,
                    &r,
                    &s.summary,
                    &s.summary_author.as_str(),
                    &keywords,
                    &vector,
                    &(s.page_count as i32),
                    &(s.length_tokens as i64),
                    &(s.visits as i64),
                    &s.last_visit_at.timestamp_millis(),
                    &s.created_at.timestamp_millis(),
                    &s.updated_at.timestamp_millis(),
                ],
            )
            .map_err(pg_err)?,
        // Visits counted since the plan was read are kept (not part of the SET list): the
        // version check guards the content.
        Some(v) => tx
            .execute(
                "UPDATE segments SET summary = $1, summary_author = $2, keywords = $3, \
                 embedding = $4, page_count = $5, length_tokens = $6, updated_at = $7, \
                 version = version + 1 \
                 WHERE scope_key = $8 AND id = $9 AND evicted_at IS NULL AND version = $10",
                &[
                    &s.summary,
                    &s.summary_author.as_str(),
                    &keywords,
                    &vector,
                    &(s.page_count as i32),
                    &(s.length_tokens as i64),
                    &s.updated_at.timestamp_millis(),
                    &key,
                    &s.id.0,
                    &(v as i64),
                ],
            )
            .map_err(pg_err)?,
    };
    if n == 0 {
        return Err(conflict(match w.expected_version {
            None => format!("segment {} already exists", s.id),
            Some(v) => format!(
                "segment {} changed or was evicted since it was read (expected version {v}); plan again",
                s.id
            ),
        }));
    }
    Ok(())
}

fn migrate(tx: &mut Transaction<'_>, key: &str, m: &Migration) -> Result<()> {
    // Locks the segment so that an eviction racing this migration waits for it.
    let active = tx
        .query_opt(
            "SELECT 1 FROM segments WHERE scope_key = $1 AND id = $2 AND evicted_at IS NULL \
             FOR SHARE",
            &[&key, &m.segment.0],
        )
        .map_err(pg_err)?;
    if active.is_none() {
        return Err(conflict(format!(
            "segment {} is not an active segment of the scope; plan again",
            m.segment
        )));
    }
    if let Some(c) = m.continues {
        if !page_exists(tx, key, c)? {
            return Err(Error::invalid(
                "migrations.continues",
                format!("{c} is not a page of the scope"),
            ));
        }
    }
    let n = tx
        .execute(
            "UPDATE pages SET tier = 'mid', segment_id = $1, continues = $2 \
             WHERE scope_key = $3 AND id = $4 AND tier = 'short'",
            &[&m.segment.0, &m.continues.map(|c| c.0), &key, &m.page.0],
        )
        .map_err(pg_err)?;
    if n == 0 {
        return Err(conflict(format!(
            "page {} is no longer in the short-term window; plan again",
            m.page
        )));
    }
    Ok(())
}

fn evict(
    tx: &mut Transaction<'_>,
    scope: &Scope,
    key: &str,
    e: &Eviction,
    rewritten: bool,
    now: i64,
) -> Result<()> {
    let current = tx
        .query_opt(
            "SELECT version, summary FROM segments \
             WHERE scope_key = $1 AND id = $2 AND evicted_at IS NULL FOR UPDATE",
            &[&key, &e.segment.0],
        )
        .map_err(pg_err)?;
    let Some(row) = current else {
        return Err(conflict(format!(
            "segment {} is not an active segment of the scope",
            e.segment
        )));
    };
    let version: i64 = col(&row, "version")?;
    let summary: String = col(&row, "summary")?;
    // A segment this batch rewrote has moved one version past what the plan saw.
    let expected = e.expected_version as i64 + i64::from(rewritten);
    if version != expected {
        return Err(conflict(format!(
            "segment {} changed since it was read (version {version}, expected {expected}); plan again",
            e.segment
        )));
    }
    tx.execute(
        "UPDATE segments SET evicted_at = $1, updated_at = $1, version = version + 1 \
         WHERE scope_key = $2 AND id = $3",
        &[&now, &key, &e.segment.0],
    )
    .map_err(pg_err)?;
    tx.execute(
        "UPDATE pages SET tier = 'evicted' WHERE scope_key = $1 AND segment_id = $2",
        &[&key, &e.segment.0],
    )
    .map_err(pg_err)?;
    // The segment's history lives under its id, like a memory's.
    let (u, a, r) = cols(scope);
    tx.execute(
        "INSERT INTO history (scope_key, memory_id, user_id, agent_id, run_id, event, old_text, \
         reason, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &key,
            &e.segment.0,
            &u,
            &a,
            &r,
            &HistoryKind::Evict.as_str(),
            &summary,
            &e.reason,
            &now,
        ],
    )
    .map_err(pg_err)?;
    Ok(())
}
