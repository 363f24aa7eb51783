//! The hierarchy's rows of one add, in its transaction: [`Writer`]'s `TierWriter` half (the
//! order and the snapshot checks are core's [`write_tiers`]). Separate from the reads so the
//! batch's writes sit together, as in the PostgreSQL store's `tiers/write.rs`.

use super::event_cols;
use crate::codec::{sql_err, vector_to_blob, Cached};
use crate::write::{history, scope_cols, Writer};
use mnemo_core::tier::PageMove;
use mnemo_core::*;
use rusqlite::{params, OptionalExtension};

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
