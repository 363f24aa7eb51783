//! The hierarchy's tables: pages (the short-term window and mid-term members) and segments.
//!
//! Writes arrive as a [`TierWrite`] inside an add's batch and run in its transaction, in the
//! order and with the snapshot checks of core's [`write_tiers`] (new pages → segment writes →
//! moves → evictions → analysed marks); [`Writer`]'s `TierWriter` half here holds the rows.

use crate::codec::{blob_to_vector, from_ms, sql_err, vector_to_blob, Cached};
use crate::predicate::{self, marks, Pred};
use crate::write::{history, scope_cols, Writer};
use crate::SqliteStore;
use mnemo_core::tier::PageMove;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Row, Transaction};

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

/// The hierarchy's rows of a batch (the order and the checks are core's [`write_tiers`]).
impl TierWriter for Writer<'_, '_> {
    fn step(&self, step: WriteStep) -> Result<()> {
        self.store.step(step)
    }

    fn history(&mut self, entry: &HistoryEntry<'_>) -> Result<()> {
        history(self.tx, entry)
    }

    fn insert_page(&mut self, scope: &Scope, p: &NewPage) -> Result<()> {
        let (u, a, r) = scope_cols(scope);
        self.tx.execute_cached(
            "INSERT INTO pages (id, user_id, agent_id, run_id, scope_key, session_id, message_ids, \
             text, tokens, at, vector, keywords, tier, analysed) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'short', 0)",
            params![
                p.id.to_string(), u, a, r, scope.key(), p.session_id,
                serde_json::to_string(&p.message_ids).map_err(Error::storage)?,
                p.text, p.tokens, p.at.timestamp_millis(), vector_to_blob(&p.vector),
                serde_json::to_string(&p.keywords).map_err(Error::storage)?
            ],
        )
        .map_err(sql_err)?;
        Ok(())
    }

    fn insert_segment(&mut self, scope: &Scope, s: &Segment) -> Result<bool> {
        let (u, a, r) = scope_cols(scope);
        let event = event_cols(s);
        let keywords = serde_json::to_string(&s.keywords).map_err(Error::storage)?;
        let out = self.tx.execute_cached(
            "INSERT INTO segments (id, user_id, agent_id, run_id, scope_key, summary, summary_author, \
             keywords, vector, page_count, length_tokens, visits, last_visit_at, created_at, updated_at, \
             evicted_at, version, event_start, event_end, event_time) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, NULL, 1, ?16, ?17, ?18)",
            params![
                s.id.to_string(), u, a, r, scope.key(), s.summary, s.summary_author.as_str(), keywords,
                vector_to_blob(&s.vector), s.page_count, s.length_tokens as i64, s.visits as i64,
                s.last_visit_at.timestamp_millis(), s.created_at.timestamp_millis(),
                s.updated_at.timestamp_millis(), event.0, event.1, event.2
            ],
        );
        match out {
            Ok(_) => Ok(true),
            Err(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                Ok(false)
            }
            Err(e) => Err(sql_err(e)),
        }
    }

    fn rewrite_segment(&mut self, scope: &Scope, s: &Segment, expected: u64) -> Result<bool> {
        let keywords = serde_json::to_string(&s.keywords).map_err(Error::storage)?;
        let event = event_cols(s);
        // Visits counted since the plan was read are kept: they are added on top of the
        // planned count rather than overwritten, so the version check guards the content.
        let n = self.tx
            .execute_cached(
                "UPDATE segments SET summary = ?1, summary_author = ?2, keywords = ?3, vector = ?4, \
                 page_count = ?5, length_tokens = ?6, updated_at = ?7, version = version + 1, \
                 event_start = ?11, event_end = ?12, event_time = ?13 \
                 WHERE id = ?8 AND scope_key = ?9 AND evicted_at IS NULL AND version = ?10",
                params![
                    s.summary, s.summary_author.as_str(), keywords, vector_to_blob(&s.vector),
                    s.page_count, s.length_tokens as i64, s.updated_at.timestamp_millis(),
                    s.id.to_string(), scope.key(), expected as i64, event.0, event.1, event.2
                ],
            )
            .map_err(sql_err)?;
        Ok(n > 0)
    }

