//! The graph: the [`Graph`] capability (links between memories and their entities).

use super::*;

/// A linked memory found by [`Store::linked`]: the memory, the link it was reached through and
/// the end of that link it was reached from.
#[derive(Debug, Clone)]
pub struct LinkedMemory {
    pub from: MemoryId,
    pub link: Link,
    /// The store-local key of `memory` (as in [`Candidate::key`]), so a search can score the
    /// linked memory against its query ([`Store::vector_scores`]).
    pub key: i64,
    pub memory: Memory,
}

/// Links between memories and the entities memories mention.
pub trait Graph: Send + Sync {
    /// Links from or to a memory of the scope, any state.
    fn links(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Link>>;
    /// Adds (or replaces: same ends and kind) links in one transaction, all or none. Each must
    /// pass [`Link::validate`] and join two memories that exist (any state) in one exact scope
    /// that `scope` covers; otherwise invalid input naming the field, and nothing is written.
    /// Required: only the backend can check both ends inside the transaction.
    fn add_links(&self, scope: &Scope, links: &[Link]) -> Result<()>;
    /// Removes the link `from → to` of `kind`; `Ok(false)` when there was none. `from` must be
    /// a memory of the scope (else not found). Required for the same reason as `add_links`.
    fn remove_link(
        &self,
        scope: &Scope,
        from: MemoryId,
        to: MemoryId,
        kind: LinkKind,
    ) -> Result<bool>;
    /// The memories linked (`kinds`, either direction) to any of `ids`, as seen by `query`:
    /// its scope, kinds, filter and visibility apply to the linked memories exactly as to
    /// candidates. Strongest link first per `from`; `query.limit` caps the answer. Required:
    /// the filter is the backend's own translation.
    fn linked(
        &self,
        query: &CandidateQuery<'_>,
        ids: &[MemoryId],
        kinds: &[LinkKind],
    ) -> Result<Vec<LinkedMemory>>;
    /// Entities linked to a memory of the scope.
    fn entities_of(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Entity>>;
}
