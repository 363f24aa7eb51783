//! The hierarchy's tables: pages (the short-term window and mid-term members) and segments.
//!
//! Writes arrive as a [`TierWrite`] inside an add's batch and run in its transaction, in the
//! order and with the snapshot checks of core's [`write_tiers`] (new pages → segment writes →
//! moves → evictions → analysed marks); [`Writer`]'s `TierWriter` half, which holds the rows, is
//! in [`write`].
//!
//! This file holds the row decoding, the reads (pages, segments), visits, and the rows export
//! and import copy; erase's scrubbing, the consistency count and re-embedding on a model change
//! are in [`rebind`] (the same split as the PostgreSQL store's `tiers/`).

mod rebind;
mod write;

pub(crate) use rebind::{inconsistent_pages, rebind_pages, scrub, set_vector_from_pages};

use crate::codec::{blob_to_vector, from_ms, sql_err, vector_to_blob, Cached};
use crate::predicate::{self, marks, Pred};
use crate::write::scope_cols;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params, params_from_iter, Connection, Row, Transaction};

const PAGE_COLS: &str = "p.seq, p.id, p.user_id, p.agent_id, p.run_id, p.session_id, \
     p.message_ids, p.text, p.tokens, p.at, p.vector, p.keywords, p.tier, p.segment_id, \
     p.continues, p.analysed";

const SEGMENT_COLS: &str = "s.id, s.user_id, s.agent_id, s.run_id, s.summary, s.summary_author, \
     s.keywords, s.vector, s.page_count, s.length_tokens, s.visits, s.last_visit_at, \
     s.created_at, s.updated_at, s.evicted_at, s.version, s.event_time";

fn conv<E: std::fmt::Display>(i: usize, e: E) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        i,
        rusqlite::types::Type::Text,
        Box::<dyn std::error::Error + Send + Sync>::from(e.to_string()),
    )
}

fn parse<T: std::str::FromStr>(i: usize, raw: String) -> rusqlite::Result<T>
where
    T::Err: std::fmt::Display,
{
    raw.parse().map_err(|e| conv(i, e))
}

fn json<T: serde::de::DeserializeOwned>(i: usize, raw: String) -> rusqlite::Result<T> {
    serde_json::from_str(&raw).map_err(|e| conv(i, e))
}

fn owner(row: &Row<'_>, first: usize) -> rusqlite::Result<Scope> {
    let part = |i: usize| row.get::<_, Option<String>>(i);
    Scope::from_parts(
        part(first)?.as_deref(),
        part(first + 1)?.as_deref(),
        part(first + 2)?.as_deref(),
    )
    .map_err(|e| conv(first, e))
}

fn page_from_row(row: &Row<'_>) -> rusqlite::Result<StoredPage> {
    Ok(StoredPage {
        seq: row.get(0)?,
        id: parse::<uuid::Uuid>(1, row.get(1)?).map(PageId)?,
        scope: owner(row, 2)?,
        session_id: row.get(5)?,
        message_ids: json(6, row.get(6)?)?,
        text: row.get(7)?,
        tokens: row.get(8)?,
        at: from_ms(row.get(9)?),
        vector: blob_to_vector(&row.get::<_, Vec<u8>>(10)?),
        keywords: json(11, row.get(11)?)?,
        tier: parse(12, row.get(12)?)?,
        segment: row
            .get::<_, Option<String>>(13)?
            .map(|s| parse::<uuid::Uuid>(13, s).map(SegmentId))
            .transpose()?,
        continues: row
            .get::<_, Option<String>>(14)?
            .map(|s| parse::<uuid::Uuid>(14, s).map(PageId))
            .transpose()?,
        analysed: row.get(15)?,
    })
}

/// A segment's event time as its three columns: the ends for range reads, the whole as JSON.
fn event_cols(s: &Segment) -> (Option<i64>, Option<i64>, Option<String>) {
    match &s.event_time {
        Some(e) => (
            Some(e.start.timestamp_millis()),
            Some(e.end.timestamp_millis()),
            Some(crate::codec::event_time_text(e)),
        ),
        None => (None, None, None),
    }
}

