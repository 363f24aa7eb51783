//! Erasure: removing a memory's content from every place the file keeps a copy, for the
//! deletions people ask for by law. A soft delete keeps the text for audit; an erase does not.
//!
//! Copies of a memory's text live in its row, its FTS5 entry, its history events (and the events
//! of memories that superseded it or that it superseded), the index texts of its conversation
//! neighbours (context windows), stored idempotency results, its entity names and — when it is
//! a raw memory, or asked for — the source messages. All of them are scrubbed in one IMMEDIATE
//! transaction; every connection runs with `secure_delete` on (freed and rewritten space is
//! zeroed by every write, so earlier writes leave no old copies in free pages either) and the FTS5 index's own
//! `secure-delete` option (entries are removed, not shadowed by tombstones). Afterwards a
//! `wal_checkpoint(TRUNCATE)` moves the new pages into the main file and empties the WAL, so
//! neither file holds the text once `erase` returns. The erased memories' vectors leave the
//! vector index too: the slots the graph freed are overwritten in memory and the saved index
//! files are removed, to be saved again at close (`scrub_saved_index`).

use crate::codec::*;
use crate::predicate::{self, Pred};
use crate::write::{history, log_change, scope_cols, unindex};
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::{params, params_from_iter, OptionalExtension, Transaction, TransactionBehavior};

/// Moves every WAL frame into the main file and empties the WAL, so old copies leave it.
/// Readers hold no transaction between calls, so the checkpoint can copy every frame.
fn truncate_wal(conn: &rusqlite::Connection) -> Result<()> {
    let busy: i64 = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
        .map_err(sql_err)?;
    if busy != 0 {
        return Err(Error::Unavailable {
            component: "store".into(),
            reason: "the erase is committed, but a reader kept the write-ahead log from being \
                     truncated; retry the erase to finish removing old copies"
                .into(),
        });
    }
    Ok(())
}

/// The messages of the target (alias `g`), as a predicate.
fn log_pred(scope: &Scope, target: EraseTarget<'_>, alias: &str) -> Pred {
    let mut p = Pred::default();
    predicate::scope(&mut p, alias, scope);
    if let EraseTarget::Session(s) = target {
        p.push(
            &format!("{alias}.session_id = ?"),
            [rusqlite::types::Value::Text(s.to_string())],
        );
    }
    p
}

