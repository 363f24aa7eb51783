// Stubs until this module is implemented (issue 14); remove this allow with them.
#![allow(unused_variables, unused_imports, dead_code)]
//! The write path on PostgreSQL: add batches (messages, memories, provenance, history,
//! entities, links, evolutions, idempotency), updates, deletes, touches and links. Every public
//! write is one database transaction.

use crate::PgStore;
use mnemo_core::tier::*;
use mnemo_core::*;

impl PgStore {
    pub(crate) fn write_batches(&self, batches: Vec<WriteBatch>) -> Result<Vec<AddOutcome>> {
        Err(crate::not_yet("write_batches"))
    }

    pub(crate) fn stored_outcome(
        &self,
        scope: &Scope,
        idem: &Idempotency,
    ) -> Result<Option<AddOutcome>> {
        Err(crate::not_yet("stored_outcome"))
    }

    pub(crate) fn update_memory(
        &self,
        scope: &Scope,
        id: MemoryId,
        patch: MemoryPatch,
        ctx: &WriteContext,
    ) -> Result<Memory> {
        Err(crate::not_yet("update_memory"))
    }

    pub(crate) fn delete_memory(
        &self,
        scope: &Scope,
        id: MemoryId,
        mode: DeleteMode,
        ctx: &WriteContext,
    ) -> Result<()> {
        Err(crate::not_yet("delete_memory"))
    }

    pub(crate) fn update_memories(
        &self,
        items: Vec<(Scope, MemoryId, MemoryPatch)>,
        ctx: &WriteContext,
    ) -> Result<Vec<Memory>> {
        Err(crate::not_yet("update_memories"))
    }

    pub(crate) fn delete_memories(
        &self,
        items: &[(Scope, MemoryId)],
        mode: DeleteMode,
        ctx: &WriteContext,
    ) -> Result<u64> {
        Err(crate::not_yet("delete_memories"))
    }

    pub(crate) fn delete_scope(
        &self,
        scope: &Scope,
        mode: DeleteMode,
        ctx: &WriteContext,
    ) -> Result<u64> {
        Err(crate::not_yet("delete_scope"))
    }

    pub(crate) fn reset_all(&self) -> Result<()> {
        Err(crate::not_yet("reset_all"))
    }

    pub(crate) fn touch_memories(
        &self,
        scope: &Scope,
        ids: &[MemoryId],
        at: Timestamp,
    ) -> Result<u64> {
        Err(crate::not_yet("touch_memories"))
    }

    pub(crate) fn add_links_checked(&self, scope: &Scope, links: &[Link]) -> Result<()> {
        Err(crate::not_yet("add_links_checked"))
    }

    pub(crate) fn remove_one_link(
        &self,
        scope: &Scope,
        from: MemoryId,
        to: MemoryId,
        kind: LinkKind,
    ) -> Result<bool> {
        Err(crate::not_yet("remove_one_link"))
    }
}
