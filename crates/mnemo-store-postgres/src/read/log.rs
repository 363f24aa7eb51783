//! The message log: messages by id (a memory's provenance) and the last messages of a scope
//! or session, oldest first.

use crate::codec::{message_from_row, MESSAGE_COLUMNS};
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;

impl PgStore {
    /// The messages of (or under) the scope among `ids`, in the order they were appended;
    /// unknown ids and other scopes' messages are left out.
    pub(crate) fn messages_with_ids(
        &self,
        scope: &Scope,
        ids: &[MessageId],
    ) -> Result<Vec<Message>> {
        scope.validate()?;
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

    /// Raw memories (any state) whose message is among `ids`, of (or under) the scope.
    pub(crate) fn raw_memories_of(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Memory>> {
        scope.validate()?;
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

    /// The last `limit` messages of the scope (of one session when given), oldest first.
    pub(crate) fn message_log(
        &self,
        scope: &Scope,
        session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        scope.validate()?;
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
}
