//! Memories, messages, history events, links and entities: the persisted vocabulary.
//!
//! Persisted enums serialise as lower-case strings; new variants may be added, existing names
//! never change, so rows written by an older version always parse.

use crate::error::{Error, Result};
use crate::scope::Scope;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub type Timestamp = DateTime<Utc>;
/// Typed metadata: any JSON object. Values round-trip exactly (strings stay strings).
pub type Metadata = serde_json::Map<String, serde_json::Value>;

macro_rules! uuid_id {
    ($name:ident, $what:literal) => {
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub uuid::Uuid);

        impl $name {
            /// A new time-ordered (UUIDv7) id.
            pub fn new() -> Self {
                Self(uuid::Uuid::now_v7())
            }
            pub fn parse(raw: &str) -> Result<Self> {
                uuid::Uuid::parse_str(raw.trim())
                    .map(Self)
                    .map_err(|_| Error::invalid($what, format!("{raw:?} is not a UUID")))
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

uuid_id!(MemoryId, "memory_id");
uuid_id!(PageId, "page_id");
uuid_id!(SegmentId, "segment_id");
uuid_id!(MessageId, "message_id");
uuid_id!(EntityId, "entity_id");
uuid_id!(RelationId, "relation_id");

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
        }

        impl std::str::FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                let s = s.trim();
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str().eq_ignore_ascii_case(s))
                    .ok_or_else(|| Error::invalid(stringify!($name), format!("unknown value {s:?}")))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let raw = String::deserialize(d)?;
                raw.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

string_enum!(
    /// What a memory is. Raw memories are one message each; the others come from pipelines.
    MemoryKind { Raw => "raw", Fact => "fact", Procedural => "procedural", Note => "note", Profile => "profile", Summary => "summary", Knowledge => "knowledge" }
);
string_enum!(
    /// Lifecycle state. Only `active` memories are returned by default.
    MemoryState { Active => "active", Superseded => "superseded", Deleted => "deleted" }
);
string_enum!(
    Role { User => "user", Assistant => "assistant", System => "system", Tool => "tool" }
);
string_enum!(
    /// What happened to a memory in one history event.
    HistoryKind { Add => "ADD", Update => "UPDATE", Delete => "DELETE", Supersede => "SUPERSEDE", Expire => "EXPIRE", Evolve => "EVOLVE", Merge => "MERGE", Erase => "ERASE", Evict => "EVICT" }
);
string_enum!(
    LinkKind { Related => "related", Continues => "continues", Supersedes => "supersedes", DerivedFrom => "derived_from" }
);
string_enum!(
    Author { Caller => "caller", Model => "model", Rule => "rule" }
);
string_enum!(
    /// Where a page of the hierarchy is: in its session's short-term window, in a mid-term
    /// segment, or evicted from mid-term with its segment (its messages stay).
    PageTier { Short => "short", Mid => "mid", Evicted => "evicted" }
);

/// Keys that would smuggle identity through metadata; scope is set only by explicit parameters.
pub const IDENTITY_KEYS: &[&str] = &["user_id", "agent_id", "run_id", "actor_id"];

/// Removes identity keys from caller metadata and returns the names it dropped, so the caller can
/// warn. Scope never changes through metadata.
pub fn strip_identity_keys(metadata: &mut Metadata) -> Vec<String> {
    let mut dropped = Vec::new();
    for key in IDENTITY_KEYS {
        if metadata.shift_remove(*key).is_some() {
            dropped.push((*key).to_string());
        }
    }
    if !dropped.is_empty() {
        tracing::warn!(keys = ?dropped, "identity keys in metadata were ignored; scope is set by parameters only");
    }
    dropped
}

/// The content hash used for deduplication and the embedding cache.
pub fn content_hash(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A retained item, as stored and as returned.
///
/// Deserialising one (an import line) checks and normalises its scope like
/// [`Scope::from_parts`], so a record read from outside cannot carry a scope no write path would
/// accept; the JSON form is otherwise the derived one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Memory {
    pub id: MemoryId,
    #[serde(rename = "memory")]
    pub text: String,
    pub kind: MemoryKind,
    pub state: MemoryState,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub metadata: Metadata,
    pub hash: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub valid_from: Option<Timestamp>,
    pub valid_until: Option<Timestamp>,
    pub actor: Option<String>,
    pub role: Option<Role>,
    /// Message ids this memory was derived from (provenance). Empty for a fact the model
    /// attributed to no message of its add: unattributed, not "all of them".
    pub sources: Vec<MessageId>,
    pub access_count: u64,
    pub last_accessed_at: Option<Timestamp>,
    /// A note's keywords, tags and context (`kind = note` only, else null; see
    /// [`crate::note`]). Absent in records written before notes existed.
    #[serde(default)]
    pub note: Option<NoteFields>,
    /// When what it says happened (see [`crate::time`]); distinct from `created_at` (when
    /// mnemo learnt it) and `valid_from`/`valid_until` (when it held). Absent when none was
    /// read or given (null), and in records written before event time existed.
    #[serde(default)]
    pub event_time: Option<crate::time::EventTime>,
}

/// What a note carries besides its text. Each list holds trimmed, non-empty, distinct entries
/// (see `NoteFields::validate`); the order is the author's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteFields {
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub context: String,
}

