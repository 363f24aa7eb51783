//! The steps of a write transaction, named once: [`WriteStep`] is the vocabulary of the write
//! order ([`write_batch`](super::write_batch) runs them, [`write_tiers`](super::write_tiers)
//! the hierarchy's) and of every backend's fault-injection hook, so a test that fails an add at
//! a step fails it at the same place on every store.

use std::fmt;

/// One step of an add's transaction. A backend's test hook (`testing::fail_at`) fails the
/// transaction when it reaches the step, with [`WriteStep::injected_failure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteStep {
    /// Appending a message to the log.
    Message,
    /// Retiring an existing memory (superseded or deleted).
    Change,
    /// Inserting a new memory.
    Memory,
    /// Recording a history event (an `ADD`, a retirement's, an `EVICT`).
    History,
    /// Linking a new memory to an entity.
    Entity,
    /// Writing a relation between entities (an edge, a statement of one, a closing).
    Relation,
    /// Writing a link (a supersession's edge or one of the batch's links).
    Link,
    /// Evolving an existing note.
    Evolve,
    /// Inserting a page into the short-term window.
    Page,
    /// Writing a segment (new or rewritten).
    Segment,
    /// Moving a page from the short-term window into a segment.
    Move,
    /// Evicting a segment.
    Evict,
    /// Marking a page analysed.
    Analyse,
    /// Storing the batch's outcome under its idempotency key.
    Idempotency,
}

use WriteStep::*;

impl WriteStep {
    /// Every step of a batch, in the order [`write_batch`](super::write_batch) reaches them
    /// (the hierarchy's between the evolutions and the idempotency key).
    pub const BATCH: &'static [WriteStep] = &[
        Message,
        Change,
        Memory,
        History,
        Entity,
        Relation,
        Link,
        Evolve,
        Page,
        Segment,
        Move,
        Evict,
        Analyse,
        Idempotency,
    ];

    /// The steps of a batch that writes no hierarchy: messages, retirements, memories with
    /// their history and entities, links, evolutions and the idempotency key.
    pub const RECORDS: &'static [WriteStep] = &[
        Message,
        Change,
        Memory,
        History,
        Entity,
        Relation,
        Link,
        Evolve,
        Idempotency,
    ];

    /// The hierarchy's steps, in the order [`write_tiers`](super::write_tiers) runs them.
    pub const TIERS: &'static [WriteStep] = &[Page, Segment, Move, Evict, Analyse];

    /// The steps of an inferred add (a message, a retired fact, its successor with an entity,
    /// the supersession's link, an idempotency key).
    pub const INFERRED_ADD: &'static [WriteStep] =
        &[Message, Change, Memory, History, Entity, Link, Idempotency];

    /// The steps of an add that writes the hierarchy (pages, segments, moves from the
    /// short-term window, evictions) besides its memories.
    pub const TIER_ADD: &'static [WriteStep] = &[
        Message,
        Memory,
        History,
        Page,
        Segment,
        Move,
        Evict,
        Idempotency,
    ];

    /// The steps of a profile analysis (profile and knowledge memories, the pages it consumed
    /// marked analysed).
    pub const PROFILE: &'static [WriteStep] = &[Change, Memory, History, Link, Analyse];

    /// The steps of a note add (new notes, their links, evolved neighbours).
    pub const NOTE_ADD: &'static [WriteStep] =
        &[Message, Memory, History, Entity, Link, Evolve, Idempotency];

    /// The step's name, as error messages and tests spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Message => "message",
            Change => "change",
            Memory => "memory",
            History => "history",
            Entity => "entity",
            Relation => "relation",
            Link => "link",
            Evolve => "evolve",
            Page => "page",
            Segment => "segment",
            Move => "move",
            Evict => "evict",
            Analyse => "analyse",
            Idempotency => "idempotency",
        }
    }

    /// The error a test hook fails this step with (a storage error naming the step).
    pub fn injected_failure(self) -> crate::Error {
        crate::Error::Storage {
            reason: format!("injected failure at {self}"),
        }
    }
}

impl fmt::Display for WriteStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_order_follows_the_batch_order() {
        let position = |s: &WriteStep| WriteStep::BATCH.iter().position(|b| b == s);
        for order in [
            WriteStep::RECORDS,
            WriteStep::TIERS,
            WriteStep::INFERRED_ADD,
            WriteStep::TIER_ADD,
            WriteStep::PROFILE,
            WriteStep::NOTE_ADD,
        ] {
            let at: Vec<usize> = order
                .iter()
                .map(|s| position(s).expect("a batch step"))
                .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        }
        let mut names: Vec<&str> = WriteStep::BATCH.iter().map(|s| s.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), WriteStep::BATCH.len(), "names are distinct");
    }

    #[test]
    fn an_injected_failure_names_its_step() {
        let e = WriteStep::Evolve.injected_failure();
        assert_eq!(e.kind(), crate::ErrorKind::Internal);
        assert!(e.to_string().contains("injected failure at evolve"), "{e}");
    }
}
