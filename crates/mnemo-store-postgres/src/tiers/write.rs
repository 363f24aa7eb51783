//! The hierarchy's rows of one add, in its transaction: [`Writer`]'s `TierWriter` half (the
//! order and the snapshot checks are core's `write_tiers`; see the parent module's docs for the
//! locks that keep the checks true until the commit).

use super::json_list;
use crate::codec::col;
use crate::encode::{insert_history, scope_parts};
use crate::pg_err;
use crate::write::Writer;
use mnemo_core::tier::PageMove;
use mnemo_core::*;
use pgvector::Vector;

impl TierWriter for Writer<'_, '_> {
    fn step(&self, step: WriteStep) -> Result<()> {
        self.store.step(step)
    }

    fn history(&mut self, entry: &HistoryEntry<'_>) -> Result<()> {
        insert_history(self.tx, entry)
    }

    fn insert_page(&mut self, scope: &Scope, p: &NewPage) -> Result<()> {
        let [u, a, r] = scope_parts(scope);
        self.tx
            .execute(
                "INSERT INTO pages (scope_key, id, user_id, agent_id, run_id, session_id, \
                 message_ids, text, tokens, at, embedding, keywords, tier, analysed) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'short', FALSE)",
                &[
                    &scope.key(),
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
        Ok(())
    }

    fn insert_segment(&mut self, scope: &Scope, s: &Segment) -> Result<bool> {
        let [u, a, r] = scope_parts(scope);
        let event = crate::tiers::event_cols(s);
        let n = self
            .tx
            .execute(
                "INSERT INTO segments (scope_key, id, user_id, agent_id, run_id, summary, \
                 summary_author, keywords, embedding, page_count, length_tokens, visits, \
                 last_visit_at, created_at, updated_at, evicted_at, version, event_start, \
                 event_end, event_time) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, NULL, 1, \
                 $16, $17, $18) \
                 ON CONFLICT (scope_key, id) DO NOTHING",
                &[
                    &scope.key(),
                    &s.id.0,
                    &u,
                    &a,
                    &r,
                    &s.summary,
                    &s.summary_author.as_str(),
                    &json_list(&s.keywords),
                    &Vector::from(s.vector.clone()),
                    &(s.page_count as i32),
                    &(s.length_tokens as i64),
                    &(s.visits as i64),
                    &s.last_visit_at.timestamp_millis(),
                    &s.created_at.timestamp_millis(),
                    &s.updated_at.timestamp_millis(),
                    &event.0,
                    &event.1,
                    &event.2,
                ],
            )
            .map_err(pg_err)?;
        Ok(n > 0)
    }

    /// Visits counted since the plan was read are kept (not part of the SET list): the version
    /// check guards the content.
    fn rewrite_segment(&mut self, scope: &Scope, s: &Segment, expected: u64) -> Result<bool> {
        let event = crate::tiers::event_cols(s);
        let n = self
            .tx
            .execute(
                "UPDATE segments SET summary = $1, summary_author = $2, keywords = $3, \
                 embedding = $4, page_count = $5, length_tokens = $6, updated_at = $7, \
                 version = version + 1, event_start = $11, event_end = $12, event_time = $13 \
                 WHERE scope_key = $8 AND id = $9 AND evicted_at IS NULL AND version = $10",
                &[
                    &s.summary,
                    &s.summary_author.as_str(),
                    &json_list(&s.keywords),
                    &Vector::from(s.vector.clone()),
                    &(s.page_count as i32),
                    &(s.length_tokens as i64),
                    &s.updated_at.timestamp_millis(),
                    &scope.key(),
                    &s.id.0,
                    &(expected as i64),
                    &event.0,
                    &event.1,
                    &event.2,
                ],
            )
            .map_err(pg_err)?;
        Ok(n > 0)
    }

    /// Share-locks the segment, so that an eviction racing the move waits for it.
    fn segment_is_active(&mut self, scope: &Scope, id: SegmentId) -> Result<bool> {
        let active = self
            .tx
            .query_opt(
                "SELECT 1 FROM segments WHERE scope_key = $1 AND id = $2 AND evicted_at IS NULL \
                 FOR SHARE",
                &[&scope.key(), &id.0],
            )
            .map_err(pg_err)?;
        Ok(active.is_some())
    }

    fn page_exists(&mut self, scope: &Scope, id: PageId) -> Result<bool> {
        let page = self
            .tx
            .query_opt(
                "SELECT 1 FROM pages WHERE scope_key = $1 AND id = $2",
                &[&scope.key(), &id.0],
            )
            .map_err(pg_err)?;
        Ok(page.is_some())
    }

    fn move_page(&mut self, scope: &Scope, m: &PageMove) -> Result<bool> {
        let n = self
            .tx
            .execute(
                "UPDATE pages SET tier = 'mid', segment_id = $1, continues = $2 \
                 WHERE scope_key = $3 AND id = $4 AND tier = 'short'",
                &[
                    &m.segment.0,
                    &m.continues.map(|c| c.0),
                    &scope.key(),
                    &m.page.0,
                ],
            )
            .map_err(pg_err)?;
        Ok(n > 0)
    }

    /// Locks the segment `FOR UPDATE` before its version is compared.
    fn active_segment(&mut self, scope: &Scope, id: SegmentId) -> Result<Option<(u64, String)>> {
        let current = self
            .tx
            .query_opt(
                "SELECT version, summary FROM segments \
                 WHERE scope_key = $1 AND id = $2 AND evicted_at IS NULL FOR UPDATE",
                &[&scope.key(), &id.0],
            )
            .map_err(pg_err)?;
        current
            .map(|row| Ok((col::<i64>(&row, "version")? as u64, col(&row, "summary")?)))
            .transpose()
    }

    fn evict_segment(&mut self, scope: &Scope, id: SegmentId, at: i64) -> Result<()> {
        let key = scope.key();
        self.tx
            .execute(
                "UPDATE segments SET evicted_at = $1, updated_at = $1, version = version + 1 \
                 WHERE scope_key = $2 AND id = $3",
                &[&at, &key, &id.0],
            )
            .map_err(pg_err)?;
        self.tx
            .execute(
                "UPDATE pages SET tier = 'evicted' WHERE scope_key = $1 AND segment_id = $2",
                &[&key, &id.0],
            )
            .map_err(pg_err)?;
        Ok(())
    }

    fn mark_analysed(&mut self, scope: &Scope, id: PageId) -> Result<bool> {
        let n = self
            .tx
            .execute(
                "UPDATE pages SET analysed = TRUE \
                 WHERE scope_key = $1 AND id = $2 AND NOT analysed",
                &[&scope.key(), &id.0],
            )
            .map_err(pg_err)?;
        Ok(n > 0)
    }
}
