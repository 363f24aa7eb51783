//! [`mnemo_core::Messages`] on PostgreSQL: messages by id, the recent log, sessions and the
//! raw memories that stand for messages.
use crate::codec::from_ms;
use crate::codec::message_from_row;
use crate::codec::MESSAGE_COLUMNS;
use crate::pg_err;
use crate::predicate;
use crate::predicate::Pred;
use crate::sessions::check_known;
use crate::sessions::session_sql;
use crate::PgStore;
use mnemo_core::*;

impl Messages for PgStore {
    fn messages_by_id(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Message>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut p = Pred::default();
        let list: Vec<uuid::Uuid> = ids.iter().map(|i| i.0).collect();
        let a = p.arg(list);
        p.and(&format!("g.id = ANY({a}::uuid[])"));
        predicate::scope(&mut p, "g", scope);
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages g WHERE {} ORDER BY g.seq",
            p.where_sql()
        );
        self.with(|c| {
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            rows.iter().map(message_from_row).collect()
        })
    }

    fn raw_of_messages(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut p = Pred::default();
        let list: Vec<uuid::Uuid> = ids.iter().map(|i| i.0).collect();
        let a = p.arg(list);
        p.and(&format!(
            "m.kind = 'raw' AND (m.scope_key, m.id) IN (SELECT scope_key, memory_id \
             FROM memory_sources WHERE message_id = ANY({a}::uuid[]))"
        ));
        predicate::scope(&mut p, "m", scope);
        self.with(|c| {
            let rows = crate::read::query_memories(c, &p, "")?;
            Ok(rows.into_iter().map(|(_, m)| m).collect())
        })
    }

    fn messages(&self, scope: &Scope, session: Option<&str>, limit: usize) -> Result<Vec<Message>> {
        let mut p = Pred::default();
        predicate::scope(&mut p, "g", scope);
        if let Some(s) = session {
            let a = p.arg(s.to_string());
            p.and(&format!("g.session_id = {a}"));
        }
        let n = p.arg(i64::try_from(limit).unwrap_or(i64::MAX));
        let sql = format!(
            "SELECT * FROM (SELECT {MESSAGE_COLUMNS} FROM messages g WHERE {} \
             ORDER BY g.seq DESC LIMIT {n}) g ORDER BY g.seq",
            p.where_sql()
        );
        self.with(|c| {
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            rows.iter().map(message_from_row).collect()
        })
    }

    fn sessions(&self, scope: &Scope, query: &SessionQuery<'_>) -> Result<Vec<SessionInfo>> {
        let mut p = Pred::default();
        predicate::scope(&mut p, "p", scope);
        let pages = p.take_sql();
        predicate::scope(&mut p, "g", scope);
        p.and("g.session_id IS NOT NULL");
        if let Some(a) = query.after {
            let a = p.arg(a.to_string());
            p.and(&format!("g.session_id > {a}"));
        }
        if let Some(o) = query.only {
            let o = p.arg(o.to_string());
            p.and(&format!("g.session_id = {o}"));
        }
        let g = p.take_sql();
        let n = p.arg(i64::try_from(query.limit).unwrap_or(i64::MAX));
        let sql = format!(
            "SELECT s.session_id, s.first_at, s.last_at, s.messages, \
             (SELECT COUNT(*) FROM pages p WHERE {pages} AND p.session_id = s.session_id) \
             FROM (SELECT g.session_id, MIN(g.created_at) AS first_at, MAX(g.created_at) AS last_at, \
             COUNT(*) FILTER (WHERE g.content <> '') AS messages FROM messages g WHERE {g} \
             GROUP BY g.session_id ORDER BY g.session_id LIMIT {n}) s ORDER BY s.session_id"
        );
        self.with(|c| {
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            Ok(rows
                .iter()
                .map(|r| SessionInfo {
                    session_id: r.get(0),
                    first_at: from_ms(r.get(1)),
                    last_at: from_ms(r.get(2)),
                    messages: r.get::<_, i64>(3).max(0) as u64,
                    pages: r.get::<_, i64>(4).max(0) as u64,
                })
                .collect())
        })
    }

    fn session_messages(&self, q: &SessionLogQuery<'_>) -> Result<Vec<Message>> {
        let (scope, session) = (q.scope, q.session);
        self.with(|c| {
            check_known(c, scope, session)?;
            let mut p = Pred::default();
            let mut g = session_sql(&mut p, scope, session);
            if let Some(a) = q.after {
                let mut at = Pred::default();
                let cond = session_sql(&mut at, scope, session);
                let id = at.arg(a.0);
                let seq: Option<i64> = c
                    .query_opt(
                        &format!("SELECT g.seq FROM messages g WHERE {cond} AND g.id = {id}"),
                        &at.params(),
                    )
                    .map_err(pg_err)?
                    .map(|r| r.get(0));
                let s = p.arg(seq.ok_or_else(SessionLogQuery::after_unknown)?);
                g = format!("{g} AND g.seq > {s}");
            }
            let n = p.arg(i64::try_from(q.limit).unwrap_or(i64::MAX));
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages g WHERE {g} ORDER BY g.seq LIMIT {n}"
            );
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            rows.iter().map(message_from_row).collect()
        })
    }

    fn session_memories(&self, scope: &Scope, session: &str) -> Result<Vec<MemoryId>> {
        self.with(|c| {
            check_known(c, scope, session)?;
            let mut p = Pred::default();
            predicate::scope(&mut p, "m", scope);
            let m = p.take_sql();
            let g = session_sql(&mut p, scope, session);
            let sql = format!(
                "SELECT m.id FROM memories m WHERE {m} AND m.state = 'active' AND \
                 (m.scope_key, m.id) IN (SELECT s.scope_key, s.memory_id FROM memory_sources s \
                 JOIN messages g ON g.scope_key = s.scope_key AND g.id = s.message_id WHERE {g}) \
                 ORDER BY m.seq"
            );
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            Ok(rows.iter().map(|r| MemoryId(r.get(0))).collect())
        })
    }
}
