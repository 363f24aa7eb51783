//! Entities and relations from a chat model: the prompt, and the reading of its answer.
//!
//! Weak models answer in many shapes, so the reader is generous about shape and strict about
//! content:
//!
//! - The JSON is repaired by [`parse_model_json`] (fences, prose around it, trailing commas,
//!   single quotes). An answer with no JSON in it, or JSON without a relation list (neither
//!   `relations` nor one of its aliases `relationships`, `triples`, `edges`, nor `entities`, nor a
//!   top-level array), is an **error**: the caller treats it as a failed model call, never as a
//!   text with no relations. `{"relations": []}`, `[]` and `{"entities": [...]}` are valid answers
//!   with no relations.
//! - A relation is an object (`subject`/`predicate`/`object`, or the aliases `source`/`head`,
//!   `relation`/`relationship`, `target`/`tail`) or a three-string array. Ends may be strings or
//!   `{"name", "type"}` objects.
//! - Dropped, one by one, without failing the answer: partial triples (a missing or non-string
//!   part), self-loops (same normal form on both ends), a bare pronoun as an end (the graph has no
//!   "I" or "she"), an end longer than [`MAX_MENTION_CHARS`](crate::entity::MAX_MENTION_CHARS),
//!   a predicate [`normalize_predicate`] refuses (empty, longer than 64), and duplicates (same
//!   subject, predicate and object after normalising).
//! - Entity types other than the five of [`ENTITY_TYPES`](super::ENTITY_TYPES) are mapped by a
//!   few synonyms (`organisation`, `company`, `city`, `animal`…) or else become `thing`.
//! - At most [`MAX_MODEL_RELATIONS`] relations and [`MAX_MENTIONS`] entities are kept, the first.

use super::{
    normalize_predicate, ObjectKind, RelationCandidate, ORGANIZATION, PERSON, PET, PLACE, THING,
};
use crate::entity::{normalize_entity, EntityMention, MAX_MENTIONS, MAX_MENTION_CHARS};
use crate::jsonfix::{parse_model_json, JsonRepairError};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// The most relations kept from one answer.
pub const MAX_MODEL_RELATIONS: usize = 64;

/// The system prompt of the relation extraction call.
pub const RELATIONS_SYSTEM_PROMPT: &str = r#"You build a knowledge graph from conversation text.
Read the text and write down:
1. "entities": every person, place, organization, pet or notable thing that is named, each as {"name": "...", "type": "person|place|organization|pet|thing"}.
2. "relations": each lasting fact that links two of them, or links one of them to a value, as {"subject": "...", "predicate": "...", "object": "...", "object_kind": "entity|literal"}.

Rules:
- Use names exactly as the text writes them. When the speaker says "I", "me", "my", "we" or "our", write the speaker's name instead; never use a pronoun as a subject or object.
- Predicates are short, lower case, words joined by underscores. Prefer these when they fit: parent_of, child_of, sibling_of, family_of, partner_of, friend_of, works_at, lives_in, moved_to, likes, dislikes, owns, studies_at, member_of, has_pet, age.
- The subject is the one the predicate describes: "my sister Ana" from speaker Caroline gives {"subject": "Ana", "predicate": "sibling_of", "object": "Caroline"}.
- A value such as an age, a hobby or a colour is an object with "object_kind": "literal".
- Only facts the text states as true now; skip wishes, questions, plans and guesses.
- Never relate something to itself.
- If nothing qualifies, answer {"entities": [], "relations": []}.

Answer with JSON only:
{"entities": [{"name": "...", "type": "..."}], "relations": [{"subject": "...", "predicate": "...", "object": "...", "object_kind": "entity"}]}"#;

/// The user message of the relation extraction call for `text`, said by `speaker` if known.
pub fn relations_user_prompt(text: &str, speaker: Option<&str>) -> String {
    match speaker {
        Some(s) => format!("Speaker: {s}\nText:\n{text}"),
        None => format!("Speaker: unknown (drop facts about \"I\")\nText:\n{text}"),
    }
}

/// What one answer held: the entities it named and the relations between them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelExtraction {
    pub entities: Vec<EntityMention>,
    pub relations: Vec<RelationCandidate>,
}

/// The relations of a model's answer; see the module docs for what is dropped and what is an
/// error. An `Err` means the model did not answer usably (a provider failure to the caller).
pub fn parse_model_relations(answer: &str) -> Result<Vec<RelationCandidate>, JsonRepairError> {
    parse_model_extraction(answer).map(|x| x.relations)
}

/// The entities and relations of a model's answer, read as the module docs describe.
pub fn parse_model_extraction(answer: &str) -> Result<ModelExtraction, JsonRepairError> {
    let value = parse_model_json(answer)?;
    let (entities, relations) = match &value {
        Value::Array(items) => (None, items.as_slice()),
        Value::Object(map) => split_answer(map)?,
        _ => return Err(shape("the answer is neither an object nor a list")),
    };
    let entities = read_entities(entities.unwrap_or(&[]));
    let types: HashMap<&str, &str> = entities
        .iter()
        .map(|e| (e.normalized.as_str(), e.entity_type.as_str()))
        .collect();
    let mut seen = HashSet::new();
    let relations = relations
        .iter()
        .filter_map(|item| read_relation(item, &types))
        .filter(|r| {
            seen.insert((
                normalize_entity(&r.subject),
                r.predicate.clone(),
                normalize_entity(&r.object),
            ))
        })
        .take(MAX_MODEL_RELATIONS)
        .collect();
    Ok(ModelExtraction {
        entities,
        relations,
    })
}

