//! The log by session: a scope's sessions with their sizes, a session's messages a page at a
//! time, and the memories a session's messages are the sources of.

use crate::codec::{from_ms, message_from_row, MESSAGE_COLUMNS};
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;

/// Binds the session's messages (alias `g`) into `p` and returns the condition.
fn session_sql(p: &mut Pred, scope: &Scope, session: &str) -> String {
    let a = p.arg(session.to_string());
    let outer = p.take_sql();
    predicate::scope(p, "g", scope);
    let inner = p.take_sql();
    if outer == "TRUE" {
        format!("g.session_id = {a} AND {inner}")
    } else {
        format!("{outer} AND g.session_id = {a} AND {inner}")
    }
}

/// `invalid_input` naming `session_id` when the scope has no message in the session.
fn check_known(c: &mut postgres::Client, scope: &Scope, session: &str) -> Result<()> {
    let mut p = Pred::default();
    let g = session_sql(&mut p, scope, session);
    let found = c
        .query_opt(
            &format!("SELECT 1 FROM messages g WHERE {g} LIMIT 1"),
            &p.params(),
        )
        .map_err(pg_err)?;
    match found {
        Some(_) => Ok(()),
        None => Err(Error::invalid(
            "session_id",
            format!("the scope has no session {session:?}"),
        )),
    }
}

impl PgStore {
    pub(crate) fn sessions_of(
        &self,
        scope: &Scope,
        query: &SessionQuery<'_>,
    ) -> Result<Vec<SessionInfo>> {
        scope.validate()?;
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

    pub(crate) fn session_log(
        &self,
        scope: &Scope,
        session: &str,
        after: Option<MessageId>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        scope.validate()?;
        self.with(|c| {
            check_known(c, scope, session)?;
            let mut p = Pred::default();
            let mut g = session_sql(&mut p, scope, session);
            if let Some(a) = after {
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
                let Some(seq) = seq else {
                    return Err(Error::invalid(
                        "cursor",
                        "does not name a message of this session",
                    ));
                };
                let s = p.arg(seq);
                g = format!("{g} AND g.seq > {s}");
            }
            let n = p.arg(i64::try_from(limit).unwrap_or(i64::MAX));
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages g WHERE {g} ORDER BY g.seq LIMIT {n}"
            );
            let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
            rows.iter().map(message_from_row).collect()
        })
    }

    pub(crate) fn memories_of_session(
        &self,
        scope: &Scope,
        session: &str,
    ) -> Result<Vec<MemoryId>> {
        scope.validate()?;
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
