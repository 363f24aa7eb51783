//! The work of each call: facade calls whose answers are JSON values in the shapes the server's
//! Mem0 routes return (`{"results": [...]}` of memories with `id`, `memory`, `hash`, `metadata`,
//! `created_at`, `updated_at`, the scope ids and, for search hits, `score`). `records` holds
//! Mem0's methods, `extra` mnemo's own (context packs, erasure, links, profile, the log,
//! export and import), `graph` the entity graph's reads.
//!
//! A call that names a memory by id without a scope acts on the memory's owner: in process the
//! caller holds the whole store, as an admin key does on the server.

pub(crate) mod blocks;
pub(crate) mod extra;
pub(crate) mod graph;
pub(crate) mod records;
pub(crate) mod timeline;

use crate::convert::Parts;
use crate::errors::Failure;
use mnemo_core::{MemoryId, Scope};

/// The scope a by-id call acts in: the one given, else the memory's owner.
pub(crate) async fn scope_for_id(
    mem: &mnemo::Memory,
    parts: &Parts,
    id: MemoryId,
) -> Result<Scope, Failure> {
    if parts.given() {
        parts.scope()
    } else {
        Ok(mem.owner_of(id).await?)
    }
}

/// What a write records as its author (`actor`: `python`, or `python:<name>` when the settings
/// name one) and why (`reason`, as the caller gave it).
pub(crate) fn write_context(actor: &str, reason: Option<String>) -> mnemo_core::WritePlan {
    mnemo_core::WritePlan {
        actor: Some(actor.to_string()),
        role: None,
        reason,
        request_id: None,
    }
}
