//! The log by session: a scope's sessions with their sizes, a session's messages a page at a
//! time, and the memories a session's messages are the sources of.

use crate::codec::*;
use crate::predicate::{self, Pred};
use crate::read::message_from_row_offset;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection, OptionalExtension};

/// The messages of the session (alias `g`).
fn session_pred(scope: &Scope, session: &str) -> Pred {
    let mut p = Pred::default();
    predicate::scope(&mut p, "g", scope);
    p.push("g.session_id = ?", [Sql::Text(session.to_string())]);
    p
}

/// `invalid_input` naming `session_id` when the scope has no message in the session.
fn check_known(conn: &Connection, scope: &Scope, session: &str) -> Result<()> {
    let p = session_pred(scope, session);
    let found: Option<i64> = conn
        .query_row(
            &format!("SELECT 1 FROM messages g WHERE {} LIMIT 1", p.where_sql()),
            params_from_iter(p.params.iter()),
            |r| r.get(0),
        )
        .optional()
        .map_err(sql_err)?;
    match found {
        Some(_) => Ok(()),
        None => Err(Error::invalid(
            "session_id",
            format!("the scope has no session {session:?}"),
        )),
    }
}

impl SqliteStore {
    pub(crate) fn sessions_of(
        &self,
        scope: &Scope,
        query: &SessionQuery<'_>,
    ) -> Result<Vec<SessionInfo>> {
        scope.validate()?;
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

    pub(crate) fn session_log(
        &self,
        scope: &Scope,
        session: &str,
        after: Option<MessageId>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        scope.validate()?;
        self.read(|conn| {
            check_known(conn, scope, session)?;
            let mut p = session_pred(scope, session);
            if let Some(a) = after {
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
                let Some(seq) = seq else {
                    return Err(Error::invalid(
                        "cursor",
                        "does not name a message of this session",
                    ));
                };
                p.push("g.seq > ?", [Sql::Integer(seq)]);
            }
            let n = i64::try_from(limit).unwrap_or(i64::MAX);
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

    pub(crate) fn memories_of_session(
        &self,
        scope: &Scope,
        session: &str,
    ) -> Result<Vec<MemoryId>> {
        scope.validate()?;
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
