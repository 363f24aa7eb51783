//! Relations between entities: `(subject, predicate, object)` read from text, as candidates the
//! store turns into edges with provenance and valid time.
//!
//! Predicates are lower-case snake case; the common ones have canonical names
//! ([`CANONICAL_PREDICATES`]) and some are functional — one object at a time per subject, so a
//! new object supersedes the old edge instead of sitting beside it.
//!
//! The pieces (pure, no I/O):
//! - `predicate`: [`normalize_predicate`] (written form → snake case → canonical name) and
//!   [`is_functional`] (which predicates supersede);
//! - `rules`, `patterns`, `lexicon`: [`extract_relations`], the model-free extractor for the
//!   common English forms, tuned for precision (docs/relations-extraction.md has its measured
//!   precision and recall);
//! - `model`: the prompt that asks a chat model for entities and relations, and
//!   [`parse_model_relations`] / [`parse_model_extraction`], which read a weak model's answer.

mod lexicon;
mod model;
mod patterns;
mod predicate;
mod rules;

pub use model::{
    parse_model_extraction, parse_model_relations, relations_user_prompt, ModelExtraction,
    MAX_MODEL_RELATIONS, RELATIONS_SYSTEM_PROMPT,
};
pub use predicate::{
    is_functional, is_symmetric, normalize_predicate, FUNCTIONAL_PREDICATES, SYMMETRIC_PREDICATES,
};
pub use rules::{extract_relations, MAX_RELATIONS, MAX_RELATIONS_PER_SENTENCE};

#[cfg(test)]
mod tests_model;
#[cfg(test)]
mod tests_rules;

/// Entity types a relation's ends may have; a model's other types become [`THING`].
pub const PERSON: &str = "person";
pub const PLACE: &str = "place";
pub const ORGANIZATION: &str = "organization";
pub const PET: &str = "pet";
pub const THING: &str = "thing";
/// The entity types relations use, in the order the prompt lists them.
pub const ENTITY_TYPES: &[&str] = &[PERSON, PLACE, ORGANIZATION, PET, THING];

use serde::{Deserialize, Serialize};

/// Words that refer to someone without naming them: never a node of the graph, neither as a
/// relation's end nor as the speaker first person resolves to.
const PRONOUNS: &[&str] = &[
    "i", "me", "my", "we", "us", "our", "you", "your", "he", "him", "his", "she", "her", "they",
    "them", "their", "it", "speaker", "user",
];

/// Whether `name` (any case, trimmed) is a bare pronoun.
fn is_pronoun(name: &str) -> bool {
    PRONOUNS.contains(&name.trim().to_lowercase().as_str())
}

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
