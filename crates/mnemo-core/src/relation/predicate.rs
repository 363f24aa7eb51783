//! Predicate normal form and the functional-predicate rule.
//!
//! Rules and models write the same relation many ways ("is married to", "wife", "spouse of");
//! the store compares predicates as strings, so they are folded into one lower-case snake-case
//! form first, and the common ones into [`CANONICAL_PREDICATES`](super::CANONICAL_PREDICATES).

use super::MAX_PREDICATE_LEN;
use crate::error::{Error, Result};

/// Written forms (already in snake case) and the canonical predicate each one means. The
/// direction convention: `(a, sibling_of, b)` reads "a is the sibling of b"; `parent_of` and
/// `child_of` say what the subject is to the object ("Linda is my mother" → `(Linda,
/// parent_of, me)`).
const SYNONYMS: &[(&str, &[&str])] = &[
    (
        "partner_of",
        &[
            "partner",
            "married_to",
            "husband",
            "husband_of",
            "wife",
            "wife_of",
            "spouse",
            "spouse_of",
            "boyfriend",
            "boyfriend_of",
            "girlfriend",
            "girlfriend_of",
            "fiance",
            "fiancee",
            "fiance_of",
            "fiancee_of",
            "engaged_to",
            "dating",
            "in_relationship_with",
            "in_a_relationship_with",
            "partnered_with",
            "partners_with",
        ],
    ),
    (
        "sibling_of",
        &[
            "sibling",
            "sister",
            "sister_of",
            "brother",
            "brother_of",
            "siblings_with",
            "twin",
            "twin_of",
        ],
    ),
    (
        "parent_of",
        &[
            "parent",
            "mother",
            "mother_of",
            "father",
            "father_of",
            "mom",
            "mom_of",
            "dad",
            "dad_of",
            "mum",
            "mum_of",
        ],
    ),
    (
        "child_of",
        &[
            "child",
            "son",
            "son_of",
            "daughter",
            "daughter_of",
            "kid",
            "kid_of",
        ],
    ),
    (
        "family_of",
        &[
            "family",
            "relative",
            "relative_of",
            "related_to",
            "cousin",
            "cousin_of",
            "aunt",
            "aunt_of",
            "uncle",
            "uncle_of",
            "niece",
            "niece_of",
            "nephew",
            "nephew_of",
            "grandmother",
            "grandmother_of",
            "grandfather",
            "grandfather_of",
            "grandparent",
            "grandparent_of",
            "grandchild",
            "grandchild_of",
            "grandson",
            "grandson_of",
            "granddaughter",
            "granddaughter_of",
            "in_law",
            "in_law_of",
        ],
    ),
    (
        "friend_of",
        &[
            "friend",
            "friends",
            "friends_with",
            "best_friend",
            "best_friend_of",
            "best_friends_with",
            "close_friend",
            "close_friend_of",
        ],
    ),
    (
        "works_at",
        &[
            "works_for",
            "work_at",
            "work_for",
            "working_at",
            "working_for",
            "employed_at",
            "employed_by",
            "employee_of",
            "employer",
            "job_at",
            "has_job_at",
            "works_with_company",
        ],
    ),
    (
        "lives_in",
        &[
            "live_in",
            "living_in",
            "resides_in",
            "reside_in",
            "residing_in",
            "resident_of",
            "based_in",
            "lives_at",
            "home_in",
            "located_in",
        ],
    ),
    (
        "moved_to",
        &["move_to", "relocated_to", "relocate_to", "moved_into"],
    ),
    (
        "likes",
        &[
            "like",
            "loves",
            "love",
            "enjoys",
            "enjoy",
            "fan_of",
            "is_fan_of",
            "a_fan_of",
            "interested_in",
            "into",
            "favorite",
            "favourite",
            "likes_to",
            "loves_to",
            "enjoys_doing",
        ],
    ),
    (
        "dislikes",
        &[
            "dislike",
            "hates",
            "hate",
            "does_not_like",
            "doesnt_like",
            "doesn_t_like",
            "not_like",
            "cannot_stand",
            "can_t_stand",
            "cant_stand",
        ],
    ),
    (
        "owns",
        &["own", "has", "have", "possesses", "owner_of", "bought"],
    ),
    (
        "has_pet",
        &[
            "pet",
            "has_pet",
            "owns_pet",
            "has_a_pet",
            "has_dog",
            "has_cat",
            "has_a_dog",
            "has_a_cat",
            "pet_owner_of",
        ],
    ),
    (
        "studies_at",
        &[
            "study_at",
            "studies",
            "studying_at",
            "student_at",
            "student_of",
            "goes_to_school_at",
            "attends",
            "attend",
            "attending",
            "enrolled_at",
            "enrolled_in",
            "studies_in",
        ],
    ),
    (
        "member_of",
        &[
            "member",
            "belongs_to",
            "part_of",
            "joined",
            "in_group",
            "plays_for",
            "plays_in",
        ],
    ),
    (
        "age",
        &["aged", "age_is", "years_old", "is_aged", "has_age"],
    ),
];

