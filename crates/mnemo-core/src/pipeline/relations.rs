//! Relations an add writes beside its memories: read by the rules from each raw memory's text
//! ([`rule_relations`]) or asked of the chat model over an inferred add's new facts
//! ([`ask_model`], whose candidates pass through [`model_relations`]). Either way a candidate
//! that fails [`check_candidate`] (a self-loop, an empty end, an over-long name or predicate) is
//! dropped with a warning rather than failing the add: extraction is a guess, and the memory it
//! came from is stored whatever the guess was. An answer that is not the expected JSON at all is
//! different: that is a failed model call, and the add fails with it.

use super::{json_request, shape_error, CallLog, InferConfig};
use crate::chat::ChatModel;
use crate::entity::normalize_entity;
use crate::error::Result;
use crate::memory::{MemoryKind, NewMemory};
use crate::relation::{
    extract_relations, parse_model_relations, relations_user_prompt, RelationCandidate,
    RELATIONS_SYSTEM_PROMPT,
};
use crate::store::{check_candidate, NewRelation};
use std::collections::HashSet;

/// The step name of the relation call in call logs and `step_of`.
pub const RELATIONS_STEP: &str = "relations";

/// The relations the rule extractor reads from each memory's text, its speaker standing for
/// "I"/"my"; at most [`crate::relation::MAX_RELATIONS`] per memory.
pub fn rule_relations(memories: &[NewMemory]) -> Vec<NewRelation> {
    let mut out = Vec::new();
    for m in memories {
        for c in extract_relations(&m.text, m.actor.as_deref()) {
            if check_candidate(&c).is_ok() {
                out.push(NewRelation {
                    memory: m.id,
                    candidate: c,
                });
            }
        }
    }
    out
}

/// The relations of an inferred add, asked of `chat` in one call over the add's new facts
/// (`memories` of kind `fact`, numbered as the model sees them). No fact, no call.
///
/// Each relation the answer keeps is tied to the fact that states it: the first fact whose text
/// names both ends. One that no single fact names is dropped with a warning: an edge is never
/// written without a memory of its own batch that states it (a relation the model joined from
/// two facts is an inference, not a statement). The fact's text
/// becomes the edge's sentence, so the edge quotes what is stored. A failed call, or an answer
/// with no relation list in it, is an error and the add writes nothing.
pub fn ask_model(
    chat: &dyn ChatModel,
    cfg: &InferConfig,
    memories: &[NewMemory],
    log: &mut CallLog,
    warnings: &mut Vec<String>,
) -> Result<Vec<NewRelation>> {
    let facts: Vec<&NewMemory> = memories
        .iter()
        .filter(|m| m.kind == MemoryKind::Fact)
        .collect();
    if facts.is_empty() {
        return Ok(Vec::new());
    }
    // The facts name their people already; a speaker is given only when one said them all.
    let mut speakers = facts.iter().map(|m| m.actor.as_deref());
    let first = speakers.next().flatten();
    let speaker = first.filter(|s| speakers.all(|o| o == Some(*s)));
    let text: String = facts
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{}. {}\n", i + 1, m.text))
        .collect();
    let req = json_request(
        RELATIONS_SYSTEM_PROMPT,
        relations_user_prompt(&text, speaker),
        cfg,
        None,
    );
    let answer = log.chat(chat, RELATIONS_STEP, &req)?;
    let candidates = parse_model_relations(&answer.content).map_err(|e| {
        shape_error(
            chat,
            RELATIONS_STEP,
            format!(
                "{}; answer began {:?}",
                e.reason,
                answer.content.chars().take(120).collect::<String>()
            ),
        )
    })?;
    let words: Vec<HashSet<String>> = facts.iter().map(|m| word_set(&m.text)).collect();
    let mut out = Vec::new();
    for mut c in candidates {
        let end = |name: &str| -> HashSet<String> {
            normalize_entity(name)
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        let (s, o) = (end(&c.subject), end(&c.object));
        let names =
            |w: &HashSet<String>, end: &HashSet<String>| !end.is_empty() && end.is_subset(w);
        let Some(at) = words.iter().position(|w| names(w, &s) && names(w, &o)) else {
            warnings.push(format!(
                "relation dropped: no new fact names both {:?} and {:?}",
                c.subject, c.object
            ));
            continue;
        };
        c.sentence = facts[at].text.clone();
        out.extend(model_relations(facts[at], vec![c], warnings));
    }
    Ok(out)
}

/// The words of `text` in the entity index's normal form, each also without a trailing `s`
/// ("Caroline's" normalises to "carolines", and must still name Caroline).
fn word_set(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for w in normalize_entity(text).split_whitespace() {
        if let Some(stem) = w.strip_suffix('s').filter(|s| s.chars().count() >= 2) {
            out.insert(stem.to_string());
        }
        out.insert(w.to_string());
    }
    out
}

/// A model's candidates for `memory`: the well-formed ones, and a warning naming each one
/// dropped and why.
pub fn model_relations(
    memory: &NewMemory,
    candidates: Vec<RelationCandidate>,
    warnings: &mut Vec<String>,
) -> Vec<NewRelation> {
    let mut out = Vec::new();
    for c in candidates {
        match check_candidate(&c) {
            Ok(()) => out.push(NewRelation {
                memory: memory.id,
                candidate: c,
            }),
            Err(e) => warnings.push(format!("relation dropped: {e}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Message, Metadata, Role};
    use crate::relation::ObjectKind;
    use crate::scope::Scope;

    fn said(speaker: &str, text: &str) -> NewMemory {
        let s = Scope::user("ann").unwrap();
        let m = Message::new(
            &s,
            Role::User,
            Some(speaker.into()),
            text.into(),
            chrono::Utc::now(),
        );
        NewMemory::raw(&m, &s, Metadata::new(), None, vec![1.0])
    }

    #[test]
    fn rules_resolve_the_speaker_and_tie_each_relation_to_its_memory() {
        let m = said("Caroline", "My sister Ana lives in Porto.");
        let rels = rule_relations(std::slice::from_ref(&m));
        assert!(!rels.is_empty());
        assert!(rels.iter().all(|r| r.memory == m.id));
        assert!(
            rels.iter()
                .any(|r| r.candidate.subject == "Ana" || r.candidate.object == "Ana"),
            "{rels:?}"
        );
    }

    #[test]
    fn a_bad_model_candidate_is_dropped_with_a_warning() {
        let m = said("Caroline", "hi");
        let ok = RelationCandidate {
            subject: "Ana".into(),
            subject_type: "person".into(),
            predicate: "likes".into(),
            object: "Bo".into(),
            object_kind: ObjectKind::Entity,
            object_type: "person".into(),
            sentence: "Ana likes Bo".into(),
        };
        let selfloop = RelationCandidate {
            object: "ana".into(),
            ..ok.clone()
        };
        let mut warnings = Vec::new();
        let kept = model_relations(&m, vec![ok, selfloop], &mut warnings);
        assert_eq!(kept.len(), 1);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("relates to itself"), "{warnings:?}");
    }
}
