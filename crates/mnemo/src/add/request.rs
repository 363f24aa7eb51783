//! An add as the caller gives it ([`AddRequest`]) and its checks: [`prepare`] turns it into
//! the messages and metadata it writes, or a typed error naming the field.

use mnemo_core::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What to remember: a plain text (one user message) or a conversation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AddInput {
    Text(String),
    Messages(Vec<InputMessage>),
    /// Messages whose content may be a list of parts (text, images), as chat clients send
    /// them; turned into `Messages` when the add starts (see `add::content`).
    Parts(Vec<ContentMessage>),
}

impl AddInput {
    /// The input of messages whose content may hold parts, as a surface parsed them
    /// (`Content::from_json`): plain `Messages` when every content is a string, else `Parts`.
    pub fn from_content(messages: Vec<ContentMessage>) -> Self {
        if !messages
            .iter()
            .all(|m| matches!(m.content, Content::Text(_)))
        {
            return AddInput::Parts(messages);
        }
        AddInput::Messages(
            messages
                .into_iter()
                .map(|m| InputMessage {
                    role: m.role,
                    content: match m.content {
                        Content::Text(t) => t,
                        Content::Parts(_) => String::new(),
                    },
                    name: m.name,
                })
                .collect(),
        )
    }
}

#[derive(Debug, Clone)]
pub struct AddRequest {
    pub scope: Scope,
    pub input: AddInput,
    /// Must be a JSON object when given; identity keys inside it are dropped with a warning.
    pub metadata: Option<serde_json::Value>,
    pub expires_at: Option<Timestamp>,
    /// When the messages were said (the anchor their event times are read against; back-dates
    /// the messages and memories of an import); defaults to now. Not before 1900, at most a
    /// day ahead.
    pub timestamp: Option<Timestamp>,
    pub idempotency_key: Option<String>,
    /// `None`: infer when a chat model is configured, else raw.
    pub infer: Option<bool>,
    /// `Some(Procedural)` summarises an agent's steps into one procedural memory (needs an
    /// `agent_id` and a chat model). `Some(Note)` stores each message as a note (keywords,
    /// tags, context, links; by the chat model when one is configured and `infer` is not false,
    /// else by rules). `None` or `Fact`: the usual add.
    pub memory_type: Option<MemoryKind>,
    /// A note's fields as the caller gives them (kept as given); only for `memory_type = note`.
    pub note: NoteInput,
    /// Extra extraction instructions for this call.
    pub instructions: Option<String>,
    pub session_id: Option<String>,
    pub request_id: Option<String>,
    /// Who asks (e.g. `api-key:<id>` on the server), recorded as the actor of every history
    /// event the add writes; `None`: each memory's speaker (a conversation's `name`) is.
    pub actor: Option<String>,
}

impl AddRequest {
    pub fn text(scope: Scope, text: impl Into<String>) -> Self {
        Self {
            scope,
            input: AddInput::Text(text.into()),
            metadata: None,
            expires_at: None,
            timestamp: None,
            idempotency_key: None,
            infer: Some(false),
            memory_type: None,
            note: NoteInput::default(),
            instructions: None,
            session_id: None,
            request_id: None,
            actor: None,
        }
    }

    /// A note: `text` stored as given, with these fields (`None`: made by the model or rules).
    pub fn note(scope: Scope, text: impl Into<String>, note: NoteInput) -> Self {
        Self {
            memory_type: Some(MemoryKind::Note),
            infer: None,
            note,
            ..Self::text(scope, text)
        }
    }

    /// The idempotency record of a keyed add: its key and the hash of everything else it asks.
    pub(crate) fn idempotency(&self) -> Option<Idempotency> {
        self.idempotency_key.as_ref().map(|k| Idempotency {
            key: k.clone(),
            request_hash: self.request_hash(),
        })
    }

    fn request_hash(&self) -> String {
        let body = serde_json::json!({
            "scope": self.scope.key(),
            "input": self.input,
            "metadata": self.metadata,
            "expires_at": self.expires_at,
            "timestamp": self.timestamp,
            "session_id": self.session_id,
            "infer": self.infer,
            "memory_type": self.memory_type.map(|k| k.as_str()),
            "note": self.note,
            "instructions": self.instructions,
        });
        hex::encode(Sha256::digest(body.to_string().as_bytes()))
    }
}