impl Memory {
    /// The owner. An error only for a record built in code with a scope no write path accepts
    /// (the fields are public); stored and deserialised records always have a valid one.
    pub fn scope(&self) -> Result<Scope> {
        Scope::from_parts(
            self.user_id.as_deref(),
            self.agent_id.as_deref(),
            self.run_id.as_deref(),
        )
    }

    /// The fields the visibility rule reads (see [`crate::ReadOptions::admits`]).
    pub fn validity(&self) -> crate::Validity {
        crate::Validity {
            active: self.state == MemoryState::Active,
            created_at: self.created_at,
            expires_at: self.expires_at,
            valid_from: self.valid_from,
            valid_until: self.valid_until,
        }
    }

    /// Whether `read` sees this memory.
    pub fn visible(&self, read: &crate::ReadOptions) -> bool {
        read.admits(&self.validity())
    }
}

/// A memory about to be written. Built by pipelines; the store trusts its fields.
#[derive(Debug, Clone)]
pub struct NewMemory {
    pub id: MemoryId,
    pub scope: Scope,
    pub kind: MemoryKind,
    pub text: String,
    /// The text the lexical index sees when it should differ from `text` (e.g. with context).
    pub index_text: Option<String>,
    pub metadata: Metadata,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub valid_from: Option<Timestamp>,
    pub actor: Option<String>,
    pub role: Option<Role>,
    pub vector: Vec<f32>,
    pub sources: Vec<MessageId>,
    /// Entities this memory mentions; the store merges them with the scope's known entities.
    pub entities: Vec<crate::entity::EntityMention>,
    /// Why it was written (the model's stated reason); recorded in its ADD history event.
    pub reason: Option<String>,
    /// A note's fields (`kind = note`); `index_text` then holds the enriched text.
    pub note: Option<NoteFields>,
    /// When what it says happened, read against its source message's time (the anchor).
    pub event_time: Option<crate::time::EventTime>,
}

impl NewMemory {
    /// The raw memory of one message: its text verbatim, its speaker as actor, the message as
    /// its only source.
    pub fn raw(
        message: &Message,
        scope: &Scope,
        metadata: Metadata,
        expires_at: Option<Timestamp>,
        vector: Vec<f32>,
    ) -> Self {
        NewMemory {
            id: MemoryId::new(),
            scope: scope.clone(),
            kind: MemoryKind::Raw,
            text: message.content.clone(),
            index_text: None,
            metadata,
            created_at: message.created_at,
            expires_at,
            valid_from: None,
            actor: message.name.clone(),
            role: Some(message.role),
            vector,
            sources: vec![message.id],
            entities: Vec::new(),
            reason: None,
            note: None,
            event_time: None,
        }
    }
}

/// One raw turn. Messages are append-only.
///
/// Deserialising one checks and normalises its scope, as for [`Memory`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct Message {
    pub id: MessageId,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub session_id: Option<String>,
    pub role: Role,
    pub name: Option<String>,
    pub content: String,
    pub created_at: Timestamp,
}

impl Message {
    /// The owner; an error only for a message built in code with an invalid scope.
    pub fn scope(&self) -> Result<Scope> {
        Scope::from_parts(
            self.user_id.as_deref(),
            self.agent_id.as_deref(),
            self.run_id.as_deref(),
        )
    }

    /// A new message owned by `scope`.
    pub fn new(
        scope: &Scope,
        role: Role,
        name: Option<String>,
        content: String,
        created_at: Timestamp,
    ) -> Self {
        Message {
            id: MessageId::new(),
            user_id: scope.user_id().map(|v| v.to_string()),
            agent_id: scope.agent_id().map(|v| v.to_string()),
            run_id: scope.run_id().map(|v| v.to_string()),
            session_id: None,
            role,
            name,
            content,
            created_at,
        }
    }
}

/// The parts of a valid scope as the optional strings records store.
fn scope_columns(scope: Scope) -> [Option<String>; 3] {
    [
        scope.user_id().map(|v| v.to_string()),
        scope.agent_id().map(|v| v.to_string()),
        scope.run_id().map(|v| v.to_string()),
    ]
}

// The derived (remote = "Self") forms do the field work; these add the scope check.
impl Serialize for Memory {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Memory::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Memory {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let mut m = Memory::deserialize(d)?;
        let scope = m.scope().map_err(serde::de::Error::custom)?;
        [m.user_id, m.agent_id, m.run_id] = scope_columns(scope);
        Ok(m)
    }
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Message::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let mut m = Message::deserialize(d)?;
        let scope = m.scope().map_err(serde::de::Error::custom)?;
        [m.user_id, m.agent_id, m.run_id] = scope_columns(scope);
        Ok(m)
    }
}

