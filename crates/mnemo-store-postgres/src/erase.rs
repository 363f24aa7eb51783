//! Erasure on PostgreSQL: removing a memory's content from every row that keeps a copy, for the
//! deletions people ask for by law. A soft delete keeps the text for audit; an erase does not.
//!
//! Copies of a memory's text live in its row (text, index text, metadata, note, embedding and the
//! generated `lexical` vector), its history events (and the events of its owner that quote it:
//! supersessions), link reasons, the index texts of its conversation neighbours (context
//! windows), stored idempotency results, its entities, the pages and segment summaries of the
//! hierarchy and — with `sources` — the messages it came from. All of them are rewritten in one
//! transaction, under the owner's write lock, ending with an `ERASE` event.
//!
//! Unlike the embedded store, which zeroes freed pages and truncates its WAL before returning,
//! PostgreSQL keeps the old row versions as dead tuples until (auto)vacuum prunes them, and its
//! WAL segments and base backups until they are recycled: once `erase` returns no query sees the
//! text, but the server's files may hold it until then. Operators who must also clear the files
//! run `VACUUM` on the tables after erasures and manage WAL archives and backups accordingly.

use crate::codec::{memory_from_row, ms, MEMORY_COLUMNS};
use crate::encode::insert_history;
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::Transaction;

/// The rows of the target in a table aliased `alias` with scope columns (and `session_id`).
fn log_pred(scope: &Scope, target: EraseTarget<'_>, alias: &str, session: bool) -> Pred {
    let mut p = Pred::default();
    predicate::scope(&mut p, alias, scope);
    if let (EraseTarget::Session(s), true) = (target, session) {
        let a = p.arg(s.to_string());
        p.and(&format!("{alias}.session_id = {a}"));
    }
    p
}

