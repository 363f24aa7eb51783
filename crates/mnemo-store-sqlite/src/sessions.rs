//! The log by session: a scope's sessions with their sizes, a session's messages a page at a
//! time, and the memories a session's messages are the sources of.

use crate::codec::*;
use crate::predicate::{self, Pred};
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection, OptionalExtension};

/// The messages of the session (alias `g`).
pub(crate) fn session_pred(scope: &Scope, session: &str) -> Pred {
    let mut p = Pred::default();
    predicate::scope(&mut p, "g", scope);
    p.push("g.session_id = ?", [Sql::Text(session.to_string())]);
    p
}

/// `invalid_input` naming `session_id` when the scope has no message in the session.
pub(crate) fn check_known(conn: &Connection, scope: &Scope, session: &str) -> Result<()> {
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