/// A message as the caller hands it over: `{role, content, name?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputMessage {
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One entry of a memory's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    pub id: i64,
    pub memory_id: MemoryId,
    pub event: HistoryKind,
    pub old_memory: Option<String>,
    pub new_memory: Option<String>,
    pub old_metadata: Option<Metadata>,
    pub new_metadata: Option<Metadata>,
    pub actor: Option<String>,
    pub role: Option<Role>,
    pub reason: Option<String>,
    pub request_id: Option<String>,
    pub created_at: Timestamp,
    /// For `EVOLVE`: the note's fields before and after (its text never changes); else null.
    #[serde(default)]
    pub old_note: Option<NoteFields>,
    #[serde(default)]
    pub new_note: Option<NoteFields>,
}

/// A typed edge between two memories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub from: MemoryId,
    pub to: MemoryId,
    pub kind: LinkKind,
    /// In [0, 1].
    pub strength: f32,
    pub author: Author,
    pub created_at: Timestamp,
    /// Why the link was made (the model's or the rule's words, or the caller's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Link {
    /// The checks that need no store: no self-link, a finite strength in [0, 1], a bounded
    /// reason. Stores add theirs (both ends exist, in one scope).
    pub fn validate(&self) -> Result<()> {
        if self.from == self.to {
            return Err(Error::invalid("to", "a memory cannot be linked to itself"));
        }
        if !self.strength.is_finite() || !(0.0..=1.0).contains(&self.strength) {
            return Err(Error::invalid(
                "strength",
                format!("must be a number in [0, 1], got {}", self.strength),
            ));
        }
        if let Some(r) = &self.reason {
            crate::limits::check_chars("reason", r, crate::note::MAX_CONTEXT_CHARS)?;
        }
        Ok(())
    }
}

/// A named thing memories mention, normalised and linked to those memories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    pub id: EntityId,
    pub name: String,
    pub normalized: String,
    pub entity_type: String,
    pub created_at: Timestamp,
}

/// Who is acting and why; recorded in history.
#[derive(Debug, Clone, Default)]
pub struct WritePlan {
    pub actor: Option<String>,
    pub role: Option<Role>,
    pub reason: Option<String>,
    pub request_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identity_keys_are_dropped_and_the_rest_kept_in_order() {
        let mut m = json!({"a": "0012", "user_id": "mallory", "b": 1, "actor_id": "x"})
            .as_object()
            .cloned()
            .unwrap();
        let dropped = strip_identity_keys(&mut m);
        assert_eq!(dropped, vec!["user_id", "actor_id"]);
        assert_eq!(serde_json::Value::Object(m), json!({"a": "0012", "b": 1}));
    }

    fn record(user: serde_json::Value, agent: serde_json::Value) -> serde_json::Value {
        json!({"id": "01a2308d-d164-7305-b45e-a01819e97608", "memory": "tea", "kind": "fact",
               "state": "active", "user_id": user, "agent_id": agent, "run_id": null,
               "metadata": {}, "hash": "", "created_at": "2020-01-01T00:00:00Z",
               "updated_at": "2020-01-01T00:00:00Z", "expires_at": null, "valid_from": null,
               "valid_until": null, "actor": null, "role": null, "sources": [],
               "access_count": 0, "last_accessed_at": null})
    }

    #[test]
    fn a_deserialised_record_has_a_valid_normalised_scope() {
        for (user, agent) in [
            (json!(null), json!(null)),
            (json!(""), json!(null)),
            (json!("a b"), json!(null)),
            (json!("u"), json!("bot\u{202E}")),
        ] {
            let err = serde_json::from_value::<Memory>(record(user.clone(), agent)).unwrap_err();
            assert!(err.to_string().contains("invalid"), "{user}: {err}");
        }
        let m: Memory = serde_json::from_value(record(json!(" alice "), json!(null))).unwrap();
        assert_eq!(m.user_id.as_deref(), Some("alice"));
        assert_eq!(m.scope().unwrap(), Scope::user("alice").unwrap());
        // The JSON form is the derived one: a record reads back as itself.
        let again: Memory = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(again, m);

        let message = json!({"id": "01a2308d-d164-7305-b45e-a01819e97608", "user_id": null,
            "agent_id": null, "run_id": null, "session_id": null, "role": "user", "name": null,
            "content": "hi", "created_at": "2020-01-01T00:00:00Z"});
        assert!(serde_json::from_value::<Message>(message).is_err());
    }

    #[test]
    fn a_record_built_in_code_with_no_scope_is_an_error_not_a_panic() {
        let mut m: Memory = serde_json::from_value(record(json!("u"), json!(null))).unwrap();
        m.user_id = None;
        assert_eq!(
            m.scope().unwrap_err().kind(),
            crate::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn enums_parse_their_names() {
        for k in MemoryKind::ALL {
            assert_eq!(k.as_str().parse::<MemoryKind>().unwrap(), *k);
        }
        assert_eq!("ADD".parse::<HistoryKind>().unwrap(), HistoryKind::Add);
        assert!("bogus".parse::<MemoryKind>().is_err());
    }
}
