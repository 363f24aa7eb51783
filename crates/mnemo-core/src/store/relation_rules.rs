//! The rules of relations every backend needs, stated once: the contradiction rule
//! ([`plan_edge`]: a functional predicate holds one object at a time, so a new object closes
//! the old edge's valid time, as a superseding memory closes the old memory's) and the checks
//! on what a batch may carry ([`check_new_relations`]). How a batch writes its edges
//! ([`write_relations`] over a backend's [`RelationWriter`], inside the batch's transaction) is
//! in `write.rs`; the bounded neighbourhood walk ([`walk_neighbourhood`]) in `walk.rs`.

use super::*;
use crate::relation::{ObjectKind, RelationCandidate, MAX_PREDICATE_LEN};

mod walk;
mod write;
pub use walk::*;
pub use write::*;

/// The longest entity name or literal an edge takes, in characters.
pub const MAX_RELATION_NAME: usize = 200;
/// The longest fact sentence an edge keeps, in characters.
pub const MAX_FACT_CHARS: usize = 2000;

/// An existing edge of the same subject and predicate, as [`plan_edge`] weighs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RivalEdge {
    pub id: RelationId,
    /// The object's identity: its entity id, or `literal:` and its normal form.
    pub object_key: String,
    pub valid_from: Timestamp,
    pub valid_until: Option<Timestamp>,
}

/// What writing one statement does.
#[derive(Debug, Clone, PartialEq)]
pub enum EdgePlan {
    /// The same relation already holds at its time: the statement becomes one more source.
    Support(RelationId),
    /// A new edge valid until `valid_until` (a later rival's start), closing `close` (rivals
    /// that held at its start) at its `valid_from`.
    Insert {
        valid_until: Option<Timestamp>,
        close: Vec<RelationId>,
    },
}

/// The contradiction rule. A statement of `object_key` from `from` on joins a rival of the same
/// object that holds at `from` (or still holds). Otherwise it is a new edge; when the predicate
/// is `functional`, every rival of another object that holds at `from` is closed there, and a
/// rival that begins later (a statement about an earlier time arriving late) ends the new edge
/// where it begins. Non-functional predicates accumulate.
pub fn plan_edge(
    functional: bool,
    object_key: &str,
    from: Timestamp,
    rivals: &[RivalEdge],
) -> EdgePlan {
    let holds_at = |r: &RivalEdge| r.valid_from <= from && r.valid_until.is_none_or(|u| from < u);
    if let Some(same) = rivals
        .iter()
        .find(|r| r.object_key == object_key && (holds_at(r) || r.valid_until.is_none()))
    {
        return EdgePlan::Support(same.id);
    }
    let mut valid_until: Option<Timestamp> = None;
    let mut close = Vec::new();
    if functional {
        for r in rivals.iter().filter(|r| r.object_key != object_key) {
            if holds_at(r) {
                close.push(r.id);
                valid_until = earliest(valid_until, r.valid_until);
            } else if r.valid_from > from {
                valid_until = earliest(valid_until, Some(r.valid_from));
            }
        }
    }
    EdgePlan::Insert { valid_until, close }
}

fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The key [`RivalEdge::object_key`] holds for an object.
pub fn object_key(kind: ObjectKind, entity: Option<EntityId>, value: &str) -> String {
    match (kind, entity) {
        (ObjectKind::Entity, Some(id)) => id.to_string(),
        _ => format!("literal:{}", crate::entity::normalize_entity(value)),
    }
}

/// When a memory's relations begin to hold: when its event happened where the text says (event
/// time), else its own valid time, else when it was said.
pub fn relation_valid_from(m: &NewMemory) -> Timestamp {
    m.event_time
        .as_ref()
        .map(|e| e.start)
        .or(m.valid_from)
        .unwrap_or(m.created_at)
}

/// A name an edge or a read takes: non-empty after trimming, at most [`MAX_RELATION_NAME`]
/// characters (counted without reading past the bound: linear in the limit, not the input).
pub fn check_relation_name(field: &str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(crate::Error::invalid(field, "must not be empty"));
    }
    if name.chars().nth(MAX_RELATION_NAME).is_some() {
        return Err(crate::Error::invalid(
            field,
            format!("is longer than {MAX_RELATION_NAME} characters"),
        ));
    }
    Ok(())
}

/// Checks one candidate: names present and bounded, a well-formed predicate of at most
/// [`MAX_PREDICATE_LEN`] characters, no edge from an entity to itself.
pub fn check_candidate(c: &RelationCandidate) -> Result<()> {
    check_relation_name("relations.subject", &c.subject)?;
    check_relation_name("relations.object", &c.object)?;
    let p = &c.predicate;
    if p.is_empty() || p.len() > MAX_PREDICATE_LEN {
        return Err(crate::Error::invalid(
            "relations.predicate",
            format!("must be 1 to {MAX_PREDICATE_LEN} characters"),
        ));
    }
    if !p
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(crate::Error::invalid(
            "relations.predicate",
            format!("{p:?} is not lower-case snake case"),
        ));
    }
    if c.object_kind == ObjectKind::Entity
        && crate::entity::normalize_entity(&c.subject) == crate::entity::normalize_entity(&c.object)
    {
        return Err(crate::Error::invalid(
            "relations.object",
            format!("{:?} relates to itself", c.subject),
        ));
    }
    Ok(())
}

