//! [`mnemo_core::Messages`] on SQLite: messages by id, the recent log, sessions and the raw
//! memories that stand for messages.
use crate::codec::*;
use crate::predicate;
use crate::predicate::Pred;
use crate::read::message_from_row_offset;
use crate::read::*;
use crate::sessions::check_known;
use crate::sessions::session_pred;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::params_from_iter;
use rusqlite::types::Value as Sql;
use rusqlite::OptionalExtension;

impl Messages for SqliteStore {
    fn messages_by_id(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Message>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let mut p = Pred::default();
            predicate::scope_unindexed(&mut p, "g", scope);
            let marks = predicate::marks(ids.len());
            p.push(
                &format!("g.id IN ({marks})"),
                ids.iter().map(|i| Sql::Text(i.to_string())),
            );
            let sql = format!(
                "SELECT g.seq, {MESSAGE_COLS} FROM messages g WHERE {} ORDER BY g.seq",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), message_from_row_offset)
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
        })
    }

    fn raw_of_messages(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let mut out = Vec::new();
            for chunk in ids.chunks(500) {
                let mut p = Pred::default();
                predicate::scope_unindexed(&mut p, "m", scope);
                let marks = predicate::marks(chunk.len());
                p.push(
                    &format!(
                        "m.kind = 'raw' AND m.id IN (SELECT memory_id FROM memory_sources \
                         WHERE message_id IN ({marks}))"
                    ),
                    chunk.iter().map(|i| Sql::Text(i.to_string())),
                );
                let rows =
                    with_sources(conn, query_memories(conn, &p.where_sql(), "", &p.params)?)?;
                out.extend(rows.into_iter().map(|(_, m)| m));
            }
            Ok(out)
        })
    }

    fn messages(&self, scope: &Scope, session: Option<&str>, limit: usize) -> Result<Vec<Message>> {
        self.read(|conn| {
            let mut p = Pred::default();
            predicate::scope(&mut p, "g", scope);
            if let Some(s) = session {
                p.push("g.session_id = ?", [Sql::Text(s.into())]);
            }
            let sql = format!(
                "SELECT * FROM (SELECT g.seq AS seq, {MESSAGE_COLS} FROM messages g WHERE {} ORDER BY g.seq DESC LIMIT {limit}) ORDER BY seq",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), |r| {
                    // Skip the leading seq column.
                    message_from_row_offset(r)
                })
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
        })
    }

    fn sessions(&self, scope: &Scope, query: &SessionQuery<'_>) -> Result<Vec<SessionInfo>> {
        self.read(|conn| {
            let mut pages = Pred::default();
            predicate::scope(&mut pages, "p", scope);
            pages.and("p.session_id = g.session_id");
            let mut g = Pred::default();
            predicate::scope(&mut g, "g", scope);
            g.and("g.session_id IS NOT NULL");
            if let Some(a) = query.after {
                g.push("g.session_id > ?", [Sql::Text(a.to_string())]);
            }
            if let Some(o) = query.only {
                g.push("g.session_id = ?", [Sql::Text(o.to_string())]);
            }
            let n = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let sql = format!(
                "SELECT g.session_id, MIN(g.created_at), MAX(g.created_at), \
                 SUM(g.content <> ''), (SELECT COUNT(*) FROM pages p WHERE {}) \
                 FROM messages g WHERE {} GROUP BY g.session_id ORDER BY g.session_id LIMIT {n}",
                pages.where_sql(),
                g.where_sql()
            );
            let mut stmt = conn.prepare(&sql).map_err(sql_err)?;
            let params = pages.params.iter().chain(g.params.iter());
            let rows = stmt
                .query_map(params_from_iter(params), |r| {
                    Ok(SessionInfo {
                        session_id: r.get(0)?,
                        first_at: from_ms(r.get(1)?),
                        last_at: from_ms(r.get(2)?),
                        messages: r.get::<_, i64>(3)?.max(0) as u64,
                        pages: r.get::<_, i64>(4)?.max(0) as u64,
                    })
                })
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
        })
    }

    fn session_messages(&self, q: &SessionLogQuery<'_>) -> Result<Vec<Message>> {
        let (scope, session) = (q.scope, q.session);
        self.read(|conn| {
            check_known(conn, scope, session)?;
            let mut p = session_pred(scope, session);
            if let Some(a) = q.after {
                let mut at = session_pred(scope, session);
                at.push("g.id = ?", [Sql::Text(a.to_string())]);
                let seq: Option<i64> = conn
                    .query_row(
                        &format!("SELECT g.seq FROM messages g WHERE {}", at.where_sql()),
                        params_from_iter(at.params.iter()),
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(sql_err)?;
                let seq = seq.ok_or_else(SessionLogQuery::after_unknown)?;
                p.push("g.seq > ?", [Sql::Integer(seq)]);
            }
            let n = i64::try_from(q.limit).unwrap_or(i64::MAX);
            let sql = format!(
                "SELECT g.seq, {MESSAGE_COLS} FROM messages g WHERE {} ORDER BY g.seq LIMIT {n}",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), message_from_row_offset)
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
        })
    }

    fn session_memories(&self, scope: &Scope, session: &str) -> Result<Vec<MemoryId>> {
        self.read(|conn| {
            check_known(conn, scope, session)?;
            let g = session_pred(scope, session);
            let mut m = Pred::default();
            predicate::scope(&mut m, "m", scope);
            m.and("m.state = 'active'");
            m.push(
                &format!(
                    "m.id IN (SELECT s.memory_id FROM memory_sources s WHERE s.message_id IN \
                     (SELECT g.id FROM messages g WHERE {}))",
                    g.where_sql()
                ),
                g.params.clone(),
            );
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT m.id FROM memories m WHERE {} ORDER BY m.seq",
                    m.where_sql()
                ))
                .map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(m.params.iter()), |r| r.get::<_, String>(0))
                .map_err(sql_err)?;
            rows.map(|r| MemoryId::parse(&r.map_err(sql_err)?))
                .collect()
        })
    }
}