fn shape(reason: &str) -> JsonRepairError {
    JsonRepairError {
        reason: reason.to_string(),
    }
}

/// The entity and relation lists of an object answer. A `null` list counts as empty.
fn split_answer(map: &Map<String, Value>) -> Result<(Option<&[Value]>, &[Value]), JsonRepairError> {
    let list = |key: &str| -> Result<Option<&[Value]>, JsonRepairError> {
        match map.get(key) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(&[])),
            Some(Value::Array(items)) => Ok(Some(items.as_slice())),
            Some(_) => Err(shape(&format!("\"{key}\" is not a list"))),
        }
    };
    let mut relations = None;
    for key in ["relations", "relationships", "triples", "edges"] {
        if let Some(items) = list(key)? {
            relations = Some(items);
            break;
        }
    }
    let entities = list("entities")?;
    match (entities, relations) {
        (None, None) => Err(shape("no \"relations\" or \"entities\" list")),
        (e, r) => Ok((e, r.unwrap_or(&[]))),
    }
}

fn read_entities(items: &[Value]) -> Vec<EntityMention> {
    let mut seen = HashSet::new();
    items
        .iter()
        .filter_map(|item| match item {
            Value::String(name) => end_name(name).map(|n| EntityMention::new(n, THING)),
            Value::Object(o) => {
                let name = o.get("name").and_then(Value::as_str).and_then(end_name)?;
                let kind = o
                    .get("type")
                    .or(o.get("entity_type"))
                    .and_then(Value::as_str);
                Some(EntityMention::new(name, entity_type(kind.unwrap_or(THING))))
            }
            _ => None,
        })
        .filter(|e| seen.insert(e.normalized.clone()))
        .take(MAX_MENTIONS)
        .collect()
}

/// One end of a relation as written, or `None` when it cannot be a node: empty, too long, or
/// a bare pronoun.
fn end_name(raw: &str) -> Option<&str> {
    let name = raw.trim();
    let ok = !normalize_entity(name).is_empty()
        && name.chars().nth(MAX_MENTION_CHARS).is_none()
        && !super::is_pronoun(name);
    ok.then_some(name)
}

/// A model's entity type mapped into the five relations use.
fn entity_type(raw: &str) -> &'static str {
    match raw.trim().to_lowercase().as_str() {
        "person" | "people" | "human" | "character" | "individual" => PERSON,
        "place" | "location" | "city" | "country" | "town" | "region" | "state" | "gpe" => PLACE,
        "organization" | "organisation" | "org" | "company" | "employer" | "school"
        | "university" | "institution" | "team" | "band" | "group" | "club" => ORGANIZATION,
        "pet" | "animal" | "dog" | "cat" => PET,
        _ => THING,
    }
}

/// One relation item, or `None` when it is partial, a self-loop, or has an unusable part.
fn read_relation(item: &Value, types: &HashMap<&str, &str>) -> Option<RelationCandidate> {
    let field =
        |o: &Map<String, Value>, keys: &[&str]| keys.iter().find_map(|k| o.get(*k)).cloned();
    let (subject, predicate, object, kind, sentence) = match item {
        Value::Array(parts) if parts.len() == 3 => (
            parts[0].clone(),
            parts[1].clone(),
            parts[2].clone(),
            None,
            None,
        ),
        Value::Object(o) => (
            field(o, &["subject", "source", "head", "from"])?,
            field(o, &["predicate", "relation", "relationship", "rel", "type"])?,
            field(o, &["object", "target", "tail", "to"])?,
            field(o, &["object_kind", "object_type", "kind"]),
            field(o, &["fact", "sentence", "evidence"]),
        ),
        _ => return None,
    };
    let (subject, subject_type) = read_end(&subject, false)?;
    let (object, object_type) = read_end(&object, true)?;
    let predicate = normalize_predicate(predicate.as_str()?).ok()?;
    let (ns, no) = (normalize_entity(&subject), normalize_entity(&object));
    if ns == no {
        return None;
    }
    let kind_word = kind.as_ref().and_then(Value::as_str).unwrap_or("");
    let literal = matches!(
        kind_word,
        "literal" | "value" | "number" | "text" | "string"
    ) || predicate == "age"
        || object.chars().all(|c| c.is_ascii_digit() || c == '.');
    let typed = |given: Option<&str>, normal: &str| {
        given
            .or_else(|| types.get(normal).copied())
            .map_or(THING, entity_type)
    };
    let object_kind = if literal {
        ObjectKind::Literal
    } else {
        ObjectKind::Entity
    };
    let sentence = sentence
        .as_ref()
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.chars().nth(4 * MAX_MENTION_CHARS).is_none())
        .map_or_else(
            || format!("{subject} {} {object}", predicate.replace('_', " ")),
            str::to_string,
        );
    Some(RelationCandidate {
        subject,
        subject_type: typed(subject_type, &ns).to_string(),
        predicate,
        object,
        object_kind,
        object_type: if literal {
            String::new()
        } else {
            typed(object_type, &no).to_string()
        },
        sentence,
    })
}

/// A relation end: a string, a number (an age; only as an object), or an object with a name
/// and maybe a type.
fn read_end(value: &Value, number: bool) -> Option<(String, Option<&str>)> {
    match value {
        Value::String(s) => Some((end_name(s)?.to_string(), None)),
        Value::Number(n) if number => Some((n.to_string(), None)),
        Value::Object(o) => {
            let name = o.get("name").and_then(Value::as_str).and_then(end_name)?;
            Some((name.to_string(), o.get("type").and_then(Value::as_str)))
        }
        _ => None,
    }
}
