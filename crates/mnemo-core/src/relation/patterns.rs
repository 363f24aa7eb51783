//! The patterns, each anchored on one closed-list word: kinship and pet nouns and named pets
//! (`kinship`), verbs of working/living/moving/studying/marrying/joining, roles, verbs of
//! liking and ages (`verbs`). Here: the walk that tries them, and the helpers they share.

mod kinship;
mod verbs;

use kinship::{kinship, pet_named, pet_unnamed};
use verbs::{age, likes, role_at, verb_object};

use super::lexicon::{kin, liking, pet, verb, AUX, NOT_CURRENT, OBJECT_END, PET_VERBS};
use super::rules::{End, Found, Name, Sentence};
use crate::entity::{self, listed, Kind};

/// Tries every pattern at every token of the sentence, in text order.
pub(super) fn walk(cx: &Sentence<'_, '_>, out: &mut Vec<Found>) {
    for k in cx.start..cx.end {
        let (base, _) = cx.base(k);
        if kin(base).is_some() || pet(base).is_some() {
            kinship(cx, k, out);
        }
        if matches!(base, "named" | "called") {
            pet_named(cx, k, out);
        } else if PET_VERBS.split_whitespace().any(|w| w == base) {
            pet_unnamed(cx, k, out);
        }
        if verb(base).is_some() {
            verb_object(cx, k, out);
        }
        if matches!(base, "student" | "member" | "school") {
            role_at(cx, k, out);
        }
        if liking(base).is_some() || base == "stand" || base == "fan" {
            likes(cx, k, out);
        }
        if base == "old" || base == "turned" {
            age(cx, k, out);
        }
    }
}

fn entity(n: &Name, entity_type: &'static str) -> End {
    (n.text.clone(), entity_type)
}

/// Person names by the entity rules' typing (single and plain multi-word names).
fn person(n: Option<Name>) -> Option<Name> {
    n.filter(|n| n.entity_type == entity::PERSON)
}

/// Whether token `k` ends a phrase: punctuation, the sentence's end, or a closing word.
fn boundary(cx: &Sentence<'_, '_>, k: usize) -> bool {
    k >= cx.end || cx.tokens[k].kind == Kind::Punct || listed(OBJECT_END, cx.word(k))
}

/// The subject of a verb at `k`: walks back over auxiliaries and adverbs (at most four); a
/// word that puts the verb out of the present or negates it yields nothing. `negated` reports
/// "don't"/"do not" so that "I don't like" can read as a dislike.
fn subject_before(
    cx: &Sentence<'_, '_>,
    k: usize,
    negated: Option<&mut bool>,
) -> Option<(End, bool)> {
    let mut j = k.checked_sub(1)?;
    let mut negation = false;
    for _ in 0..4 {
        if j < cx.start {
            return None;
        }
        let w = cx.word(j);
        if matches!(w, "don't" | "doesn't" | "not" | "never") && negated.is_some() {
            negation = true;
        } else if listed(NOT_CURRENT, w) {
            return None;
        } else if !listed(AUX, w) {
            break;
        }
        j = j.checked_sub(1)?;
    }
    let subject = cx.subject_at(j)?;
    if let Some(flag) = negated {
        *flag = negation;
    }
    Some(subject)
}
