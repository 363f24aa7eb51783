//! Relations an add writes beside its memories: read by the rules from each raw memory's text
//! ([`rule_relations`]) or taken from a chat model's answer ([`model_relations`]). Either way a
//! candidate that fails [`check_candidate`] (a self-loop, an empty end, an over-long name or
//! predicate) is dropped with a warning rather than failing the add: extraction is a guess,
//! and the memory it came from is stored whatever the guess was.

use crate::memory::NewMemory;
use crate::relation::{extract_relations, RelationCandidate};
use crate::store::{check_candidate, NewRelation};

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