/// Predicates that hold for one object at a time per subject: a new edge with a different
/// object closes the old one's valid time instead of sitting beside it. Everything else
/// accumulates (`likes`, `friend_of`, `sibling_of`, `owns`, `has_pet`, `member_of`, `moved_to`,
/// `parent_of`, `child_of`, free predicates…).
///
/// - `lives_in`, `works_at`, `studies_at`: one home, one employer, one school at a time — the
///   common case the supersession rule is for; a person with two jobs loses the first edge's
///   currency, which the history keeps.
/// - `partner_of`: one partner at a time.
/// - `age`: one value.
pub const FUNCTIONAL_PREDICATES: &[&str] =
    &["lives_in", "works_at", "studies_at", "partner_of", "age"];

/// Whether a (normalised) predicate is functional: see [`FUNCTIONAL_PREDICATES`].
pub fn is_functional(predicate: &str) -> bool {
    FUNCTIONAL_PREDICATES.contains(&predicate)
}

/// Predicates that read the same both ways: *Ana — sibling_of — Caroline* is *Caroline —
/// sibling_of — Ana*. The store keeps one edge for both directions (a statement of the
/// reverse supports it), and a functional one (`partner_of`) is one object at a time for
/// either end.
pub const SYMMETRIC_PREDICATES: &[&str] = &[
    "sibling_of",
    "partner_of",
    "friend_of",
    "family_of",
    "neighbor_of",
    "colleague_of",
];

/// Whether a (normalised) predicate is symmetric: see [`SYMMETRIC_PREDICATES`].
pub fn is_symmetric(predicate: &str) -> bool {
    SYMMETRIC_PREDICATES.contains(&predicate)
}

/// Folds a written predicate into its normal form: lower case, words joined by `_`, then a
/// known synonym ("is married to", "husband", "employed at", "resides in") into its canonical
/// name. A leading `is_`/`are_`/`was_` is dropped when what remains is a synonym ("is sister of"
/// → `sibling_of`). Other predicates are kept as free predicates in the same form.
///
/// Errors (`InvalidInput` on field `predicate`): nothing left after folding (empty, only
/// punctuation), or a result longer than [`MAX_PREDICATE_LEN`] characters. Work is linear in
/// the input.
pub fn normalize_predicate(raw: &str) -> Result<String> {
    let mut snake = String::with_capacity(raw.len().min(4 * MAX_PREDICATE_LEN));
    let mut pending_gap = false;
    for c in raw.chars() {
        // Apostrophes inside a word vanish ("doesn't" → "doesnt"), other non-letters separate.
        if matches!(c, '\'' | '’') {
            continue;
        }
        if c.is_alphanumeric() {
            if pending_gap && !snake.is_empty() {
                snake.push('_');
            }
            pending_gap = false;
            snake.extend(c.to_lowercase());
        } else {
            pending_gap = true;
        }
        if snake.len() > 4 * MAX_PREDICATE_LEN + 8 {
            break;
        }
    }
    if snake.is_empty() {
        return Err(Error::invalid("predicate", "empty after normalisation"));
    }
    let canonical = canonical_of(&snake).or_else(|| {
        ["is_", "are_", "was_", "were_", "has_been_"]
            .iter()
            .find_map(|p| snake.strip_prefix(p))
            .and_then(canonical_of)
    });
    if let Some(c) = canonical {
        return Ok(c.to_string());
    }
    let len = snake.chars().count();
    if len > MAX_PREDICATE_LEN {
        return Err(Error::invalid(
            "predicate",
            format!("longer than {MAX_PREDICATE_LEN} characters"),
        ));
    }
    Ok(snake)
}