/// Checks an add and turns it into the messages and metadata it will write.
pub(crate) fn prepare(
    req: &AddRequest,
    now: Timestamp,
) -> Result<(Vec<Message>, Metadata, Vec<String>)> {
    if let Some(k) = &req.idempotency_key {
        if k.trim().is_empty() || k.len() > 256 {
            return Err(Error::invalid(
                "idempotency_key",
                "must be 1 to 256 characters",
            ));
        }
        limits::check_no_nul("idempotency_key", k)?;
    }
    if let Some(m) = &req.metadata {
        limits::check_json_no_nul("metadata", m)?;
    }
    if let Some(s) = &req.session_id {
        // The rule session reads and erasure hold ids to: a session that can be written can
        // be read and erased.
        mnemo_core::session::check_session_id(s)?;
    }
    let mut metadata = match &req.metadata {
        None | Some(serde_json::Value::Null) => Metadata::new(),
        Some(serde_json::Value::Object(m)) => m.clone(),
        Some(_) => return Err(Error::invalid("metadata", "must be a JSON object")),
    };
    let dropped = strip_identity_keys(&mut metadata);
    let warnings = dropped
        .iter()
        .map(|k| format!("metadata key {k:?} ignored: scope is set only by explicit parameters"))
        .collect();
    if let Some(exp) = req.expires_at {
        limits::check_timestamp("expires_at", exp)?;
        if exp <= now {
            return Err(Error::invalid("expires_at", "is in the past"));
        }
    }
    // Message times are `at` plus their index in milliseconds; the year bound keeps that sum
    // far from the end of chrono's range.
    let at = match req.timestamp {
        Some(t) => pipeline::event_time::check_anchor("timestamp", t, now)?,
        None => now,
    };
    let inputs: Vec<InputMessage> = match &req.input {
        AddInput::Text(t) => vec![InputMessage {
            role: Role::User,
            content: t.clone(),
            name: None,
        }],
        AddInput::Messages(ms) => ms.clone(),
        // Parts still here hold no image (an add resolves those first): text only.
        AddInput::Parts(ms) => ms
            .iter()
            .enumerate()
            .map(|(i, m)| {
                Ok(InputMessage {
                    role: m.role,
                    content: m.content.text(&format!("messages[{i}].content"))?,
                    name: m.name.clone(),
                })
            })
            .collect::<Result<_>>()?,
    };
    if inputs.is_empty() {
        return Err(Error::invalid("messages", "must not be empty"));
    }
    if inputs.len() > limits::MAX_MESSAGES_PER_ADD {
        return Err(Error::invalid(
            "messages",
            format!(
                "{} messages in one add; the limit is {} (split the conversation over several adds)",
                inputs.len(),
                limits::MAX_MESSAGES_PER_ADD
            ),
        ));
    }
    let mut messages = Vec::new();
    for (i, m) in inputs.into_iter().enumerate() {
        if m.role == Role::System {
            continue;
        }
        limits::check_text(&format!("messages[{i}].content"), &m.content)?;
        if let Some(name) = &m.name {
            limits::check_no_nul(&format!("messages[{i}].name"), name)?;
        }
        // Keep the order of a conversation even when all turns share one timestamp.
        let mut message = Message::new(
            &req.scope,
            m.role,
            m.name.filter(|n| !n.trim().is_empty()),
            m.content,
            at + chrono::Duration::milliseconds(i as i64),
        );
        message.session_id = req.session_id.clone();
        if let Some(key) = &req.idempotency_key {
            // A retry of a failed add logs the same messages once, not twice.
            message.id = message_id_for(&req.scope, key, i);
        }
        messages.push(message);
    }
    Ok((messages, metadata, warnings))
}

/// The id of message `index` of an add with an idempotency key: the same on every retry.
fn message_id_for(scope: &Scope, key: &str, index: usize) -> MessageId {
    let digest = Sha256::digest(format!("{}\u{0}{key}\u{0}{index}", scope.key()).as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    MessageId(uuid::Builder::from_random_bytes(bytes).into_uuid())
}
