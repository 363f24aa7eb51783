//! The integrity check and the store's counts.
//!
//! The derived indexes of this store live in PostgreSQL itself: the HNSW index holds every
//! non-NULL `embedding` and the GIN index every non-NULL `lexical`, so the "derived index"
//! counts of the report are those column counts (the database keeps them in step).

use crate::{pg_err, PgStore};
use mnemo_core::*;

impl PgStore {
    pub(crate) fn check_integrity(&self) -> Result<IntegrityReport> {
        self.with(|c| {
            let row = c
                .query_one(
                    "SELECT \
                     (SELECT COUNT(*) FROM memories), \
                     (SELECT COUNT(*) FROM memories WHERE state <> 'deleted'), \
                     (SELECT COUNT(*) FROM memories WHERE lexical IS NOT NULL), \
                     (SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL), \
                     (SELECT COUNT(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM history h \
                        WHERE h.scope_key = m.scope_key AND h.memory_id = m.id AND h.event = 'ADD')), \
                     (SELECT COUNT(*) FROM messages), \
                     (SELECT COUNT(*) FROM entities e WHERE e.mentions <> (SELECT COUNT(*) \
                        FROM entity_memories em WHERE em.scope_key = e.scope_key AND em.entity_id = e.id)), \
                     (SELECT COUNT(*) FROM pages)",
                    &[],
                )
                .map_err(pg_err)?;
            let n = |i: usize| row.get::<_, i64>(i).max(0) as u64;
            let mid_pages_without_segment = crate::tiers::inconsistent_pages(c)?;
            Ok(IntegrityReport {
                memories: n(0),
                indexed_memories: n(1),
                lexical_rows: n(2),
                vectors: n(3),
                memories_without_add_history: n(4),
                ann_entries: n(3),
                lexical_index_entries: n(2),
                messages: n(5),
                entities_with_wrong_mentions: n(6),
                pages: n(7),
                mid_pages_without_segment,
            })
        })
    }

    /// Counts, the bound model, and the bytes the store's tables and their indexes take on
    /// disk (`file_bytes`, the closest thing to the embedded store's file size).
    pub(crate) fn store_stats(&self) -> Result<StoreStats> {
        self.with(|c| {
            let row = c
                .query_one(
                    "SELECT \
                     (SELECT COUNT(*) FROM memories WHERE state = 'active'), \
                     (SELECT COUNT(*) FROM messages), \
                     (SELECT COALESCE(SUM(pg_total_relation_size(t.oid)), 0)::bigint \
                        FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace \
                        WHERE n.nspname = current_schema() AND t.relkind = 'r')",
                    &[],
                )
                .map_err(pg_err)?;
            let n = |i: usize| row.get::<_, i64>(i).max(0) as u64;
            let bound = crate::search::bound(c)?;
            Ok(StoreStats {
                schema_version: crate::SCHEMA_VERSION,
                memories: n(0),
                messages: n(1),
                file_bytes: n(2),
                embedding_model: bound.as_ref().map(|(m, _)| m.clone()),
                dimension: bound.map(|(_, d)| d),
            })
        })
    }
}