fn erase_log_in(
    tx: &mut Transaction<'_>,
    log: &EraseLog<'_>,
    ctx: &WritePlan,
) -> Result<EraseLogReport> {
    let (scope, target) = (log.scope(), log.target());
    let g = log_pred(scope, target, "g", true);
    let in_log: i64 = tx
        .query_one(
            &format!("SELECT COUNT(*) FROM messages g WHERE {}", g.where_sql()),
            &g.params(),
        )
        .map_err(pg_err)?
        .get(0);
    if let EraseTarget::Session(s) = target {
        if in_log == 0 {
            return Err(no_session(s));
        }
    }
    // Every owner the target covers, locked as an add locks its owner, all before the first
    // erase (sorted, so two erases or an erase and an add never wait on each other in turn).
    // A scope's erase also takes the lock rows of owners with nothing else left (a block
    // owner, a failed job's scope), since it deletes them all at the end.
    let mut q = Pred::default();
    predicate::scope(&mut q, "g", scope);
    let gs = q.take_sql();
    predicate::scope(&mut q, "m", scope);
    let ms = q.take_sql();
    let locks = if target == EraseTarget::Scope {
        predicate::covered_key(&mut q, "k", scope);
        format!(
            " UNION SELECT k.scope_key FROM scope_locks k WHERE {}",
            q.take_sql()
        )
    } else {
        String::new()
    };
    let mut owners: Vec<String> = tx
        .query(
            &format!(
                "SELECT g.scope_key FROM messages g WHERE {gs} \
                 UNION SELECT m.scope_key FROM memories m WHERE {ms}{locks}"
            ),
            &q.params(),
        )
        .map_err(pg_err)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    owners.sort();
    crate::write::lock_scopes(tx, owners.iter().map(String::as_str))?;
    let mut m = Pred::default();
    predicate::scope(&mut m, "m", scope);
    if let EraseTarget::Session(s) = target {
        let a = m.arg(s.to_string());
        let outer = m.take_sql();
        predicate::scope(&mut m, "g", scope);
        let inner = m.take_sql();
        m.and(&format!(
            "{outer} AND (m.scope_key, m.id) IN (SELECT s.scope_key, s.memory_id \
             FROM memory_sources s JOIN messages g ON g.scope_key = s.scope_key \
             AND g.id = s.message_id WHERE g.session_id = {a} AND {inner})"
        ));
    }
    m.and(
        "NOT EXISTS (SELECT 1 FROM history h WHERE h.scope_key = m.scope_key \
         AND h.memory_id = m.id AND h.event = 'ERASE')",
    );
    let ids: Vec<uuid::Uuid> = tx
        .query(
            &format!(
                "SELECT m.id FROM memories m WHERE {} ORDER BY m.seq",
                m.where_sql()
            ),
            &m.params(),
        )
        .map_err(pg_err)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    // Counted before the memories' erases blank their own messages.
    let messages_erased: i64 = tx
        .query_one(
            &format!(
                "SELECT COUNT(*) FROM messages g WHERE {} \
                 AND (g.content <> '' OR g.name IS NOT NULL)",
                g.where_sql()
            ),
            &g.params(),
        )
        .map_err(pg_err)?
        .get(0);
    // The turns' texts, for the jobs that carry copies of them (read before they go).
    let turns: Vec<String> = tx
        .query(
            &format!("SELECT g.content FROM messages g WHERE {}", g.where_sql()),
            &g.params(),
        )
        .map_err(pg_err)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut report = EraseLogReport::new(ids.len(), messages_erased as u64);
    if target == EraseTarget::Scope {
        crate::blocks::erase_scope(tx, scope)?;
    }
    for id in &ids {
        erase_in(tx, &log.memory(MemoryId(*id)), ctx)?;
    }
    if target == EraseTarget::Scope {
        crate::relations::drop_scope(tx, scope)?;
    }
    crate::jobs::scrub_erased(tx, scope, &turns, chrono::Utc::now())?;
    tx.execute(
        &format!(
            "UPDATE messages g SET content = '', name = NULL WHERE {} \
             AND (g.content <> '' OR g.name IS NOT NULL)",
            g.where_sql()
        ),
        &g.params(),
    )
    .map_err(pg_err)?;
    let p = log_pred(scope, target, "p", true);
    report.pages_scrubbed = tx
        .execute(
            &format!(
                "UPDATE pages p SET text = '', keywords = '[]'::jsonb WHERE {} \
                 AND (p.text <> '' OR p.keywords <> '[]'::jsonb)",
                p.where_sql()
            ),
            &p.params(),
        )
        .map_err(pg_err)?;
    report.segments_scrubbed = match target {
        EraseTarget::Session(_) => tx.execute(
            &format!(
                "UPDATE segments x SET summary = '', keywords = '[]'::jsonb, event_start = NULL, \
                 event_end = NULL, event_time = NULL \
                 WHERE (x.scope_key, x.id) IN (SELECT p.scope_key, p.segment_id FROM pages p \
                 WHERE {} AND p.segment_id IS NOT NULL) \
                 AND (x.summary <> '' OR x.keywords <> '[]'::jsonb OR x.event_time IS NOT NULL)",
                p.where_sql()
            ),
            &p.params(),
        ),
        EraseTarget::Scope => {
            let x = log_pred(scope, target, "x", false);
            tx.execute(
                &format!(
                    "UPDATE segments x SET summary = '', keywords = '[]'::jsonb, event_start = NULL, \
                 event_end = NULL, event_time = NULL WHERE {} \
                     AND (x.summary <> '' OR x.keywords <> '[]'::jsonb OR x.event_time IS NOT NULL)",
                    x.where_sql()
                ),
                &x.params(),
            )
        }
    }
    .map_err(pg_err)?;
    if target == EraseTarget::Scope {
        crate::write::drop_scope_locks(tx, scope)?;
    }
    Ok(report)
}

