//! [`mnemo_core::Records`] on PostgreSQL: an add's batches, replays, get, list and locate,
//! updates and deletes, history, duplicates by hash, owners and access counts.
use crate::codec::memory_from_row;
use crate::codec::ms;
use crate::codec::scope_from_row;
use crate::codec::HISTORY_COLUMNS;
use crate::codec::MEMORY_COLUMNS;
use crate::pg_err;
use crate::predicate;
use crate::predicate::Pred;
use crate::read::*;
use crate::write::change::delete_one;
use crate::write::change::update_in;
use crate::write::locate;
use crate::write::lock_memories;
use crate::write::stored_outcome_in;
use crate::write::*;
use crate::PgStore;
use mnemo_core::*;
use postgres::IsolationLevel;
use std::collections::BTreeMap;

impl Records for PgStore {
    fn write(&self, batches: Vec<WriteBatch>) -> Result<Vec<AddOutcome>> {
        self.write_tx(|tx| {
            let keys: Vec<String> = batches.iter().map(|b| b.scope.key()).collect();
            lock_scopes(tx, &keys)?;
            batches.iter().map(|b| self.write_one(tx, b)).collect()
        })
    }

    fn replay(&self, scope: &Scope, idem: &Idempotency) -> Result<Option<AddOutcome>> {
        self.with(|c| stored_outcome_in(c, scope, idem))
    }

    fn get(&self, scope: &Scope, id: MemoryId, read: &ReadOptions) -> Result<Memory> {
        self.with(|c| {
            let mut p = Pred::default();
            let a = p.arg(id.0);
            p.and(&format!("m.id = {a}"));
            predicate::scope(&mut p, "m", scope);
            predicate::visibility(&mut p, "m", read);
            query_memories(c, &p, "")?
                .into_iter()
                .next()
                .map(|(_, m)| m)
                .ok_or_else(|| Error::not_found("memory", id))
        })
    }

    fn list(&self, q: &ListQuery) -> Result<Page> {
        q.validate()?;
        let cursors = self.cursors()?;
        let after = q
            .cursor
            .as_deref()
            .map(|c| cursors.decode(&q.scope, c))
            .transpose()?
            .unwrap_or(0);
        self.with(|c| {
            let mut p = predicate::candidate(&q.candidates())?;
            let a = p.arg(after);
            p.and(&format!("m.seq > {a}"));
            let tail = format!("ORDER BY m.seq LIMIT {}", q.limit + 1);
            let rows = query_memories(c, &p, &tail)?;
            Ok(q.page(rows, |seq| cursors.encode(&q.scope, seq)))
        })
    }

    fn locate(&self, q: &ListQuery, skip: u64) -> Result<ListPosition> {
        let p = predicate::candidate(&q.candidates())?;
        let cursors = self.cursors()?;
        self.with(|c| {
            let mut tx = c
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(pg_err)?;
            let total: i64 = tx
                .query_one(
                    &format!("SELECT COUNT(*) FROM memories m WHERE {}", p.where_sql()),
                    &p.params(),
                )
                .map_err(pg_err)?
                .get(0);
            let total = u64::try_from(total).unwrap_or(0);
            let cursor = match ListPosition::cursor_offset(skip, total) {
                None => None,
                Some(offset) => {
                let seq: i64 = tx
                    .query_one(
                        &format!(
                            "SELECT m.seq FROM memories m WHERE {} ORDER BY m.seq LIMIT 1 OFFSET {offset}",
                            p.where_sql()
                        ),
                        &p.params(),
                    )
                    .map_err(pg_err)?
                    .get(0);
                Some(cursors.encode(&q.scope, seq))
                }
            };
            tx.commit().map_err(pg_err)?;
            Ok(ListPosition { total, cursor })
        })
    }

    fn update_many(&self, updates: &Updates, ctx: &WritePlan) -> Result<Vec<Memory>> {
        self.write_tx(|tx| {
            lock_memories(tx, updates.ids())?;
            updates
                .items()
                .iter()
                .map(|(scope, id, patch)| update_in(tx, scope, *id, patch, ctx))
                .collect()
        })
    }

    fn delete_many(&self, deletes: &Deletes, ctx: &WritePlan) -> Result<u64> {
        self.write_tx(|tx| {
            lock_memories(tx, deletes.ids())?;
            let now = chrono::Utc::now().timestamp_millis();
            for (scope, id) in &deletes.items {
                let memory = locate(tx, scope, *id)?;
                delete_one(tx, &memory, deletes.mode, ctx, now)?;
            }
            Ok(deletes.items.len() as u64)
        })
    }

    fn delete_all(&self, scope: &Scope, mode: DeleteMode, ctx: &WritePlan) -> Result<u64> {
        self.write_tx(|tx| {
            let p = predicate::candidate(&delete_all_query(scope))?;
            let sql = format!(
                "SELECT {MEMORY_COLUMNS} FROM memories m WHERE {} ORDER BY m.id FOR UPDATE",
                p.where_sql()
            );
            let rows = tx.query(&sql, &p.params()).map_err(pg_err)?;
            let now = chrono::Utc::now().timestamp_millis();
            for row in &rows {
                delete_one(tx, &memory_from_row(row)?, mode, ctx, now)?;
            }
            Ok(rows.len() as u64)
        })
    }

