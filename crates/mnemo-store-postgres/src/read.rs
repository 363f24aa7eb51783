// Stubs until this module is implemented (issue 14); remove this allow with them.
#![allow(unused_variables, unused_imports, dead_code)]
//! The read path on PostgreSQL: get, list (with cursors), history, provenance, links and
//! entities of a memory, owners, stats and integrity.

use crate::PgStore;
use mnemo_core::tier::*;
use mnemo_core::*;

impl PgStore {
    pub(crate) fn get_memory(
        &self,
        scope: &Scope,
        id: MemoryId,
        read: &ReadOptions,
    ) -> Result<Memory> {
        Err(crate::not_yet("get_memory"))
    }

    pub(crate) fn list_memories(&self, query: &ListQuery) -> Result<Page> {
        Err(crate::not_yet("list_memories"))
    }

    pub(crate) fn locate_memories(&self, query: &ListQuery, skip: u64) -> Result<ListPosition> {
        Err(crate::not_yet("locate_memories"))
    }

    pub(crate) fn history_of(
        &self,
        scope: &Scope,
        id: MemoryId,
        read: &ReadOptions,
    ) -> Result<Vec<HistoryEvent>> {
        Err(crate::not_yet("history_of"))
    }

    pub(crate) fn fetch_keys(
        &self,
        query: &CandidateQuery<'_>,
        keys: &[i64],
    ) -> Result<Vec<(i64, Memory)>> {
        Err(crate::not_yet("fetch_keys"))
    }

    pub(crate) fn by_hash(
        &self,
        scope: &Scope,
        hashes: &[String],
    ) -> Result<Vec<(String, MemoryId)>> {
        Err(crate::not_yet("by_hash"))
    }

    pub(crate) fn owner(&self, id: MemoryId) -> Result<Scope> {
        Err(crate::not_yet("owner"))
    }

    pub(crate) fn owner_counts(&self) -> Result<Vec<(Scope, u64)>> {
        Err(crate::not_yet("owner_counts"))
    }

    pub(crate) fn messages_with_ids(
        &self,
        scope: &Scope,
        ids: &[MessageId],
    ) -> Result<Vec<Message>> {
        Err(crate::not_yet("messages_with_ids"))
    }

    pub(crate) fn message_log(
        &self,
        scope: &Scope,
        session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        Err(crate::not_yet("message_log"))
    }

    pub(crate) fn links_of(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Link>> {
        Err(crate::not_yet("links_of"))
    }

    pub(crate) fn linked_memories(
        &self,
        query: &CandidateQuery<'_>,
        ids: &[MemoryId],
        kinds: &[LinkKind],
    ) -> Result<Vec<LinkedMemory>> {
        Err(crate::not_yet("linked_memories"))
    }

    pub(crate) fn entities_of_memory(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Entity>> {
        Err(crate::not_yet("entities_of_memory"))
    }

    pub(crate) fn check_integrity(&self) -> Result<IntegrityReport> {
        Err(crate::not_yet("check_integrity"))
    }

    pub(crate) fn store_stats(&self) -> Result<StoreStats> {
        Err(crate::not_yet("store_stats"))
    }
}