fn erase_in(
    tx: &mut Transaction<'_>,
    req: &EraseMemory<'_>,
    ctx: &WritePlan,
) -> Result<EraseReport> {
    let id = req.id;
    // Any state: a soft-deleted or superseded memory still holds its text.
    let mut p = Pred::default();
    let a = p.arg(id.0);
    p.and(&format!("m.id = {a}"));
    predicate::scope(&mut p, "m", req.scope);
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM memories m WHERE {}",
        p.where_sql()
    );
    let found = tx
        .query_opt(&sql, &p.params())
        .map_err(pg_err)?
        .ok_or_else(|| Error::not_found("memory", id))?;
    let owner = memory_from_row(&found)?.scope()?;
    let key = owner.key();
    // The owner's write lock (as an add takes it): entity counts and neighbours' index texts
    // change under it. The row is read again under the lock.
    crate::write::lock_scopes(tx, [key.as_str()])?;
    let row = tx
        .query_one(
            &format!(
                "SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.scope_key = $1 AND m.id = $2 \
                 FOR UPDATE"
            ),
            &[&key, &id.0],
        )
        .map_err(pg_err)?;
    let m = memory_from_row(&row)?;
    let erased: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM history WHERE scope_key = $1 AND memory_id = $2 \
             AND event = 'ERASE'",
            &[&key, &id.0],
        )
        .map_err(pg_err)?
        .get(0);
    if erased > 0 {
        return Err(already_erased(id));
    }
    let source_count: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM memory_sources WHERE scope_key = $1 AND memory_id = $2",
            &[&key, &id.0],
        )
        .map_err(pg_err)?
        .get(0);

    // Every text the memory ever had, from its row and its history.
    let history = tx
        .query(
            "SELECT old_text, new_text FROM history WHERE scope_key = $1 AND memory_id = $2",
            &[&key, &id.0],
        )
        .map_err(pg_err)?;
    let history = history.iter().flat_map(|r| [r.get(0), r.get(1)]);
    let plan = ScrubPlan::new(&m, history, req.sources);
    let mut report = plan.report(id, source_count as u64);
    let texts = &plan.texts;

    // The record keeps its id, scope, kind, times and the `deleted` state; `lexical` is
    // generated NULL for a deleted memory, so the lexical index forgets it with the text.
    let now = chrono::Utc::now().timestamp_millis().max(ms(m.updated_at));
    tx.execute(
        "UPDATE memories SET text = '', index_text = NULL, note = NULL, metadata = '{}'::jsonb, \
         hash = '', embedding = NULL, event_start = NULL, event_end = NULL, event_time = NULL, \
         state = 'deleted', updated_at = $1, \
         valid_from = COALESCE(valid_until, $1), valid_until = COALESCE(valid_until, $1) \
         WHERE scope_key = $2 AND id = $3",
        &[&now, &key, &id.0],
    )
    .map_err(pg_err)?;

    report.history_scrubbed = scrub_history(tx, &key, id, texts)?;
    report.neighbours_reindexed = reindex_quoting(tx, &key, &plan)?;

    // The messages it came from: their contents are erased with `sources`, and the pages and
    // segment summaries of the hierarchy that copy them are scrubbed either way.
    let source_sql =
        "SELECT message_id FROM memory_sources WHERE scope_key = $1 AND memory_id = $2";
    let mut contents: Vec<String> = Vec::new();
    if plan.sources {
        let rows = tx
            .query(
                &format!(
                    "SELECT content FROM messages WHERE scope_key = $1 AND id IN ({source_sql})"
                ),
                &[&key, &id.0],
            )
            .map_err(pg_err)?;
        contents = rows.iter().map(|r| r.get(0)).collect();
    }
    // Jobs keep their own copies (a queued add's request, the memories a done one wrote).
    let job_texts: Vec<String> = plan.texts.iter().chain(&contents).cloned().collect();
    crate::jobs::scrub_erased(tx, &owner, &job_texts, chrono::Utc::now())?;
    report.pages_scrubbed = crate::tiers::scrub_tiers(tx, &owner, &plan.tier_texts(contents))?;

    // Entities: unlinked; one that named only this memory goes, its name with it.
    crate::relations::drop_support(tx, &key, id)?;
    crate::entities::unlink_memory(tx, &key, id)?;
    report.entities_removed = tx
        .execute(
            "DELETE FROM entities WHERE scope_key = $1 AND mentions <= 0",
            &[&key],
        )
        .map_err(pg_err)?;

    report.messages_erased = if plan.sources {
        tx.execute(
            &format!(
                "UPDATE messages SET content = '', name = NULL \
                 WHERE scope_key = $1 AND id IN ({source_sql})"
            ),
            &[&key, &id.0],
        )
        .map_err(pg_err)?
    } else {
        0
    };

    report.replays_scrubbed = scrub_replays(tx, id)?;

    insert_history(
        tx,
        &HistoryEntry::new(id, &owner, HistoryKind::Erase, ctx, now),
    )?;
    Ok(report)
}