fn erase_log_in(
    tx: &Transaction<'_>,
    log: &EraseLog<'_>,
    ctx: &WritePlan,
) -> Result<EraseLogReport> {
    let (scope, target) = (log.scope(), log.target());
    let g = log_pred(scope, target, "g");
    let count = |sql: &str, p: &Pred| -> Result<i64> {
        tx.query_row(sql, params_from_iter(p.params.iter()), |r| r.get(0))
            .map_err(sql_err)
    };
    let in_log = count(
        &format!("SELECT COUNT(*) FROM messages g WHERE {}", g.where_sql()),
        &g,
    )?;
    if let EraseTarget::Session(s) = target {
        if in_log == 0 {
            return Err(no_session(s));
        }
    }
    // The memories it covers, not erased before.
    let mut m = Pred::default();
    predicate::scope(&mut m, "m", scope);
    if let EraseTarget::Session(_) = target {
        m.push(
            &format!(
                "m.id IN (SELECT s.memory_id FROM memory_sources s WHERE s.message_id IN \
                 (SELECT g.id FROM messages g WHERE {}))",
                g.where_sql()
            ),
            g.params.clone(),
        );
    }
    m.and("NOT EXISTS (SELECT 1 FROM history h WHERE h.memory_id = m.id AND h.event = 'ERASE')");
    let ids: Vec<String> = {
        let mut st = tx
            .prepare(&format!(
                "SELECT m.id FROM memories m WHERE {} ORDER BY m.seq",
                m.where_sql()
            ))
            .map_err(sql_err)?;
        let rows = st
            .query_map(params_from_iter(m.params.iter()), |r| r.get::<_, String>(0))
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    // Counted before the memories' erases blank their own messages.
    let messages_erased = count(
        &format!(
            "SELECT COUNT(*) FROM messages g WHERE {} AND (g.content <> '' OR g.name IS NOT NULL)",
            g.where_sql()
        ),
        &g,
    )?;
    // The turns' texts, for the jobs that carry copies of them (read before they go).
    let turns: Vec<String> = {
        let mut st = tx
            .prepare(&format!(
                "SELECT g.content FROM messages g WHERE {}",
                g.where_sql()
            ))
            .map_err(sql_err)?;
        let rows = st
            .query_map(params_from_iter(g.params.iter()), |r| r.get::<_, String>(0))
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    let mut report = EraseLogReport::new(ids.len(), messages_erased as u64);
    if target == EraseTarget::Scope {
        crate::blocks::erase_scope(tx, scope)?;
    }
    for id in &ids {
        erase_in(tx, &log.memory(MemoryId::parse(id)?), ctx)?;
    }
    if target == EraseTarget::Scope {
        crate::relations::drop_scope(tx, scope)?;
    }
    crate::jobs::scrub_erased(tx, scope, &turns, chrono::Utc::now())?;
    tx.execute(
        &format!(
            "UPDATE messages SET content = '', name = NULL WHERE id IN \
             (SELECT g.id FROM messages g WHERE {})",
            g.where_sql()
        ),
        params_from_iter(g.params.iter()),
    )
    .map_err(sql_err)?;
    let p = log_pred(scope, target, "p");
    report.pages_scrubbed = tx
        .execute(
            &format!(
                "UPDATE pages SET text = '', keywords = '[]' WHERE id IN \
                 (SELECT p.id FROM pages p WHERE {}) AND (text <> '' OR keywords <> '[]')",
                p.where_sql()
            ),
            params_from_iter(p.params.iter()),
        )
        .map_err(sql_err)? as u64;
    report.segments_scrubbed = match target {
        EraseTarget::Session(_) => tx.execute(
            &format!(
                "UPDATE segments SET summary = '', keywords = '[]', event_start = NULL, event_end = NULL, \
                 event_time = NULL WHERE id IN \
                 (SELECT p.segment_id FROM pages p WHERE {} AND p.segment_id IS NOT NULL) \
                 AND (summary <> '' OR keywords <> '[]' OR event_time IS NOT NULL)",
                p.where_sql()
            ),
            params_from_iter(p.params.iter()),
        ),
        EraseTarget::Scope => {
            let mut sg = Pred::default();
            predicate::scope(&mut sg, "x", scope);
            tx.execute(
                &format!(
                    "UPDATE segments SET summary = '', keywords = '[]', event_start = NULL, event_end = NULL, \
                 event_time = NULL WHERE id IN \
                     (SELECT x.id FROM segments x WHERE {}) AND (summary <> '' OR keywords <> '[]' OR event_time IS NOT NULL)",
                    sg.where_sql()
                ),
                params_from_iter(sg.params.iter()),
            )
        }
    }
    .map_err(sql_err)? as u64;
    Ok(report)
}

fn erase_in(tx: &Transaction<'_>, req: &EraseMemory<'_>, ctx: &WritePlan) -> Result<EraseReport> {
    let id = req.id;
    // Any state: a soft-deleted or superseded memory still holds its text.
    let mut p = Pred::default();
    p.push("m.id = ?", [rusqlite::types::Value::Text(id.to_string())]);
    predicate::scope(&mut p, "m", req.scope);
    let sql = format!(
        "SELECT {MEMORY_COLS} FROM memories m WHERE {}",
        p.where_sql()
    );
    let (seq, m) = tx
        .query_row(&sql, params_from_iter(p.params.iter()), memory_from_row)
        .optional()
        .map_err(sql_err)?
        .ok_or_else(|| Error::not_found("memory", id))?;
    let owner = m.scope()?;
    let ids = id.to_string();
    let erased: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM history WHERE memory_id = ?1 AND event = 'ERASE'",
            [&ids],
            |r| r.get(0),
        )
        .map_err(sql_err)?;
    if erased > 0 {
        return Err(already_erased(id));
    }
    let source_count: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM memory_sources WHERE memory_id = ?1",
            [&ids],
            |r| r.get(0),
        )
        .map_err(sql_err)?;

    // Every text the memory ever had, from its row and its history.
    let mut past: Vec<Option<String>> = Vec::new();
    {
        let mut st = tx
            .prepare("SELECT old_text, new_text FROM history WHERE memory_id = ?1")
            .map_err(sql_err)?;
        let rows = st
            .query_map([&ids], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql_err)?;
        for row in rows {
            let (a, b) = row.map_err(sql_err)?;
            past.extend([a, b]);
        }
    }
    let plan = ScrubPlan::new(&m, past, req.sources);
    let mut report = plan.report(id, source_count as u64);
    let texts = &plan.texts;

    tx.execute(
        "INSERT INTO memories_fts (memories_fts, rank) VALUES ('secure-delete', 1)",
        [],
    )
    .map_err(sql_err)?;
    unindex(tx, seq)?;
    let now = chrono::Utc::now()
        .timestamp_millis()
        .max(m.updated_at.timestamp_millis());
    tx.execute(
        "UPDATE memories SET text = '', index_text = NULL, note = NULL, metadata = '{}', hash = '', \
         event_start = NULL, event_end = NULL, event_time = NULL, state = 'deleted', updated_at = ?1, valid_from = COALESCE(valid_until, ?1), \
         valid_until = COALESCE(valid_until, ?1) WHERE seq = ?2",
        params![now, seq],
    )
    .map_err(sql_err)?;

    report.history_scrubbed = scrub_history(tx, &owner, &ids, texts)?;
    report.neighbours_reindexed = reindex_quoting(tx, &owner, &plan)?;

    // Pages and segment summaries of the hierarchy copy message texts.
    let mut contents: Vec<String> = Vec::new();
    if plan.sources {
        let mut st = tx
            .prepare(
                "SELECT content FROM messages WHERE id IN \
                 (SELECT message_id FROM memory_sources WHERE memory_id = ?1)",
            )
            .map_err(sql_err)?;
        let rows = st.query_map([&ids], |r| r.get(0)).map_err(sql_err)?;
        contents = rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?;
    }
    // Jobs keep their own copies (a queued add's request, the memories a done one wrote).
    let job_texts: Vec<String> = plan.texts.iter().chain(&contents).cloned().collect();
    crate::jobs::scrub_erased(tx, &owner, &job_texts, chrono::Utc::now())?;
    report.pages_scrubbed = crate::tiers::scrub(tx, &owner, &plan.tier_texts(contents))?;

    crate::relations::drop_support(tx, &ids)?;
    report.entities_removed = unlink_entities(tx, &ids)?;

    report.messages_erased = if plan.sources {
        tx.execute(
            "UPDATE messages SET content = '', name = NULL WHERE id IN \
             (SELECT message_id FROM memory_sources WHERE memory_id = ?1)",
            [&ids],
        )
        .map_err(sql_err)? as u64
    } else {
        0
    };

    report.replays_scrubbed = scrub_replays(tx, id, &ids)?;

    tx.execute(
        "INSERT INTO memories_fts (memories_fts, rank) VALUES ('secure-delete', 0)",
        [],
    )
    .map_err(sql_err)?;
    tx.execute(
        "INSERT INTO memories_fts (memories_fts) VALUES ('optimize')",
        [],
    )
    .map_err(sql_err)?;
    history(
        tx,
        &HistoryEntry::new(id, &owner, HistoryKind::Erase, ctx, now),
    )?;
    Ok(report)
}