fn canonical_of(snake: &str) -> Option<&'static str> {
    if super::CANONICAL_PREDICATES.contains(&snake) {
        return super::CANONICAL_PREDICATES
            .iter()
            .copied()
            .find(|c| *c == snake);
    }
    SYNONYMS
        .iter()
        .find(|(_, forms)| forms.contains(&snake))
        .map(|(canonical, _)| *canonical)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn written_forms_fold_to_canonical_or_free_predicates() {
        let table = [
            ("is married to", "partner_of"),
            ("husband", "partner_of"),
            ("Wife", "partner_of"),
            ("sister", "sibling_of"),
            ("brother of", "sibling_of"),
            ("is sister of", "sibling_of"),
            ("works for", "works_at"),
            ("employed at", "works_at"),
            ("WORKS_AT", "works_at"),
            ("lives in", "lives_in"),
            ("resides in", "lives_in"),
            ("studies at", "studies_at"),
            ("goes to school at", "studies_at"),
            ("moved to", "moved_to"),
            ("loves", "likes"),
            ("doesn't like", "dislikes"),
            ("hates", "dislikes"),
            ("mother", "parent_of"),
            ("daughter of", "child_of"),
            ("cousin", "family_of"),
            ("best friend", "friend_of"),
            ("member of", "member_of"),
            ("years old", "age"),
            ("has pet", "has_pet"),
            // Free predicates keep their snake-case form.
            ("Plays  the Guitar!", "plays_the_guitar"),
            ("volunteers-at", "volunteers_at"),
            ("  mentor of ", "mentor_of"),
            ("Café owner", "café_owner"),
        ];
        for (raw, want) in table {
            assert_eq!(normalize_predicate(raw).unwrap(), want, "{raw:?}");
        }
        for c in super::super::CANONICAL_PREDICATES {
            assert_eq!(normalize_predicate(c).unwrap(), *c);
        }
    }

    #[test]
    fn empty_and_over_long_predicates_are_typed_errors_naming_the_field() {
        let long = "x".repeat(MAX_PREDICATE_LEN + 1);
        let huge = "word ".repeat(10_000);
        for raw in ["", "   ", "!!! ---", long.as_str(), huge.as_str()] {
            let err = normalize_predicate(raw).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{raw:?}");
            assert!(err.to_string().contains("predicate"), "{err}");
        }
        assert_eq!(
            normalize_predicate(&"x".repeat(MAX_PREDICATE_LEN))
                .unwrap()
                .len(),
            MAX_PREDICATE_LEN
        );
    }

    #[test]
    fn every_synonym_targets_a_canonical_predicate_and_functional_ones_are_canonical() {
        for (canonical, _) in SYNONYMS {
            assert!(
                super::super::CANONICAL_PREDICATES.contains(canonical),
                "{canonical}"
            );
        }
        for p in FUNCTIONAL_PREDICATES {
            assert!(super::super::CANONICAL_PREDICATES.contains(p), "{p}");
        }
    }

    #[test]
    fn functional_predicates_supersede_and_others_accumulate() {
        for p in ["lives_in", "works_at", "partner_of", "age", "studies_at"] {
            assert!(is_functional(p), "{p}");
        }
        for p in [
            "likes",
            "dislikes",
            "friend_of",
            "sibling_of",
            "owns",
            "has_pet",
            "moved_to",
            "member_of",
            "parent_of",
            "child_of",
            "plays_guitar",
        ] {
            assert!(!is_functional(p), "{p}");
        }
    }
}