fn segment_from_row(row: &Row<'_>) -> rusqlite::Result<Segment> {
    Ok(Segment {
        id: parse::<uuid::Uuid>(0, row.get(0)?).map(SegmentId)?,
        scope: owner(row, 1)?,
        summary: row.get(4)?,
        summary_author: parse(5, row.get(5)?)?,
        keywords: json(6, row.get(6)?)?,
        vector: blob_to_vector(&row.get::<_, Vec<u8>>(7)?),
        page_count: row.get(8)?,
        length_tokens: row.get::<_, i64>(9)? as u64,
        visits: row.get::<_, i64>(10)? as u64,
        last_visit_at: from_ms(row.get(11)?),
        created_at: from_ms(row.get(12)?),
        updated_at: from_ms(row.get(13)?),
        evicted_at: row.get::<_, Option<i64>>(14)?.map(from_ms),
        version: row.get::<_, i64>(15)? as u64,
        event_time: crate::codec::event_time_from_text(row.get(16)?)?,
    })
}

fn query_pages(conn: &Connection, sql: &str, params: &[Sql]) -> Result<Vec<StoredPage>> {
    let mut st = conn.prepare_cached(sql).map_err(sql_err)?;
    let rows = st
        .query_map(params_from_iter(params.iter()), page_from_row)
        .map_err(sql_err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
}

/// Every segment, evicted ones included, in write order (export).
pub(crate) fn all_segments(conn: &Connection) -> Result<Vec<Segment>> {
    let sql = format!("SELECT {SEGMENT_COLS} FROM segments s ORDER BY s.seq");
    let mut st = conn.prepare(&sql).map_err(sql_err)?;
    let rows = st.query_map([], segment_from_row).map_err(sql_err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
}

/// Every page in write order (export).
pub(crate) fn all_pages(conn: &Connection) -> Result<Vec<StoredPage>> {
    query_pages(
        conn,
        &format!("SELECT {PAGE_COLS} FROM pages p ORDER BY p.seq"),
        &[],
    )
}

/// Writes an exported segment as it was (its vector is set by the import's end); an existing
/// id is kept. Returns rows written.
pub(crate) fn import_segment(tx: &Transaction<'_>, s: &Segment, dim: usize) -> Result<u64> {
    let (u, a, r) = scope_cols(&s.scope);
    let event = event_cols(s);
    let n = tx
        .execute_cached(
            "INSERT OR IGNORE INTO segments (id, user_id, agent_id, run_id, scope_key, summary, summary_author, \
             keywords, vector, page_count, length_tokens, visits, last_visit_at, created_at, updated_at, \
             evicted_at, version, event_start, event_end, event_time) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
            params![
                s.id.to_string(), u, a, r, s.scope.key(), s.summary, s.summary_author.as_str(),
                serde_json::to_string(&s.keywords).map_err(Error::storage)?,
                vector_to_blob(&vec![0.0; dim]), s.page_count, s.length_tokens as i64, s.visits as i64,
                s.last_visit_at.timestamp_millis(), s.created_at.timestamp_millis(),
                s.updated_at.timestamp_millis(), s.evicted_at.map(|t| t.timestamp_millis()),
                s.version as i64, event.0, event.1, event.2
            ],
        )
        .map_err(sql_err)?;
    Ok(n as u64)
}

/// Writes an exported page as it was, with `vector`; an existing id is kept.
pub(crate) fn import_page(tx: &Transaction<'_>, p: &StoredPage, vector: &[u8]) -> Result<u64> {
    let (u, a, r) = scope_cols(&p.scope);
    let n = tx
        .execute_cached(
            "INSERT OR IGNORE INTO pages (id, user_id, agent_id, run_id, scope_key, session_id, message_ids, \
             text, tokens, at, vector, keywords, tier, segment_id, continues, analysed) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            params![
                p.id.to_string(), u, a, r, p.scope.key(), p.session_id,
                serde_json::to_string(&p.message_ids).map_err(Error::storage)?,
                p.text, p.tokens, p.at.timestamp_millis(), vector,
                serde_json::to_string(&p.keywords).map_err(Error::storage)?,
                p.tier.as_str(), p.segment.map(|s| s.to_string()), p.continues.map(|c| c.to_string()),
                p.analysed
            ],
        )
        .map_err(sql_err)?;
    Ok(n as u64)
}

impl Tiers for SqliteStore {
    fn pages(&self, q: &PageQuery) -> Result<Vec<StoredPage>> {
        let mut p = Pred::default();
        if let Some(s) = &q.scope {
            if q.exact {
                p.push("p.scope_key = ?", [Sql::Text(s.key())]);
            } else {
                predicate::scope(&mut p, "p", s);
            }
        }
        match &q.session {
            Some(Some(s)) => p.push("p.session_id = ?", [Sql::Text(s.clone())]),
            Some(None) => p.and("p.session_id IS NULL"),
            None => {}
        }
        if let Some(t) = q.tier {
            p.push("p.tier = ?", [Sql::Text(t.as_str().into())]);
        }
        if let Some(s) = q.segment {
            p.push("p.segment_id = ?", [Sql::Text(s.to_string())]);
        }
        if let Some(a) = q.analysed {
            p.push("p.analysed = ?", [Sql::Integer(a as i64)]);
        }
        if let Some(ids) = &q.ids {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            p.push(
                &format!("p.id IN ({})", marks(ids.len())),
                ids.iter().map(|i| Sql::Text(i.to_string())),
            );
        }
        let limit = q.limit.map(|l| format!(" LIMIT {l}")).unwrap_or_default();
        let sql = format!(
            "SELECT {PAGE_COLS} FROM pages p WHERE {} ORDER BY p.seq DESC{limit}",
            p.where_sql()
        );
        self.read(|conn| {
            let mut pages = query_pages(conn, &sql, &p.params)?;
            pages.reverse();
            Ok(pages)
        })
    }

    fn segments(&self, scope: &Scope, exact: bool, evicted: bool) -> Result<Vec<Segment>> {
        let mut p = Pred::default();
        if exact {
            p.push("s.scope_key = ?", [Sql::Text(scope.key())]);
        } else {
            predicate::scope(&mut p, "s", scope);
        }
        if !evicted {
            p.and("s.evicted_at IS NULL");
        }
        let sql = format!(
            "SELECT {SEGMENT_COLS} FROM segments s WHERE {} ORDER BY s.seq",
            p.where_sql()
        );
        self.read(|conn| {
            let mut st = conn.prepare_cached(&sql).map_err(sql_err)?;
            let rows = st
                .query_map(params_from_iter(p.params.iter()), segment_from_row)
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
        })
    }

    fn record_visits(&self, visits: &Visits) -> Result<u64> {
        self.write_tx(|tx| {
            let mut n = 0u64;
            for (id, count) in visits.counts() {
                let mut p = Pred::default();
                p.push("s.id = ?", [Sql::Text(id.to_string())]);
                p.and("s.evicted_at IS NULL");
                predicate::scope_unindexed(&mut p, "s", visits.scope());
                let sql = format!(
                    "UPDATE segments AS s SET visits = visits + ?, last_visit_at = MAX(last_visit_at, ?), \
                     version = version + 1 WHERE {}",
                    p.where_sql()
                );
                let params: Vec<Sql> = [Sql::Integer(*count as i64), Sql::Integer(visits.at_ms())]
                    .into_iter()
                    .chain(p.params)
                    .collect();
                n += tx.execute_cached(&sql, params_from_iter(params.iter())).map_err(sql_err)? as u64;
            }
            Ok(n)
        })
    }
}