    fn history(&self, q: &HistoryQuery<'_>) -> Result<Vec<HistoryEvent>> {
        let (scope, id) = (q.scope, q.id);
        self.with(|c| {
            // A memory that still exists must be visible to the scope (`memory_read`); a
            // hard-deleted memory's history is checked against the owner recorded on its
            // history rows.
            let owner: Option<String> = c
                .query_opt(
                    "SELECT scope_key FROM memories WHERE id = $1 LIMIT 1",
                    &[&id.0],
                )
                .map_err(pg_err)?
                .map(|r| r.get(0));
            let mut p = Pred::default();
            let a = p.arg(id.0);
            p.and(&format!("h.memory_id = {a}"));
            predicate::scope(&mut p, "h", scope);
            if let Some(key) = owner {
                let mut seen = Pred::default();
                let a = seen.arg(id.0);
                seen.and(&format!("m.id = {a}"));
                predicate::scope(&mut seen, "m", scope);
                predicate::visibility(&mut seen, "m", &q.memory_read());
                let sql = format!(
                    "SELECT 1 FROM memories m WHERE {} LIMIT 1",
                    seen.where_sql()
                );
                if c.query_opt(&sql, &seen.params()).map_err(pg_err)?.is_none() {
                    return Err(Error::not_found("memory", id));
                }
                // A memory's history rows carry its owner: their index starts with it.
                let k = p.arg(key);
                p.and(&format!("h.scope_key = {k}"));
            }
            let sql = format!(
                "SELECT {HISTORY_COLUMNS} FROM history h WHERE {} ORDER BY h.id",
                p.where_sql()
            );
            let events = c
                .query(&sql, &p.params())
                .map_err(pg_err)?
                .iter()
                .map(crate::codec::history_from_row)
                .collect::<Result<Vec<_>>>()?;
            q.found(events)
        })
    }

    fn find_by_hash(&self, scope: &Scope, hashes: &[String]) -> Result<Vec<(String, MemoryId)>> {
        if hashes.is_empty() {
            return Ok(Vec::new());
        }
        let mut p = Pred::default();
        predicate::exact_scope(&mut p, "m", scope);
        predicate::visibility(&mut p, "m", &ReadOptions::default());
        let a = p.arg(hashes.to_vec());
        p.and(&format!("m.hash = ANY({a}::text[])"));
        let sql = format!(
            "SELECT m.hash, m.id FROM memories m WHERE {} ORDER BY m.seq",
            p.where_sql()
        );
        self.with(|c| {
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, String>(0), MemoryId(r.get(1))))
                .collect())
        })
    }

    fn owner_of(&self, id: MemoryId) -> Result<Scope> {
        self.with(|c| {
            let row = c
                .query_opt(
                    "SELECT user_id, agent_id, run_id FROM memories WHERE id = $1 LIMIT 1",
                    &[&id.0],
                )
                .map_err(pg_err)?
                .ok_or_else(|| Error::not_found("memory", id))?;
            scope_from_row(&row)
        })
    }

    fn owners(&self) -> Result<Vec<(Scope, u64)>> {
        let mut p = Pred::default();
        predicate::visibility(&mut p, "m", &ReadOptions::default());
        let sql = format!(
            "SELECT m.user_id, m.agent_id, m.run_id, COUNT(*) FROM memories m WHERE {} \
             GROUP BY 1, 2, 3 ORDER BY m.user_id COLLATE \"C\" NULLS FIRST, \
             m.agent_id COLLATE \"C\" NULLS FIRST, m.run_id COLLATE \"C\" NULLS FIRST",
            p.where_sql()
        );
        self.with(|c| {
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            rows.iter()
                .map(|r| Ok((scope_from_row(r)?, r.get::<_, i64>(3).max(0) as u64)))
                .collect()
        })
    }

    fn touch(&self, scope: &Scope, ids: &[MemoryId], at: Timestamp) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut counts: BTreeMap<MemoryId, i64> = BTreeMap::new();
        for id in ids {
            *counts.entry(*id).or_default() += 1;
        }
        let at = ms(at);
        self.write_tx(|tx| {
            let mut changed = 0u64;
            for (id, n) in &counts {
                let mut p = Pred::default();
                let (n_arg, at_arg, id_arg) = (p.arg(*n), p.arg(at), p.arg(id.0));
                p.and(&format!("m.id = {id_arg}"));
                predicate::scope(&mut p, "m", scope);
                let sql = format!(
                    "UPDATE memories AS m SET access_count = access_count + {n_arg}, \
                     last_accessed_at = GREATEST(COALESCE(last_accessed_at, {at_arg}), {at_arg}) \
                     WHERE {}",
                    p.where_sql()
                );
                let rows = tx.execute(&sql, &p.params()).map_err(pg_err)?;
                changed += rows * (*n as u64);
            }
            Ok(changed)
        })
    }
}
