//! A conversation as the requests that store it: its scope, and each session as one add (raw,
//! inferred or as notes). `mnemo bench --conversations` stores conversations the same way.

use super::EvalMode;
use crate::locomo::{Conversation, Turn};
use anyhow::Result;
use mnemo::{AddInput, AddRequest};
use mnemo_core::{InputMessage, Role, Scope};

/// The scope a conversation is stored in (its sample id, whitespace replaced).
pub fn scope_of(c: &Conversation) -> Result<Scope> {
    let id: String = c
        .sample_id
        .chars()
        .map(|ch| if ch.is_whitespace() { '-' } else { ch })
        .collect();
    Ok(Scope::user(&id)?)
}

/// Session `s` of a conversation as one add: its turns as messages with speaker names, the
/// session's date as the timestamp, and a session id of its own. `mnemo bench --conversations`
/// ingests with the same requests.
pub fn add_request(scope: &Scope, c: &Conversation, s: usize, mode: EvalMode) -> AddRequest {
    let session = &c.sessions[s];
    let messages = session
        .turns
        .iter()
        .map(|t: &Turn| InputMessage {
            role: Role::User,
            content: t.text.clone(),
            name: Some(t.speaker.clone()).filter(|n| !n.is_empty()),
        })
        .collect();
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(messages);
    req.timestamp = Some(session.date);
    req.session_id = Some(format!("{}-session-{}", c.sample_id, session.number));
    req.infer = Some(mode == EvalMode::Infer);
    req
}

/// Session `s` as a note add: the same messages, each stored as a note by the rules (no model).
pub fn note_request(scope: &Scope, c: &Conversation, s: usize) -> AddRequest {
    let mut req = add_request(scope, c, s, EvalMode::Raw);
    req.memory_type = Some(mnemo_core::MemoryKind::Note);
    req
}
