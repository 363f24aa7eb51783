//! Links between memories and a memory's graph neighbourhood.

use crate::Memory;
use mnemo_core::*;

impl Memory {
    /// Links a caller adds (author `caller` is kept as given): see [`Graph::add_links`].
    pub async fn add_links(&self, scope: Scope, links: Vec<Link>) -> Result<()> {
        self.with_store(move |s| s.add_links(&scope, &links)).await
    }

    /// Removes one link; `false` when there was none.
    pub async fn remove_link(
        &self,
        scope: Scope,
        from: MemoryId,
        to: MemoryId,
        kind: LinkKind,
    ) -> Result<bool> {
        self.with_store(move |s| s.remove_link(&scope, &LinkKey { from, to, kind }))
            .await
    }

    /// A memory's links, both directions.
    pub async fn links(&self, scope: Scope, id: MemoryId) -> Result<Vec<Link>> {
        self.with_store(move |s| s.links(&scope, id)).await
    }

    /// What a memory is linked to: its links (both directions) and its entities.
    pub async fn graph(&self, scope: Scope, id: MemoryId) -> Result<(Vec<Link>, Vec<Entity>)> {
        self.with_store(move |s| Ok((s.links(&scope, id)?, s.entities_of(&scope, id)?)))
            .await
    }
}
