//! The log by session: a scope's sessions with their sizes, a session's messages a page at a
//! time, and the memories a session's messages are the sources of.

use crate::pg_err;
use crate::predicate::{self, Pred};
use mnemo_core::*;

/// Binds the session's messages (alias `g`) into `p` and returns the condition.
pub(crate) fn session_sql(p: &mut Pred, scope: &Scope, session: &str) -> String {
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
pub(crate) fn check_known(c: &mut postgres::Client, scope: &Scope, session: &str) -> Result<()> {
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
