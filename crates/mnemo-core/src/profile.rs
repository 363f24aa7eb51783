//! The user profile: a document of named dimensions ("hobbies", "work", "family"), each with the
//! messages it rests on. It is stored as one memory of kind `profile` per user scope: its text
//! is the rendered document (`name: value` lines, what search and context packs see) and its
//! metadata holds the structured form under [`DIMENSIONS_KEY`]. An update writes a new version
//! that supersedes the previous one (see `pipeline::profile`), so history keeps every version.
//!
//! Compatibility: the metadata form is `{"dimensions": [{"name", "value", "message_ids"}]}`;
//! readers ignore keys they do not know, and a profile whose metadata lacks the key reads as
//! the dimensions parsed from its text (message ids unknown).

use crate::memory::{Memory, MemoryKind, MessageId, Metadata};
use serde::{Deserialize, Serialize};

/// The metadata key that holds a profile memory's dimensions.
pub const DIMENSIONS_KEY: &str = "dimensions";

/// One named aspect of the user, with its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimension {
    pub name: String,
    pub value: String,
    /// The messages this dimension rests on, oldest evidence first.
    #[serde(default)]
    pub message_ids: Vec<MessageId>,
}

/// A user profile document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    pub dimensions: Vec<Dimension>,
}

impl Profile {
    /// The profile a stored memory of kind `profile` holds; `None` for any other memory.
    pub fn from_memory(m: &Memory) -> Option<Profile> {
        if m.kind != MemoryKind::Profile {
            return None;
        }
        let structured = m
            .metadata
            .get(DIMENSIONS_KEY)
            .and_then(|v| serde_json::from_value::<Vec<Dimension>>(v.clone()).ok());
        Some(match structured {
            Some(dimensions) => Profile { dimensions },
            None => Profile::from_text(&m.text),
        })
    }

    /// Dimensions read back from a rendered text (`name: value` lines), without evidence.
    fn from_text(text: &str) -> Profile {
        let dimensions = text
            .lines()
            .filter_map(|l| {
                let (name, value) = l.split_once(": ")?;
                let (name, value) = (name.trim(), value.trim());
                (!name.is_empty() && !value.is_empty()).then(|| Dimension {
                    name: name.to_string(),
                    value: value.to_string(),
                    message_ids: Vec::new(),
                })
            })
            .collect();
        Profile { dimensions }
    }

    /// The dimension called `name` (case and surrounding space aside).
    pub fn get(&self, name: &str) -> Option<&Dimension> {
        self.dimensions.iter().find(|d| same_name(&d.name, name))
    }

    /// The text a profile memory stores: one `name: value` line per dimension, in order.
    pub fn render(&self) -> String {
        self.dimensions
            .iter()
            .map(|d| format!("{}: {}", d.name, d.value))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The metadata a profile memory stores.
    pub fn metadata(&self) -> Metadata {
        let mut m = Metadata::new();
        m.insert(
            DIMENSIONS_KEY.into(),
            serde_json::to_value(&self.dimensions).unwrap_or_default(),
        );
        m
    }

    /// Every message any dimension rests on, each once, in order of first mention.
    pub fn sources(&self) -> Vec<MessageId> {
        let mut out: Vec<MessageId> = Vec::new();
        for id in self.dimensions.iter().flat_map(|d| &d.message_ids) {
            if !out.contains(id) {
                out.push(*id);
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.dimensions.is_empty()
    }
}

/// Whether two dimension names are the same name (case and surrounding space aside).
pub fn same_name(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemoryId, MemoryState};

    fn memory(text: &str, metadata: Metadata) -> Memory {
        let now = chrono::Utc::now();
        Memory {
            id: MemoryId::new(),
            text: text.into(),
            kind: MemoryKind::Profile,
            state: MemoryState::Active,
            user_id: Some("u".into()),
            agent_id: None,
            run_id: None,
            metadata,
            hash: String::new(),
            created_at: now,
            updated_at: now,
            expires_at: None,
            valid_from: None,
            valid_until: None,
            actor: None,
            role: None,
            sources: Vec::new(),
            access_count: 0,
            last_accessed_at: None,
            note: None,
            event_time: None,
        }
    }

    #[test]
    fn a_profile_round_trips_through_its_memory_fields() {
        let (a, b) = (MessageId::new(), MessageId::new());
        let p = Profile {
            dimensions: vec![
                Dimension {
                    name: "hobbies".into(),
                    value: "hiking, chess".into(),
                    message_ids: vec![a, b],
                },
                Dimension {
                    name: "work".into(),
                    value: "nurse".into(),
                    message_ids: vec![b],
                },
            ],
        };
        assert_eq!(p.render(), "hobbies: hiking, chess\nwork: nurse");
        assert_eq!(p.sources(), vec![a, b]);
        let back = Profile::from_memory(&memory(&p.render(), p.metadata())).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.get(" Work ").unwrap().value, "nurse");
    }

    #[test]
    fn a_profile_without_structured_metadata_reads_from_its_text() {
        let p = Profile::from_memory(&memory("hobbies: tea\nnot a line", Metadata::new())).unwrap();
        assert_eq!(p.dimensions.len(), 1);
        assert_eq!(p.dimensions[0].value, "tea");
        assert!(p.dimensions[0].message_ids.is_empty());
        let mut fact = memory("x: y", Metadata::new());
        fact.kind = MemoryKind::Fact;
        assert!(Profile::from_memory(&fact).is_none());
    }
}