/// Stored add results that name the memory keep their ids and events, not its text: a retry
/// with the same key still gets the original answer, with the erased text left out.
fn scrub_replays(tx: &mut Transaction<'_>, id: MemoryId) -> Result<u64> {
    let rows = tx
        .query(
            "SELECT scope_key, key, outcome::text FROM idempotency \
             WHERE strpos(outcome::text, $1) > 0",
            &[&id.to_string()],
        )
        .map_err(pg_err)?;
    let mut n = 0;
    for r in rows {
        let (scope_key, key, raw): (String, String, String) = (r.get(0), r.get(1), r.get(2));
        let stored = scrubbed_replay(&raw, id)?;
        n += tx
            .execute(
                "UPDATE idempotency SET outcome = $1::text::jsonb WHERE scope_key = $2 AND key = $3",
                &[&stored, &scope_key, &key],
            )
            .map_err(pg_err)?;
    }
    Ok(n)
}

impl Erasure for PgStore {
    fn erase(&self, memory: &EraseMemory<'_>, ctx: &WritePlan) -> Result<EraseReport> {
        self.tx(|tx| erase_in(tx, memory, ctx))
    }

    fn erase_log(&self, log: &EraseLog<'_>, ctx: &WritePlan) -> Result<EraseLogReport> {
        self.tx(|tx| erase_log_in(tx, log, ctx))
    }

    fn erase_gate(&self, parts: &[String], exclusive: bool) -> Result<Option<PlanTurn>> {
        crate::turn::gate(&self.pool, parts, exclusive).map(|g| Some(Box::new(g) as PlanTurn))
    }
}

/// This memory's history events lose their content, its links their reasons; other events of
/// the owner that quote one of `texts` (supersession records) lose the quoting fields. The
/// events changed.
fn scrub_history(
    tx: &mut Transaction<'_>,
    key: &str,
    id: MemoryId,
    texts: &[String],
) -> Result<u64> {
    let mut scrubbed = tx
        .execute(
            "UPDATE history SET old_text = NULL, new_text = NULL, old_metadata = NULL, \
             new_metadata = NULL, reason = NULL, old_note = NULL, new_note = NULL \
             WHERE scope_key = $1 AND memory_id = $2",
            &[&key, &id.0],
        )
        .map_err(pg_err)?;
    // A link's stated reason may quote either end.
    tx.execute(
        "UPDATE links SET reason = NULL WHERE scope_key = $1 AND (from_id = $2 OR to_id = $2)",
        &[&key, &id.0],
    )
    .map_err(pg_err)?;
    if !texts.is_empty() {
        let quotes = |col: &str| {
            format!("EXISTS (SELECT 1 FROM unnest($3::text[]) t WHERE strpos(h.{col}, t) > 0)")
        };
        let (old, new, reason) = (quotes("old_text"), quotes("new_text"), quotes("reason"));
        scrubbed += tx
            .execute(
                &format!(
                    "UPDATE history h SET \
                       old_text = CASE WHEN {old} THEN NULL ELSE h.old_text END, \
                       new_text = CASE WHEN {new} THEN NULL ELSE h.new_text END, \
                       reason = CASE WHEN {reason} THEN NULL ELSE h.reason END \
                     WHERE h.scope_key = $1 AND h.memory_id <> $2 AND ({old} OR {new} OR {reason})"
                ),
                &[&key, &id.0, &texts],
            )
            .map_err(pg_err)?;
    }

    Ok(scrubbed)
}

/// Neighbours whose context windows quote the erased texts: their index texts lose those lines
/// (and their generated lexical vectors follow). Their vectors are numbers, not text, and stay
/// as embedded (`mnemo reembed` recomputes them).
fn reindex_quoting(tx: &mut Transaction<'_>, key: &str, plan: &ScrubPlan) -> Result<u64> {
    let mut reindexed = 0;
    let quoting = tx
        .query(
            "SELECT id, index_text FROM memories WHERE scope_key = $1 AND index_text IS NOT NULL",
            &[&key],
        )
        .map_err(pg_err)?;
    for r in quoting {
        let (nid, index): (uuid::Uuid, String) = (r.get(0), r.get(1));
        let Some(new_index) = plan.reindexed(&index) else {
            continue;
        };
        tx.execute(
            "UPDATE memories SET index_text = $1 WHERE scope_key = $2 AND id = $3",
            &[&new_index, &key, &nid],
        )
        .map_err(pg_err)?;
        reindexed += 1;
    }

    Ok(reindexed)
}
