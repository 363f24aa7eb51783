//! The message log: the [`Messages`] capability and the log's visibility rule
//! ([`visible_messages`]).

use super::*;

/// The message log's visibility rule, the one [`ReadOptions::admits`] states for memories: a
/// message whose raw memory `read` does not admit (deleted, expired, superseded, erased — the
/// raw memory *is* the message) is left out, and so is a message whose content an erase
/// removed (no empty line is shown for it); an as-of read also leaves out what was said after
/// its instant. A message with no raw memory — the evidence of
/// facts, notes or procedures an inferred add derived — is kept whatever became of those
/// memories: deleting a fact retracts the conclusion, not what was said (erase the fact with
/// `sources` to remove that too). Every reader of the log (context packs, extraction and
/// enrichment context, profile analysis) filters through this. Order is kept.
pub fn visible_messages<S: Messages + ?Sized>(
    store: &S,
    scope: &Scope,
    messages: Vec<Message>,
    read: &ReadOptions,
) -> Result<Vec<Message>> {
    let ids: Vec<MessageId> = messages
        .iter()
        .filter(|m| !m.content.trim().is_empty())
        .map(|m| m.id)
        .collect();
    let hidden = hidden_messages(store, scope, &ids, read)?;
    // An as-of read sees the conversation as it stood then: nothing said after the instant.
    let said = |m: &Message| read.as_of.is_none_or(|t| m.created_at <= t);
    Ok(messages
        .into_iter()
        .filter(|m| !m.content.trim().is_empty() && !hidden.contains(&m.id) && said(m))
        .collect())
}

/// The messages among `ids` that the log's visibility rule hides (see [`visible_messages`]):
/// those with a raw memory and none that `read` admits.
pub fn hidden_messages<S: Messages + ?Sized>(
    store: &S,
    scope: &Scope,
    ids: &[MessageId],
    read: &ReadOptions,
) -> Result<std::collections::HashSet<MessageId>> {
    let wanted: std::collections::HashSet<&MessageId> = ids.iter().collect();
    let mut admitted: std::collections::HashMap<MessageId, bool> = Default::default();
    for m in store.raw_of_messages(scope, ids)? {
        let ok = read.admits(&m.validity());
        for s in &m.sources {
            *admitted.entry(*s).or_insert(false) |= ok;
        }
    }
    Ok(admitted
        .into_iter()
        .filter(|(id, ok)| !ok && wanted.contains(id))
        .map(|(id, _)| id)
        .collect())
}

/// The message log: messages by id, recent messages, sessions, and the raw memories that stand for messages.
pub trait Messages: Send + Sync {
    /// Messages of the scope with the given ids (a memory's sources), in log order; ids that are
    /// unknown or belong to another scope are skipped.
    fn messages_by_id(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Message>>;
    /// The raw memories (in any state, expired ones included) whose message is one of `ids`,
    /// of (or under) the scope, with their sources. A raw memory *is* its message, so the
    /// message log is shown exactly when its raw memory is: readers of the log hold these to
    /// [`ReadOptions::admits`] (see `mnemo::log`). Required: only the backend has the index.
    fn raw_of_messages(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Memory>>;
    /// The last `limit` messages of a scope — of one session when `session` is given — in the
    /// order they were appended (oldest first).
    fn messages(&self, scope: &Scope, session: Option<&str>, limit: usize) -> Result<Vec<Message>>;
    /// The sessions of the log of (or under) the scope that hold a message, as `query` picks
    /// them (ordered by session id). Messages logged without a session are not listed.
    /// Required: a grouping query of the backend's own tables.
    fn sessions(
        &self,
        scope: &Scope,
        query: &crate::SessionQuery<'_>,
    ) -> Result<Vec<crate::SessionInfo>>;
    /// The messages `query` picks, in log order (oldest first); as stored (readers apply
    /// [`visible_messages`]). A session the scope has no message in is `invalid_input` naming
    /// `session_id`; an `after` that is not a message of it, `invalid_input` naming `cursor`
    /// ([`SessionLogQuery::after_unknown`]). Required: a positioned read of the backend's log.
    fn session_messages(&self, query: &SessionLogQuery<'_>) -> Result<Vec<Message>>;
    /// The active memories of (or under) the scope with a source message in the session (raw
    /// turns and what was derived from them), oldest first. A session the scope has no message
    /// in is `invalid_input` naming `session_id`. Required: the backend's provenance index.
    fn session_memories(&self, scope: &Scope, session: &str) -> Result<Vec<MemoryId>>;
}

/// Which messages [`Messages::session_messages`] reads: those of `session` of (or under)
/// `scope`, only those after message `after` when given, at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLogQuery<'a> {
    pub scope: &'a Scope,
    pub session: &'a str,
    pub after: Option<MessageId>,
    pub limit: usize,
}

impl SessionLogQuery<'_> {
    /// The refusal of an `after` that is not a message of the session.
    pub fn after_unknown() -> crate::Error {
        crate::Error::invalid("cursor", "does not name a message of this session")
    }
}

/// The refusal of a write that would log message `id` again after an erase emptied it (an
/// async add queued before the erase, a keyed add retried after it): the add is not applied,
/// since its memories would carry the erased text back. Not retryable.
pub fn erased_message(id: MessageId) -> crate::Error {
    crate::Error::invalid(
        "messages",
        format!(
            "message {id} was erased after it was logged; the add that logged it is not applied"
        ),
    )
}

/// The last `limit` turns of the scope's log (of `session` when given) other than `own`, oldest
/// first, as stored: the earlier turns an add reads for its context. An add's own turns may be
/// in the log already (logged with its job when it was queued, or by a failed try of a keyed
/// add); they are the add's new messages, never its context.
pub fn earlier_turns<S: Messages + ?Sized>(
    store: &S,
    scope: &Scope,
    session: Option<&str>,
    own: &[Message],
    limit: usize,
) -> Result<Vec<Message>> {
    let own: std::collections::HashSet<MessageId> = own.iter().map(|m| m.id).collect();
    let mut log = store.messages(scope, session, limit.saturating_add(own.len()))?;
    log.retain(|m| !own.contains(&m.id));
    let extra = log.len().saturating_sub(limit);
    log.drain(..extra);
    Ok(log)
}
