//! [`mnemo_core::Records`] on PostgreSQL: get, list and locate, history, duplicates by hash
//! and owners.
use crate::codec::scope_from_row;
use crate::codec::HISTORY_COLUMNS;
use crate::pg_err;
use crate::predicate;
use crate::predicate::Pred;
use crate::read::*;
use crate::PgStore;
use mnemo_core::*;
use postgres::IsolationLevel;

impl Records for PgStore {
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
}
