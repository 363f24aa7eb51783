//! The hierarchy changes of one add, in its transaction (see the parent module's docs for the
//! order and the checks). The fault points (`PgStore::step`) are where the embedded store has
//! them, so the contract's failure cases fail at the same steps on both stores.

use super::json_list;
use crate::codec::col;
use crate::encode::{insert_history, scope_parts, Change};
use crate::{pg_err, PgStore};
use mnemo_core::tier::{Eviction, Migration, SegmentWrite};
use mnemo_core::*;
use pgvector::Vector;
use postgres::{GenericClient, Transaction};
use std::collections::HashSet;

fn conflict(reason: String) -> Error {
    Error::Conflict { reason }
}

impl PgStore {
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
        let [u, a, r] = scope_parts(scope);
        for p in &w.pages {
            self.step(WriteStep::Page)?;
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
            self.step(WriteStep::Segment)?;
            write_segment(tx, scope, &key, s)?;
            written.insert(s.segment.id);
        }
        for m in &w.migrations {
            self.step(WriteStep::Migrate)?;
            migrate(tx, &key, m)?;
        }
        let now = chrono::Utc::now().timestamp_millis();
        for e in &w.evictions {
            self.step(WriteStep::Evict)?;
            evict(tx, scope, &key, e, written.contains(&e.segment), now)?;
        }
        for id in &w.analysed {
            self.step(WriteStep::Analyse)?;
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
    let [u, a, r] = scope_parts(scope);
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
    let ctx = WriteContext {
        reason: Some(e.reason.clone()),
        ..WriteContext::default()
    };
    let change = Change {
        old_text: Some(&summary),
        ..Change::default()
    };
    insert_history(
        tx,
        (MemoryId(e.segment.0), scope),
        HistoryKind::Evict,
        &change,
        &ctx,
        now,
    )
}
