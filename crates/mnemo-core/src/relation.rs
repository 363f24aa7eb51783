//! Relations between entities: `(subject, predicate, object)` read from text, as candidates the
//! store turns into edges with provenance and valid time.
//!
//! Predicates are lower-case snake case; the common ones have canonical names
//! ([`CANONICAL_PREDICATES`]) and some are functional — one object at a time per subject, so a
//! new object supersedes the old edge instead of sitting beside it.

use serde::{Deserialize, Serialize};

/// The canonical predicates rules and model answers are normalised to. Others are kept as free
/// predicates (lower-case snake case, at most [`MAX_PREDICATE_LEN`] characters).
pub const CANONICAL_PREDICATES: &[&str] = &[
    "parent_of",
    "child_of",
    "sibling_of",
    "family_of",
    "partner_of",
    "friend_of",
    "works_at",
    "lives_in",
    "moved_to",
    "likes",
    "dislikes",
    "owns",
    "studies_at",
    "member_of",
    "has_pet",
    "age",
];

/// The longest predicate accepted.
pub const MAX_PREDICATE_LEN: usize = 64;

/// What the object of a relation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    /// Another entity (a person, place, organisation, pet…).
    Entity,
    /// A value (an age, a colour, a title).
    Literal,
}

/// A relation read from text, before it is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelationCandidate {
    /// The subject entity's name as written ("Caroline"); "I"/"my" already resolved to the
    /// speaker's name when one is known.
    pub subject: String,
    /// The subject's entity type (`person`, `place`, `organization`, `pet`, `thing`).
    pub subject_type: String,
    /// Normalised predicate (see [`CANONICAL_PREDICATES`]).
    pub predicate: String,
    pub object: String,
    pub object_kind: ObjectKind,
    /// The object's entity type when it is an entity; empty for literals.
    pub object_type: String,
    /// The sentence that states it.
    pub sentence: String,
}