/// Stored add results that name the memory keep their ids and events, not its text: a retry
/// with the same key still gets the original answer, with the erased text left out.
fn scrub_replays(tx: &Transaction<'_>, id: MemoryId, ids: &str) -> Result<u64> {
    let rows: Vec<(String, String, String)> = {
        let mut st = tx
            .prepare("SELECT scope_key, key, outcome FROM idempotency WHERE instr(outcome, ?1) > 0")
            .map_err(sql_err)?;
        let it = st
            .query_map([ids], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(sql_err)?;
        it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    let mut n = 0;
    for (scope_key, key, raw) in rows {
        let text = scrubbed_replay(&raw, id)?;
        n += tx
            .execute(
                "UPDATE idempotency SET outcome = ?1 WHERE scope_key = ?2 AND key = ?3",
                params![text, scope_key, key],
            )
            .map_err(sql_err)? as u64;
    }
    Ok(n)
}

impl SqliteStore {
    /// What every erase does after its commit, with the writer still held: the index catches
    /// up, the WAL is moved into the main file and emptied, and the saved index is scrubbed
    /// (`scrub_saved_index`, after the writer is released).
    fn after_erase(&self, conn: parking_lot::MutexGuard<'_, rusqlite::Connection>) -> Result<()> {
        self.sync_ann(&conn)?;
        {
            let _turn = self.checkpointer_turn();
            truncate_wal(&conn)?;
        }
        drop(conn);
        self.scrub_saved_index()
    }
}

impl Erasure for SqliteStore {
    fn erase(&self, memory: &EraseMemory<'_>, ctx: &WritePlan) -> Result<EraseReport> {
        let mut conn = self.writer.lock();
        // Every connection runs with `secure_delete` on (see `schema::configure`).
        let report = {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql_err)?;
            let report = erase_in(&tx, memory, ctx)?;
            tx.commit().map_err(sql_err)?;
            report
        };
        self.after_erase(conn)?;
        Ok(report)
    }

    fn erase_log(&self, log: &EraseLog<'_>, ctx: &WritePlan) -> Result<EraseLogReport> {
        let mut conn = self.writer.lock();
        let report = {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql_err)?;
            let report = erase_log_in(&tx, log, ctx)?;
            tx.commit().map_err(sql_err)?;
            report
        };
        self.after_erase(conn)?;
        Ok(report)
    }
}