    fn segment_is_active(&mut self, scope: &Scope, id: SegmentId) -> Result<bool> {
        self.tx
            .query_row_cached(
                "SELECT 1 FROM segments WHERE id = ?1 AND scope_key = ?2 AND evicted_at IS NULL",
                params![id.to_string(), scope.key()],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(sql_err)
    }

    fn page_exists(&mut self, scope: &Scope, id: PageId) -> Result<bool> {
        self.tx
            .query_row_cached(
                "SELECT 1 FROM pages WHERE id = ?1 AND scope_key = ?2",
                params![id.to_string(), scope.key()],
                |_| Ok(()),
            )
            .optional()
            .map(|r| r.is_some())
            .map_err(sql_err)
    }

    fn move_page(&mut self, scope: &Scope, m: &PageMove) -> Result<bool> {
        let n = self
            .tx
            .execute_cached(
                "UPDATE pages SET tier = 'mid', segment_id = ?1, continues = ?2 \
                 WHERE id = ?3 AND scope_key = ?4 AND tier = 'short'",
                params![
                    m.segment.to_string(),
                    m.continues.map(|c| c.to_string()),
                    m.page.to_string(),
                    scope.key()
                ],
            )
            .map_err(sql_err)?;
        Ok(n > 0)
    }

    fn active_segment(&mut self, scope: &Scope, id: SegmentId) -> Result<Option<(u64, String)>> {
        let current: Option<(i64, String)> = self.tx
            .query_row_cached(
                "SELECT version, summary FROM segments WHERE id = ?1 AND scope_key = ?2 AND evicted_at IS NULL",
                params![id.to_string(), scope.key()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(sql_err)?;
        Ok(current.map(|(v, summary)| (v as u64, summary)))
    }

    fn evict_segment(&mut self, scope: &Scope, id: SegmentId, at: i64) -> Result<()> {
        self.tx.execute_cached(
            "UPDATE segments SET evicted_at = ?1, updated_at = ?1, version = version + 1 WHERE id = ?2",
            params![at, id.to_string()],
        )
        .map_err(sql_err)?;
        self.tx
            .execute_cached(
                "UPDATE pages SET tier = 'evicted' WHERE segment_id = ?1 AND scope_key = ?2",
                params![id.to_string(), scope.key()],
            )
            .map_err(sql_err)?;
        Ok(())
    }

    fn mark_analysed(&mut self, scope: &Scope, id: PageId) -> Result<bool> {
        let n = self
            .tx
            .execute_cached(
                "UPDATE pages SET analysed = 1 WHERE id = ?1 AND scope_key = ?2 AND analysed = 0",
                params![id.to_string(), scope.key()],
            )
            .map_err(sql_err)?;
        Ok(n > 0)
    }
}

fn query_pages(conn: &Connection, sql: &str, params: &[Sql]) -> Result<Vec<StoredPage>> {
    let mut st = conn.prepare_cached(sql).map_err(sql_err)?;
    let rows = st
        .query_map(params_from_iter(params.iter()), page_from_row)
        .map_err(sql_err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
}

/// Removes erased texts from the pages and segments of `owner` (exact scope) that quote them:
/// each occurrence in a page's text or a segment's summary becomes `[erased]`, and keywords
/// taken from an erased text are dropped from both; the event time of a segment so touched, or
/// holding a page so touched, is read again from what its pages say now (an erased message's
/// date goes with it). Returns how many rows changed.
pub(crate) fn scrub(tx: &Transaction<'_>, owner: &Scope, texts: &[String]) -> Result<u64> {
    let key = owner.key();
    let Some(scrub) = TierScrub::new(texts) else {
        return Ok(0);
    };
    let mut n = 0u64;
    let mut touched = std::collections::BTreeSet::new();
    for (table, column, segment) in [
        ("pages", "text", "segment_id"),
        ("segments", "summary", "id"),
    ] {
        let rows: Vec<(String, String, String, Option<String>)> = {
            let mut st = tx
                .prepare(&format!(
                    "SELECT id, {column}, keywords, {segment} FROM {table} WHERE scope_key = ?1"
                ))
                .map_err(sql_err)?;
            let it = st
                .query_map([&key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .map_err(sql_err)?;
            it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
        };
        for (id, body, keywords, segment) in rows {
            let Some(body) = scrub.body(&body) else {
                continue;
            };
            touched.extend(segment);
            let keywords = scrub.keywords(serde_json::from_str(&keywords).map_err(Error::storage)?);
            tx.execute_cached(
                &format!("UPDATE {table} SET {column} = ?1, keywords = ?2 WHERE id = ?3"),
                params![
                    body,
                    serde_json::to_string(&keywords).map_err(Error::storage)?,
                    id
                ],
            )
            .map_err(sql_err)?;
            n += 1;
        }
    }
    for segment in &touched {
        retag_segment(tx, segment)?;
    }
    Ok(n)
}

/// Sets a segment's event time to the span of what its pages state now (`tier::page_event_time`).
fn retag_segment(tx: &Transaction<'_>, segment: &str) -> Result<()> {
    let pages: Vec<(String, i64)> = {
        let mut st = tx
            .prepare_cached("SELECT text, at FROM pages WHERE segment_id = ?1")
            .map_err(sql_err)?;
        let it = st
            .query_map([segment], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql_err)?;
        it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    let event = pages
        .iter()
        .filter_map(|(text, at)| tier::page_event_time(text, from_ms(*at)))
        .reduce(|a, b| a.span(&b));
    tx.execute_cached(
        "UPDATE segments SET event_start = ?1, event_end = ?2, event_time = ?3 WHERE id = ?4",
        params![
            event.as_ref().map(|e| e.start.timestamp_millis()),
            event.as_ref().map(|e| e.end.timestamp_millis()),
            event.as_ref().map(crate::codec::event_time_text),
            segment
        ],
    )
    .map_err(sql_err)?;
    Ok(())
}

/// Pages with a message that is no longer in the log, or mid-term pages without an active
/// segment: both must be 0 in a consistent store.
pub(crate) fn inconsistent_pages(conn: &Connection) -> Result<u64> {
    let orphans: i64 = conn
        .query_row_cached(
            "SELECT COUNT(*) FROM pages p WHERE p.tier = 'mid' AND NOT EXISTS \
             (SELECT 1 FROM segments s WHERE s.id = p.segment_id AND s.evicted_at IS NULL)",
            [],
            |r| r.get(0),
        )
        .map_err(sql_err)?;
    Ok(orphans as u64)
}

/// Re-embeds every page's text through `embed` (batches of at most `batch`) and recomputes each
/// segment's vector as the normalised mean of its pages' new vectors; part of a rebind's
/// transaction, so no page or segment keeps a vector of the old model.
pub(crate) fn rebind_pages(
    tx: &Transaction<'_>,
    dimension: usize,
    batch: usize,
    embed: &mut EmbedBatch<'_>,
) -> Result<u64> {
    let rows: Vec<(i64, String, Option<String>)> = {
        let mut st = tx
            .prepare("SELECT seq, text, segment_id FROM pages ORDER BY seq")
            .map_err(sql_err)?;
        let it = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(sql_err)?;
        it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    let mut segments: std::collections::BTreeSet<String> = Default::default();
    reembed(
        &rows,
        (dimension, batch),
        embed,
        |(_, text, _)| text.clone(),
        |(seq, _, segment), v| {
            tx.execute_cached(
                "UPDATE pages SET vector = ?1 WHERE seq = ?2",
                params![vector_to_blob(&v), seq],
            )
            .map_err(sql_err)?;
            segments.extend(segment.clone());
            Ok(())
        },
    )?;
    for segment in &segments {
        set_vector_from_pages(tx, segment)?;
        tx.execute_cached(
            "UPDATE segments SET version = version + 1 WHERE id = ?1",
            [segment],
        )
        .map_err(sql_err)?;
    }
    Ok(rows.len() as u64)
}

/// Sets a segment's vector to the normalised mean of its pages' vectors (a rebind's new model,
/// an import's re-embedded pages). A segment without pages keeps its vector.
pub(crate) fn set_vector_from_pages(tx: &Transaction<'_>, segment: &str) -> Result<()> {
    let pages: Vec<Vec<f32>> = {
        let mut st = tx
            .prepare_cached("SELECT vector FROM pages WHERE segment_id = ?1")
            .map_err(sql_err)?;
        let rows = st
            .query_map([segment], |r| r.get::<_, Vec<u8>>(0))
            .map_err(sql_err)?;
        let blobs = rows
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql_err)?;
        blobs.iter().map(|b| blob_to_vector(b)).collect()
    };
    let Some(vector) = segment_vector(pages) else {
        return Ok(());
    };
    tx.execute_cached(
        "UPDATE segments SET vector = ?1 WHERE id = ?2",
        params![vector_to_blob(&vector), segment],
    )
    .map_err(sql_err)?;
    Ok(())
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
