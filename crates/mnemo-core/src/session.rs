//! Sessions of the conversation log as the surfaces list them: one row per session of a scope
//! with its time span and sizes ([`SessionInfo`], from [`crate::Messages::sessions`]), and the
//! cursors that page through sessions and through a session's messages. Cursors carry no
//! secret: a session id or a message id the caller could already see, encoded so a changed one
//! is invalid input naming `cursor`.

use crate::error::{Error, Result};
use crate::memory::{MessageId, Timestamp};
use serde::{Deserialize, Serialize};

/// One session of a scope's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub session_id: String,
    /// The time of its first and last message.
    pub first_at: Timestamp,
    pub last_at: Timestamp,
    /// Messages logged in it whose content no erase removed (deleted ones included: what a
    /// reader sees is the visibility rule's answer, see [`crate::visible_messages`]).
    pub messages: u64,
    /// Its pages (exchanges), in any tier.
    pub pages: u64,
}

/// Which sessions [`crate::Messages::sessions`] lists: those after `after` (a session id), or only
/// `only`, at most `limit`, ordered by session id.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionQuery<'a> {
    pub after: Option<&'a str>,
    pub only: Option<&'a str>,
    pub limit: usize,
}

/// The cursor after session `id` in a listing of sessions.
pub fn session_cursor(id: &str) -> String {
    format!("s.{}", hex::encode(id.as_bytes()))
}

/// The session id a [`session_cursor`] holds; anything else is invalid input naming `cursor`.
pub fn parse_session_cursor(cursor: &str) -> Result<String> {
    cursor
        .strip_prefix("s.")
        .and_then(|h| hex::decode(h).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| Error::invalid("cursor", "is not a cursor of a session listing"))
}

/// The cursor after message `id` in a session's messages.
pub fn message_cursor(id: MessageId) -> String {
    format!("m.{id}")
}

/// The message id a [`message_cursor`] holds; anything else is invalid input naming `cursor`.
pub fn parse_message_cursor(cursor: &str) -> Result<MessageId> {
    cursor
        .strip_prefix("m.")
        .and_then(|s| MessageId::parse(s).ok())
        .ok_or_else(|| Error::invalid("cursor", "is not a cursor of a session's messages"))
}

/// A session id from a caller: non-empty, no NUL, at most 256 characters; the error names
/// `session_id`.
pub fn check_session_id(id: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(Error::invalid("session_id", "must not be empty"));
    }
    crate::limits::check_no_nul("session_id", id)?;
    crate::limits::check_chars("session_id", id, 256)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_strangers() {
        let c = session_cursor("talk 1/é");
        assert_eq!(parse_session_cursor(&c).unwrap(), "talk 1/é");
        let id = MessageId::new();
        assert_eq!(parse_message_cursor(&message_cursor(id)).unwrap(), id);
        for bad in ["", "s.zz", "m.nope", "c2.00", &message_cursor(id)[1..]] {
            let e = parse_session_cursor(bad).unwrap_err().to_string();
            assert!(e.contains("cursor"), "{e}");
            let e = parse_message_cursor(bad).unwrap_err().to_string();
            assert!(e.contains("cursor"), "{e}");
        }
    }

    #[test]
    fn session_ids_are_checked_naming_the_field() {
        for bad in ["", "  ", "a\0b"] {
            let e = check_session_id(bad).unwrap_err().to_string();
            assert!(e.contains("session_id"), "{e}");
        }
        assert!(check_session_id(&"x".repeat(257)).is_err());
        assert!(check_session_id("s-1").is_ok());
    }
}