/// This memory's history events lose their content, its links their reasons; other events of
/// the owner's scope that quote one of `texts` (supersession records) lose the quoting fields.
/// The events changed.
fn scrub_history(tx: &Transaction<'_>, owner: &Scope, ids: &str, texts: &[String]) -> Result<u64> {
    let mut scrubbed = tx
        .execute(
            "UPDATE history SET old_text = NULL, new_text = NULL, old_metadata = NULL, \
             new_metadata = NULL, reason = NULL, old_note = NULL, new_note = NULL WHERE memory_id = ?1",
            [ids],
        )
        .map_err(sql_err)? as u64;
    // A link's stated reason may quote either end.
    tx.execute(
        "UPDATE links SET reason = NULL WHERE from_id = ?1 OR to_id = ?1",
        [ids],
    )
    .map_err(sql_err)?;
    let (u, a, r) = scope_cols(owner);
    for t in texts {
        scrubbed += tx
            .execute(
                "UPDATE history SET \
                   old_text = CASE WHEN instr(old_text, ?1) > 0 THEN NULL ELSE old_text END, \
                   new_text = CASE WHEN instr(new_text, ?1) > 0 THEN NULL ELSE new_text END, \
                   reason = CASE WHEN instr(reason, ?1) > 0 THEN NULL ELSE reason END \
                 WHERE memory_id != ?2 AND user_id IS ?3 AND agent_id IS ?4 AND run_id IS ?5 \
                   AND (instr(old_text, ?1) > 0 OR instr(new_text, ?1) > 0 OR instr(reason, ?1) > 0)",
                params![t, ids, u, a, r],
            )
            .map_err(sql_err)? as u64;
    }

    Ok(scrubbed)
}

/// Neighbours whose context windows quote the erased texts, re-indexed without those lines.
/// Their vectors are numbers, not text, and stay as embedded (`mnemo reembed` recomputes them).
fn reindex_quoting(tx: &Transaction<'_>, owner: &Scope, plan: &ScrubPlan) -> Result<u64> {
    let (u, a, r) = scope_cols(owner);
    let mut reindexed = 0;
    let quoting: Vec<(i64, String, String)> = {
        let mut st = tx
            .prepare(
                "SELECT seq, text, index_text FROM memories \
                 WHERE user_id IS ?1 AND agent_id IS ?2 AND run_id IS ?3 AND index_text IS NOT NULL",
            )
            .map_err(sql_err)?;
        let rows = st
            .query_map(params![u, a, r], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    for (nseq, ntext, index) in quoting {
        let Some(new_index) = plan.reindexed(&index) else {
            continue;
        };
        let indexed = tx
            .execute("DELETE FROM memories_fts WHERE rowid = ?1", [nseq])
            .map_err(sql_err)?
            > 0;
        let body = new_index.clone().unwrap_or(ntext);
        tx.execute(
            "UPDATE memories SET index_text = ?1 WHERE seq = ?2",
            params![new_index, nseq],
        )
        .map_err(sql_err)?;
        if indexed {
            tx.execute(
                "INSERT INTO memories_fts (rowid, body) VALUES (?1, ?2)",
                params![nseq, body],
            )
            .map_err(sql_err)?;
            log_change(tx, nseq, "put")?;
        }
        reindexed += 1;
    }

    Ok(reindexed)
}

/// Entities lose their link to the memory; one that named only it goes, its name with it. The
/// entities removed.
fn unlink_entities(tx: &Transaction<'_>, ids: &str) -> Result<u64> {
    tx.execute(
        "UPDATE entities SET mentions = mentions - 1 WHERE id IN \
         (SELECT entity_id FROM entity_memories WHERE memory_id = ?1)",
        [ids],
    )
    .map_err(sql_err)?;
    tx.execute("DELETE FROM entity_memories WHERE memory_id = ?1", [ids])
        .map_err(sql_err)?;
    Ok(tx
        .execute("DELETE FROM entities WHERE mentions <= 0", [])
        .map_err(sql_err)? as u64)
}
