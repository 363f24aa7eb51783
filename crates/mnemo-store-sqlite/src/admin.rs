//! [`mnemo_core::Admin`] on SQLite: binding the embedding model (and re-embedding every
//! memory for a new one), the integrity check, the counts, reset and the API key accessor.
use crate::codec::*;
use crate::read_dimension;
use crate::write::embed_text_of;
use crate::write::*;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::params;
use rusqlite::OptionalExtension;

impl Admin for SqliteStore {
    fn bind_embedder(&self, binding: &Binding) -> Result<()> {
        let (model_id, dimension) = (binding.model_id(), binding.dimension());
        self.write_tx(|tx| {
            let current: Option<String> = tx
                .query_row_cached("SELECT value FROM meta WHERE key = 'embedding_model'", [], |r| r.get(0))
                .optional()
                .map_err(sql_err)?;
            let current = current.zip(read_dimension(tx)?);
            let current = current.as_ref().map(|(m, d)| (m.as_str(), *d));
            if !binding.check(current, " (the old file is kept as a backup)")? {
                tx.execute_cached(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('embedding_model', ?1), ('dimension', ?2)",
                    params![model_id, dimension.to_string()],
                )
                .map_err(sql_err)?;
            }
            Ok(())
        })?;
        // `write_tx` caught the derived indexes up, building them now that a dimension is known.
        Ok(())
    }

    fn rebind_embedder(&self, rebind: &Rebind, embed: &mut EmbedBatch<'_>) -> Result<u64> {
        let (model_id, dimension, batch) =
            (rebind.to.model_id(), rebind.to.dimension(), rebind.batch);
        let n = self.write_tx(|tx| {
            let rows: Vec<(i64, String)> = {
                let mut stmt = tx
                    .prepare("SELECT m.seq, COALESCE(m.index_text, m.text) FROM vectors v JOIN memories m ON m.seq = v.seq ORDER BY m.seq")
                    .map_err(sql_err)?;
                let it = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(sql_err)?;
                it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
            };
            tx.execute_cached("DELETE FROM vector_changes", []).map_err(sql_err)?;
            reembed(
                &rows,
                (dimension, batch),
                embed,
                |(_, t)| embed_text_of(t),
                |(seq, _), v| {
                    tx.execute_cached("UPDATE vectors SET data = ?1 WHERE seq = ?2", params![vector_to_blob(&v), seq])
                        .map_err(sql_err)?;
                    log_change(tx, *seq, "put")
                },
            )?;
            crate::tiers::rebind_pages(tx, dimension, batch, embed)?;
            tx.execute_cached(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('embedding_model', ?1), ('dimension', ?2)",
                params![model_id, dimension.to_string()],
            )
            .map_err(sql_err)?;
            Ok(rows.len() as u64)
        });
        // The derived index of the old vectors is worthless now: drop it and rebuild.
        *self.ann.write() = None;
        if let Some(path) = &self.path {
            crate::ann::remove_saved(path);
        }
        let n = n?;
        let conn = self.writer.lock();
        self.sync_ann(&conn)?;
        Ok(n)
    }

    fn integrity(&self) -> Result<IntegrityReport> {
        let conn = self.writer.lock();
        self.sync_ann(&conn)?;
        let count = |sql: &str| -> Result<u64> {
            conn.query_row(sql, [], |r| r.get::<_, i64>(0))
                .map(|n| n as u64)
                .map_err(sql_err)
        };
        Ok(IntegrityReport {
            memories: count("SELECT COUNT(*) FROM memories")?,
            indexed_memories: count("SELECT COUNT(*) FROM memories WHERE state <> 'deleted'")?,
            lexical_rows: count("SELECT COUNT(*) FROM memories_fts")?,
            vectors: count("SELECT COUNT(*) FROM vectors v JOIN memories m ON m.seq = v.seq")?,
            memories_without_add_history: count(
                "SELECT COUNT(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM history h WHERE h.memory_id = m.id AND h.event = 'ADD')",
            )?,
            ann_entries: self.ann.read().as_ref().map_or(0, |a| a.len() as u64),
            lexical_index_entries: self.ann.read().as_ref().map_or(0, |a| a.lex.docs()),
            messages: count("SELECT COUNT(*) FROM messages")?,
            entities_with_wrong_mentions: count(
                "SELECT COUNT(*) FROM entities e WHERE e.mentions <> \
                 (SELECT COUNT(*) FROM entity_memories em WHERE em.entity_id = e.id)",
            )?,
            pages: count("SELECT COUNT(*) FROM pages")?,
            mid_pages_without_segment: crate::tiers::inconsistent_pages(&conn)?,
        })
    }

    fn stats(&self) -> Result<StoreStats> {
        self.read(|conn| {
            let count = |sql: &str| -> Result<u64> {
                conn.query_row(sql, [], |r| r.get::<_, i64>(0))
                    .map(|n| n as u64)
                    .map_err(sql_err)
            };
            let model: Option<String> = conn
                .query_row(
                    "SELECT value FROM meta WHERE key = 'embedding_model'",
                    [],
                    |r| r.get(0),
                )
                .ok();
            let file_bytes = self.path().map_or(0, |p| {
                let mut total = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
                let mut wal = p.as_os_str().to_owned();
                wal.push("-wal");
                total += std::fs::metadata(std::path::PathBuf::from(wal))
                    .map(|m| m.len())
                    .unwrap_or(0);
                total
            });
            Ok(StoreStats {
                schema_version: crate::SCHEMA_VERSION,
                memories: count("SELECT COUNT(*) FROM memories WHERE state = 'active'")?,
                messages: count("SELECT COUNT(*) FROM messages")?,
                file_bytes,
                embedding_model: model,
                dimension: crate::read_dimension(conn)?,
            })
        })
    }

    fn reset(&self) -> Result<()> {
        self.write_tx(|tx| {
            tx.execute_batch(
                "DELETE FROM memories; DELETE FROM memories_fts; DELETE FROM vectors; DELETE FROM messages; \
                 DELETE FROM memory_sources; DELETE FROM history; DELETE FROM links; DELETE FROM entities; \
                 DELETE FROM entity_memories; DELETE FROM relations; DELETE FROM relation_sources; DELETE FROM idempotency; DELETE FROM vector_changes; \
                 DELETE FROM pages; DELETE FROM segments; DELETE FROM jobs; \
                 DELETE FROM meta WHERE key IN ('embedding_model', 'dimension');",
            )
            .map_err(sql_err)
        })?;
        *self.ann.write() = None;
        if let Some(path) = &self.path {
            crate::ann::remove_saved(path);
        }
        Ok(())
    }
}
