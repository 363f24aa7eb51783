//! [`mnemo_core::Records`] on SQLite: get, list and locate, history, duplicates by hash and
//! owners.
use crate::codec::*;
use crate::graph::exact_scope;
use crate::predicate;
use crate::predicate::marks;
use crate::predicate::Pred;
use crate::read::with_sources;
use crate::read::*;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::params_from_iter;
use rusqlite::types::Value as Sql;
use rusqlite::OptionalExtension;

impl Records for SqliteStore {
    fn get(&self, scope: &Scope, id: MemoryId, read: &ReadOptions) -> Result<Memory> {
        self.read(|conn| {
            let mut p = Pred::default();
            p.push("m.id = ?", [Sql::Text(id.to_string())]);
            predicate::scope(&mut p, "m", scope);
            predicate::visibility(&mut p, "m", read);
            let rows = with_sources(conn, query_memories(conn, &p.where_sql(), "", &p.params)?)?;
            rows.into_iter()
                .next()
                .map(|(_, m)| m)
                .ok_or_else(|| Error::not_found("memory", id))
        })
    }

    fn list(&self, q: &ListQuery) -> Result<Page> {
        q.validate()?;
        let after = q
            .cursor
            .as_deref()
            .map(|c| self.cursors.decode(&q.scope, c))
            .transpose()?
            .unwrap_or(0);
        self.read(|conn| {
            let mut p = candidate_pred(&q.candidates())?;
            p.push("m.seq > ?", [Sql::Integer(after)]);
            let tail = format!("ORDER BY m.seq LIMIT {}", q.limit + 1);
            let rows = with_sources(
                conn,
                query_memories(conn, &p.where_sql(), &tail, &p.params)?,
            )?;
            Ok(q.page(rows, |seq| self.cursors.encode(&q.scope, seq)))
        })
    }

    fn locate(&self, q: &ListQuery, skip: u64) -> Result<ListPosition> {
        self.read(|conn| {
            let p = candidate_pred(&q.candidates())?;
            let tx = conn.unchecked_transaction().map_err(sql_err)?;
            let total: i64 = tx
                .prepare_cached(&format!(
                    "SELECT COUNT(*) FROM memories m WHERE {}",
                    p.where_sql()
                ))
                .and_then(|mut st| st.query_row(params_from_iter(p.params.iter()), |r| r.get(0)))
                .map_err(sql_err)?;
            let total = u64::try_from(total).unwrap_or(0);
            let cursor = match ListPosition::cursor_offset(skip, total) {
                None => None,
                Some(offset) => {
                let seq: i64 = tx
                    .prepare_cached(&format!(
                        "SELECT m.seq FROM memories m WHERE {} ORDER BY m.seq LIMIT 1 OFFSET {offset}",
                        p.where_sql()
                    ))
                    .and_then(|mut st| {
                        st.query_row(params_from_iter(p.params.iter()), |r| r.get(0))
                    })
                    .map_err(sql_err)?;
                Some(self.cursors.encode(&q.scope, seq))
                }
            };
            tx.finish().map_err(sql_err)?;
            Ok(ListPosition { total, cursor })
        })
    }

    fn history(&self, q: &HistoryQuery<'_>) -> Result<Vec<HistoryEvent>> {
        let (scope, id) = (q.scope, q.id);
        self.read(|conn| {
            // A memory that still exists must be visible to the scope (`memory_read`); a
            // hard-deleted memory's history is checked against the scope recorded on its history
            // rows.
            let exists: bool = conn
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM memories WHERE id = ?1)",
                    [id.to_string()],
                    |r| r.get(0),
                )
                .map_err(sql_err)?;
            if exists {
                let mut p = Pred::default();
                p.push("m.id = ?", [Sql::Text(id.to_string())]);
                predicate::scope(&mut p, "m", scope);
                predicate::visibility(&mut p, "m", &q.memory_read());
                if query_memories(conn, &p.where_sql(), "", &p.params)?.is_empty() {
                    return Err(Error::not_found("memory", id));
                }
            }
            let mut p = Pred::default();
            p.push("h.memory_id = ?", [Sql::Text(id.to_string())]);
            predicate::scope(&mut p, "h", scope);
            let sql = format!(
                "SELECT {HISTORY_COLS} FROM history h WHERE {} ORDER BY h.id",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let events = stmt
                .query_map(params_from_iter(p.params.iter()), history_from_row)
                .map_err(sql_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql_err)?;
            q.found(events)
        })
    }

    fn find_by_hash(&self, scope: &Scope, hashes: &[String]) -> Result<Vec<(String, MemoryId)>> {
        if hashes.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let mut p = Pred::default();
            exact_scope(&mut p, "m", scope);
            // What a read sees now: an expired copy must not make a restated fact a duplicate.
            predicate::visibility(&mut p, "m", &ReadOptions::default());
            let marks = marks(hashes.len());
            p.push(
                &format!("m.hash IN ({marks})"),
                hashes.iter().map(|h| Sql::Text(h.clone())),
            );
            let sql = format!(
                "SELECT m.hash, m.id FROM memories m WHERE {}",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for r in rows {
                let (h, id) = r.map_err(sql_err)?;
                out.push((h, MemoryId::parse(&id)?));
            }
            Ok(out)
        })
    }

    fn owner_of(&self, id: MemoryId) -> Result<Scope> {
        self.read(|conn| {
            let row: Option<(Option<String>, Option<String>, Option<String>)> = conn
                .query_row(
                    "SELECT user_id, agent_id, run_id FROM memories WHERE id = ?1",
                    [id.to_string()],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .map_err(sql_err)?;
            let (u, a, r) = row.ok_or_else(|| Error::not_found("memory", id))?;
            Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref())
        })
    }

    fn owners(&self) -> Result<Vec<(Scope, u64)>> {
        self.read(|conn| {
            let mut p = Pred::default();
            predicate::visibility(&mut p, "m", &ReadOptions::default());
            let sql = format!(
                "SELECT m.user_id, m.agent_id, m.run_id, COUNT(*) FROM memories m WHERE {}
                 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
                p.where_sql()
            );
            let mut stmt = conn.prepare(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, i64>(3)?,
                    ))
                })
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for row in rows {
                let (u, a, r, n) = row.map_err(sql_err)?;
                out.push((
                    Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref())?,
                    n as u64,
                ));
            }
            Ok(out)
        })
    }
}
