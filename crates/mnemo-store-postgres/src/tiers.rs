//! The hierarchy on PostgreSQL: pages (the short-term window and mid-term members), segments,
//! moves, evictions, analysed marks and segment visits.
//!
//! Writes arrive as a [`TierWrite`] inside an add's batch and run in its transaction, in the
//! order new pages → segment writes → moves → evictions → analysed marks. Every step
//! re-checks the snapshot the pipeline planned from where it writes (a moving page is still
//! `short`, a rewritten segment still has the version the plan saw, an evicted one is locked
//! `FOR UPDATE` before its version is compared). The add holds its scope's write lock, and even
//! without it READ COMMITTED re-reads a row a concurrent writer changed before judging the
//! `WHERE`, so two plans racing for the same rows never both commit; visits, which take no
//! lock, only add to counters. A failed check fails the batch with a conflict.
//!
//! This file holds the row decoding and the reads (pages, segments) and visits; the batch's
//! writes are in [`write`]; re-embedding on a model change (`rebind_tiers`), erase's scrubbing
//! (`scrub_tiers`) and the consistency count for `integrity` in [`rebind`]; export and import
//! of pages and segments in `transfer`.

pub(crate) mod rebind;
pub(crate) mod write;

pub(crate) use rebind::{inconsistent_pages, scrub_tiers, set_vector_from_pages};

use crate::codec::{col, from_ms, scope_from_row};
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use pgvector::Vector;
use postgres::Row;

/// The page columns [`page_from_row`] reads (by name).
pub(crate) const PAGE_COLS: &str = "p.seq, p.id, p.user_id, p.agent_id, p.run_id, p.session_id, \
     p.message_ids, p.text, p.tokens, p.at, p.embedding, p.keywords, p.tier, p.segment_id, \
     p.continues, p.analysed";

/// The segment columns [`segment_from_row`] reads (by name).
pub(crate) const SEGMENT_COLS: &str = "s.id, s.user_id, s.agent_id, s.run_id, s.summary, \
     s.summary_author, s.keywords, s.embedding, s.page_count, s.length_tokens, s.visits, \
     s.last_visit_at, s.created_at, s.updated_at, s.evicted_at, s.version, s.event_time";

/// The owners `scope` covers (exactly `scope` when `exact`), on the table aliased `alias`.
fn scope_pred(p: &mut Pred, alias: &str, scope: &Scope, exact: bool) {
    if exact {
        predicate::exact_scope(p, alias, scope);
    } else {
        predicate::scope(p, alias, scope);
    }
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
        message_ids: serde_json::from_value(col(row, "message_ids")?)
            .map_err(|e| Error::storage(format!("bad message_ids in a row: {e}")))?,
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
        event_time: crate::codec::event_time_from_value(col(row, "event_time")?)?,
    })
}

/// A segment's event time as its three columns: the ends for range reads, the whole as JSONB.
pub(crate) fn event_cols(s: &Segment) -> (Option<i64>, Option<i64>, Option<serde_json::Value>) {
    match &s.event_time {
        Some(e) => (
            Some(e.start.timestamp_millis()),
            Some(e.end.timestamp_millis()),
            Some(crate::codec::event_time_value(e)),
        ),
        None => (None, None, None),
    }
}

impl Tiers for PgStore {
    fn plan_turn(&self, scope_keys: &[String]) -> Result<Option<PlanTurn>> {
        crate::turn::take(&self.pool, scope_keys).map(|t| Some(Box::new(t) as PlanTurn))
    }

    fn pages(&self, q: &PageQuery) -> Result<Vec<StoredPage>> {
        let mut c = Pred::default();
        if let Some(s) = &q.scope {
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

    fn segments(&self, scope: &Scope, exact: bool, evicted: bool) -> Result<Vec<Segment>> {
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

    fn record_visits(&self, visits: &Visits) -> Result<u64> {
        self.tx(|tx| {
            let mut n = 0u64;
            for (id, count) in visits.counts() {
                let mut c = Pred::default();
                let count = c.arg(i64::from(*count));
                let at = c.arg(visits.at_ms());
                let id = c.arg(id.0);
                c.and(&format!("s.id = {id} AND s.evicted_at IS NULL"));
                predicate::scope(&mut c, "s", visits.scope());
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
}
