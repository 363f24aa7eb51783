//! [`mnemo_core::Admin`] on PostgreSQL: binding the embedding model (and re-embedding every
//! memory for a new one), the integrity check, the counts, reset and the API key accessor.
use crate::pg_err;
use crate::search::embed_rows;
use crate::search::memory_text;
use crate::search::set_binding;
use crate::search::BIND_LOCK;
use crate::search::*;
use crate::PgStore;
use mnemo_core::*;
use std::sync::atomic::Ordering;

impl Admin for PgStore {
    fn bind_embedder(&self, binding: &Binding) -> Result<()> {
        let (model_id, dimension) = (binding.model_id(), binding.dimension());
        let check = |current: Option<(String, usize)>| {
            let current = current.as_ref().map(|(m, d)| (m.as_str(), *d));
            binding.check(current, "")
        };
        // The common case (every connect after the first): one read, no lock, no DDL.
        if self.with(|c| check(bound(c)?))? {
            return Ok(());
        }
        self.tx(|tx| {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&BIND_LOCK])
                .map_err(pg_err)?;
            if check(bound(tx)?)? {
                return Ok(()); // another server bound it meanwhile
            }
            set_binding(tx, model_id, dimension)
        })?;
        self.dim.store(dimension, Ordering::Release);
        Ok(())
    }

    fn rebind_embedder(&self, rebind: &Rebind, embed: &mut EmbedBatch<'_>) -> Result<u64> {
        let (model_id, dimension, batch) =
            (rebind.to.model_id(), rebind.to.dimension(), rebind.batch);
        self.tx(|tx| {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&BIND_LOCK])
                .map_err(pg_err)?;
            // The columns lose their dimension first, so the new vectors fit whatever it is; the
            // index of the old vectors goes with it and is built again at the end.
            tx.batch_execute("DROP INDEX IF EXISTS memories_embedding_hnsw")
                .map_err(pg_err)?;
            for table in ["memories", "pages", "segments"] {
                tx.batch_execute(&format!(
                    "ALTER TABLE {table} ALTER COLUMN embedding TYPE vector"
                ))
                .map_err(pg_err)?;
            }
            let rows = tx
                .query(
                    "SELECT scope_key, id, COALESCE(index_text, text) FROM memories \
                     WHERE embedding IS NOT NULL ORDER BY seq",
                    &[],
                )
                .map_err(pg_err)?;
            let n = embed_rows(
                tx,
                ("memories", memory_text),
                &rows,
                (dimension, batch),
                embed,
            )?;
            self.rebind_tiers(tx, dimension, batch, embed)?;
            // A segment whose pages are all gone has no pages to average: its summary is
            // embedded instead, so no vector of the old model stays (the column's new
            // dimension would refuse it).
            let orphans = tx
                .query(
                    "SELECT scope_key, id, summary FROM segments \
                     WHERE vector_dims(embedding) <> $1 ORDER BY seq",
                    &[&(dimension as i32)],
                )
                .map_err(pg_err)?;
            embed_rows(
                tx,
                ("segments", str::to_string),
                &orphans,
                (dimension, batch),
                embed,
            )?;
            set_binding(tx, model_id, dimension)?;
            Ok(n)
        })
        .inspect(|_| self.dim.store(dimension, Ordering::Release))
    }

    fn integrity(&self) -> Result<IntegrityReport> {
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

    fn stats(&self) -> Result<StoreStats> {
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

    fn reset(&self) -> Result<()> {
        self.write_tx(|tx| {
            tx.batch_execute(
                "TRUNCATE memories, messages, memory_sources, history, links, entities, \
                 entity_memories, idempotency, pages, segments, lexical_scopes, lexical_terms, \
                 lexical_postings, jobs, relations, relation_sources; \
                 DELETE FROM mnemo_meta WHERE key IN ('model_id', 'dimension');",
            )
            .map_err(pg_err)
        })
    }
}
