//! The store: what every backend (embedded SQLite, PostgreSQL) provides, as capability traits
//! with one file each — [`Records`] (`records.rs`), [`RecordWrites`] (`record_writes.rs`),
//! [`Retrieval`], [`Graph`], [`Messages`],
//! [`Erasure`] (`erase.rs`), [`Tiers`], [`Transfer`], [`Admin`], [`Timeline`], [`Relations`] and
//! [`Blocks`] — and [`Store`], their sum,
//! which every type implementing all of them is. Callers hold `Arc<dyn Store>`; each backend
//! implements each capability directly, in a file of the same name as the trait's here.
//!
//! The rules every backend needs are stated here once, beside the trait they serve, so that a
//! backend is storage and queries: the batch write order (`batch.rs`: [`write_batch`] over a
//! backend's [`BatchWriter`]) and its steps ([`WriteStep`], `steps.rs`), the tier write order
//! ([`write_tiers`]), the checks and limits of lists, updates and links, the erase scrub plan
//! ([`ScrubPlan`]), import semantics ([`ImportState`]) and the binding checks.
//!
//! Invariants every implementation keeps (the contract suite in `mnemo-testkit` checks them):
//! - every method that writes does so in exactly one transaction over every table it touches;
//! - every read applies the scope and, unless `ReadOptions` says otherwise, the one
//!   expiry/state predicate — `get` by id included;
//! - derived indexes (vectors, lexical) never disagree with the records once a call returns.
//!
//! Methods are blocking; the async facade runs them on blocking threads.

use crate::error::Result;
use crate::filter::Filter;
use crate::memory::*;
use crate::scope::Scope;
use serde::{Deserialize, Serialize};

mod admin;
mod batch;
mod blocks;
mod erase;
mod graph;
mod idempotency;
mod messages;
mod record_writes;
mod records;
mod relation_rules;
mod relations;
mod retrieval;
mod steps;
mod tiers;
mod timeline;
mod transfer;

pub use admin::*;
pub use batch::*;
pub use blocks::*;
pub use erase::*;
pub use graph::*;
pub use idempotency::*;
pub use messages::*;
pub use record_writes::*;
pub use records::*;
pub use relation_rules::*;
pub use relations::*;
pub use retrieval::*;
pub use steps::*;
pub use tiers::*;
pub use timeline::*;
pub use transfer::*;

/// Every capability a store has: what the pipelines and the facade hold as `Arc<dyn Store>`.
/// Implemented by every type that implements all the capability traits; a backend never
/// implements it by hand.
pub trait Store:
    Records
    + RecordWrites
    + Retrieval
    + Graph
    + Messages
    + Erasure
    + Tiers
    + Transfer
    + Admin
    + Timeline
    + Relations
    + Blocks
{
}

impl<T> Store for T where
    T: Records
        + RecordWrites
        + Retrieval
        + Graph
        + Messages
        + Erasure
        + Tiers
        + Transfer
        + Admin
        + Timeline
        + Relations
        + Blocks
        + ?Sized
{
}

/// Which records a read sees. [`ReadOptions::admits`] is the one statement of the rule; the
/// stores' SQL predicates and index pre-filters implement it, and a test holds each to it.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Also return memories whose `expires_at` has passed.
    pub include_expired: bool,
    /// Also return superseded and (soft-)deleted memories.
    pub include_inactive: bool,
    /// The instant expiry is judged against.
    pub now: Timestamp,
    /// An as-of read: what was valid at this instant (`valid_from ≤ T < valid_until`, with
    /// `valid_from` defaulting to the creation time), whatever its state now — a superseded fact
    /// answers "where did she live in 2023". `include_inactive` does not apply; expiry (a
    /// retention limit, judged at `now`) still does.
    pub as_of: Option<Timestamp>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            include_expired: false,
            include_inactive: false,
            now: chrono::Utc::now(),
            as_of: None,
        }
    }
}

/// The fields of a memory the visibility rule reads.
#[derive(Debug, Clone, Copy)]
pub struct Validity {
    pub active: bool,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub valid_from: Option<Timestamp>,
    pub valid_until: Option<Timestamp>,
}

impl ReadOptions {
    /// The visibility rule: whether a memory with `v` is seen by this read.
    pub fn admits(&self, v: &Validity) -> bool {
        let unexpired = self.include_expired || v.expires_at.is_none_or(|t| t > self.now);
        let current = match self.as_of {
            Some(t) => {
                v.valid_from.unwrap_or(v.created_at) <= t && v.valid_until.is_none_or(|u| t < u)
            }
            None => self.include_inactive || v.active,
        };
        unexpired && current
    }

    /// Reads that see only active, unexpired memories at `now` (the default read).
    pub fn is_default_view(&self) -> bool {
        !self.include_expired && !self.include_inactive && self.as_of.is_none()
    }
}

/// Records for the unit tests of the store's rules.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::memory::*;

    /// An active memory of user `ann` holding `text`.
    pub(crate) fn memory(kind: MemoryKind, text: &str) -> Memory {
        let now = chrono::Utc::now();
        Memory {
            id: MemoryId::new(),
            text: text.into(),
            kind,
            state: MemoryState::Active,
            user_id: Some("ann".into()),
            agent_id: None,
            run_id: None,
            metadata: Metadata::new(),
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
}