/// What a batch checks before writing anything: every relation names a memory of the batch
/// and is a well-formed candidate.
pub fn check_new_relations(batch: &WriteBatch) -> Result<()> {
    for r in &batch.relations {
        if !batch.memories.iter().any(|m| m.id == r.memory) {
            return Err(crate::Error::invalid(
                "relations.memory",
                format!("memory {} is not one of this add's memories", r.memory),
            ));
        }
        check_candidate(&r.candidate)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(year: i32) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(year, 1, 1, 0, 0, 0).unwrap()
    }

    fn rival(object: &str, from: i32, until: Option<i32>) -> RivalEdge {
        RivalEdge {
            id: RelationId::new(),
            object_key: object.into(),
            valid_from: at(from),
            valid_until: until.map(at),
        }
    }

    #[test]
    fn a_functional_predicate_closes_the_object_that_held_and_keeps_history() {
        let oslo = rival("oslo", 2020, None);
        let plan = plan_edge(true, "porto", at(2023), std::slice::from_ref(&oslo));
        assert_eq!(
            plan,
            EdgePlan::Insert {
                valid_until: None,
                close: vec![oslo.id]
            }
        );
        // A statement about an earlier time, arriving late, ends where the known one begins.
        let plan = plan_edge(true, "lima", at(2018), std::slice::from_ref(&oslo));
        assert_eq!(
            plan,
            EdgePlan::Insert {
                valid_until: Some(at(2020)),
                close: vec![]
            }
        );
        // A closed rival that held at the new start is cut there, and the new edge ends where
        // the rival's successor began.
        let old = rival("oslo", 2015, Some(2020));
        let plan = plan_edge(true, "rome", at(2017), std::slice::from_ref(&old));
        assert_eq!(
            plan,
            EdgePlan::Insert {
                valid_until: Some(at(2020)),
                close: vec![old.id]
            }
        );
    }

    #[test]
    fn a_repeated_statement_supports_the_edge_and_other_predicates_accumulate() {
        let oslo = rival("oslo", 2020, None);
        assert_eq!(
            plan_edge(true, "oslo", at(2024), std::slice::from_ref(&oslo)),
            EdgePlan::Support(oslo.id)
        );
        // Moving back after the edge was closed is a new edge, not the old one revived.
        let closed = rival("oslo", 2020, Some(2021));
        assert!(matches!(
            plan_edge(true, "oslo", at(2024), std::slice::from_ref(&closed)),
            EdgePlan::Insert { .. }
        ));
        assert_eq!(
            plan_edge(false, "jazz", at(2024), &[rival("rock", 2020, None)]),
            EdgePlan::Insert {
                valid_until: None,
                close: vec![]
            }
        );
    }

    #[test]
    fn bad_candidates_are_refused_naming_the_field() {
        let good = RelationCandidate {
            subject: "Ana".into(),
            subject_type: "person".into(),
            predicate: "lives_in".into(),
            object: "Porto".into(),
            object_kind: ObjectKind::Entity,
            object_type: "place".into(),
            sentence: "Ana lives in Porto.".into(),
        };
        check_candidate(&good).unwrap();
        let field = |c: RelationCandidate| match check_candidate(&c).unwrap_err() {
            crate::Error::InvalidInput { field, .. } => field,
            e => panic!("{e}"),
        };
        let long = "p".repeat(MAX_PREDICATE_LEN + 1);
        assert_eq!(
            field(RelationCandidate {
                predicate: long,
                ..good.clone()
            }),
            "relations.predicate"
        );
        assert_eq!(
            field(RelationCandidate {
                predicate: "Lives In".into(),
                ..good.clone()
            }),
            "relations.predicate"
        );
        assert_eq!(
            field(RelationCandidate {
                subject: " ".into(),
                ..good.clone()
            }),
            "relations.subject"
        );
        assert_eq!(
            field(RelationCandidate {
                object: "x".repeat(10_000),
                ..good.clone()
            }),
            "relations.object"
        );
        assert_eq!(
            field(RelationCandidate {
                object: "ana".into(),
                ..good.clone()
            }),
            "relations.object"
        );
        // A literal may repeat the subject's words.
        check_candidate(&RelationCandidate {
            object: "Ana".into(),
            object_kind: ObjectKind::Literal,
            ..good
        })
        .unwrap();
    }
}
