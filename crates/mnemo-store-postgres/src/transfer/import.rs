//! Import: the records of an export written in one transaction. A record whose id the store
//! already holds is skipped (importing twice writes nothing); records that refer to memories
//! (index texts) only apply to memories this import wrote. A memory whose history the import
//! carries gets that history instead of the synthetic `ADD` an import writes otherwise.

use super::tables::{entity, page, segment};
use crate::codec::{metadata_value, ms, note_value};
use crate::encode::{insert_history, insert_memory, insert_message, scope_parts};
use crate::tiers::set_vector_from_pages;
use crate::{pg_err, search};
use mnemo_core::*;
use postgres::{GenericClient, Transaction};
use std::collections::BTreeSet;

/// What an import has done so far, for the records that refer back to it.
#[derive(Default)]
struct State {
    /// Core's import rules: what this import wrote, whose history it carries.
    rules: ImportState,
    /// Segments written by this import (key, id), whose vectors are recomputed at the end.
    segments: Vec<(String, SegmentId)>,
    /// Whether a history event kept its exported id (the id sequence then moves past it).
    kept_history_ids: bool,
    /// The bound dimension, read on first need.
    dimension: Option<usize>,
}

impl State {
    fn dimension(&mut self, tx: &mut Transaction<'_>) -> Result<usize> {
        match self.dimension {
            Some(d) => Ok(d),
            None => {
                let d = search::dimension_of(tx)?;
                self.dimension = Some(d);
                Ok(d)
            }
        }
    }
}

fn exists(tx: &mut Transaction<'_>, sql: &str, id: uuid::Uuid) -> Result<bool> {
    Ok(tx.query_opt(sql, &[&id]).map_err(pg_err)?.is_some())
}

/// Imports `records` inside `tx`; returns the rows written.
pub(super) fn import_records(
    tx: &mut Transaction<'_>,
    records: &[(ExportRecord, Option<Vec<f32>>)],
) -> Result<u64> {
    let mut state = State {
        rules: ImportState::scan(records),
        ..State::default()
    };
    // Writers of the same scopes wait for the import (and it for them), as for an add.
    crate::write::lock_scopes(tx, scope_keys(records)?)?;
    let mut written = 0u64;
    for (rec, vector) in records {
        written += match rec {
            ExportRecord::Message(m) => {
                // Records built in code skip deserialisation's scope check.
                check_imported_message(m)?;
                let new = !exists(tx, "SELECT 1 FROM messages WHERE id = $1", m.id.0)?;
                insert_message(tx, m)?;
                u64::from(new)
            }
            ExportRecord::Memory(m) => memory(tx, m, vector.as_deref(), &mut state)?,
            ExportRecord::Link(l) => link(tx, l)?,
            ExportRecord::IndexText {
                memory_id,
                index_text,
            } => {
                if !state.rules.imported.contains(memory_id) {
                    continue;
                }
                // The lexical column follows `index_text` (it is generated from it).
                tx.execute(
                    "UPDATE memories SET index_text = $1 WHERE id = $2",
                    &[index_text, &memory_id.0],
                )
                .map_err(pg_err)?
            }
            ExportRecord::History(h) => history(tx, h, &mut state)?,
            ExportRecord::Entity(e) => entity(tx, e)?,
            ExportRecord::Relation(e) => crate::relations::import_edge(tx, e)?,
            ExportRecord::Segment(s) => {
                let dim = state.dimension(tx)?;
                let n = segment(tx, s, dim)?;
                if n > 0 {
                    state.segments.push((s.scope.key(), s.id));
                }
                n
            }
            ExportRecord::Page(p) => {
                let v = imported_page_vector(vector.as_deref(), state.dimension(tx)?)?;
                page(tx, p, v)?
            }
            ExportRecord::Idempotency(r) => tx
                .execute(
                    "INSERT INTO idempotency (scope_key, key, request_hash, outcome, created_at) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                    &[
                        &r.scope_key,
                        &r.key,
                        &r.request_hash,
                        &r.outcome,
                        &ms(r.created_at),
                    ],
                )
                .map_err(pg_err)?,
            ExportRecord::Block(b) => crate::blocks::import(tx, b)?,
        };
    }
    for (key, id) in &state.segments {
        set_vector_from_pages(tx, key, *id)?;
    }
    if state.kept_history_ids {
        // Events written later must not draw an id an imported event already holds.
        tx.execute(
            "SELECT setval(pg_get_serial_sequence('history', 'id'), \
             (SELECT COALESCE(MAX(id), 0) + 1 FROM history), false)",
            &[],
        )
        .map_err(pg_err)?;
    }
    Ok(written)
}

/// The exact scopes the records write to (links and index texts write to their memories').
fn scope_keys(records: &[(ExportRecord, Option<Vec<f32>>)]) -> Result<BTreeSet<String>> {
    let owner = |u: &Option<String>, a: &Option<String>, r: &Option<String>| {
        Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref()).map(|s| s.key())
    };
    let mut keys = BTreeSet::new();
    for (rec, _) in records {
        keys.insert(match rec {
            ExportRecord::Message(m) => m.scope()?.key(),
            ExportRecord::Memory(m) => m.scope()?.key(),
            ExportRecord::History(h) => owner(&h.user_id, &h.agent_id, &h.run_id)?,
            ExportRecord::Entity(e) => owner(&e.user_id, &e.agent_id, &e.run_id)?,
            ExportRecord::Relation(e) => e.scope()?.key(),
            ExportRecord::Segment(s) => s.scope.key(),
            ExportRecord::Page(p) => p.scope.key(),
            ExportRecord::Idempotency(i) => i.scope_key.clone(),
            ExportRecord::Block(b) => b.block.owner.key(),
            ExportRecord::Link(_) | ExportRecord::IndexText { .. } => continue,
        });
    }
    Ok(keys)
}

fn memory(
    tx: &mut Transaction<'_>,
    m: &Memory,
    vector: Option<&[f32]>,
    state: &mut State,
) -> Result<u64> {
    if exists(tx, "SELECT 1 FROM memories WHERE id = $1", m.id.0)? {
        return Ok(0);
    }
    let new = ImportedMemory::check(m, vector, || state.dimension(tx))?;
    new.check_sources(&state.rules, |id| {
        tx.query("SELECT scope_key FROM messages WHERE id = $1", &[&id.0])
            .map_err(pg_err)?
            .iter()
            .map(|r| r.try_get::<_, String>(0).map_err(pg_err))
            .collect()
    })?;
    insert_memory(tx, &MemoryRow::imported(&new))?;
    if let Some(ctx) = new.written(&mut state.rules) {
        insert_history(tx, &new.add_event(&ctx))?;
    }
    Ok(1)
}

/// The exact owner of a memory, if the store holds it.
fn owner_key(tx: &mut impl GenericClient, id: MemoryId) -> Result<Option<String>> {
    let row = tx
        .query_opt(
            "SELECT scope_key FROM memories WHERE id = $1 LIMIT 1",
            &[&id.0],
        )
        .map_err(pg_err)?;
    Ok(row.map(|r| r.get(0)))
}

/// A link joins two stored memories of one exact scope (core's `check_imported_link`); an
/// existing link is kept.
fn link(tx: &mut Transaction<'_>, l: &Link) -> Result<u64> {
    let owner = check_imported_link(l, |id| owner_key(tx, id))?;
    crate::encode::write_link(tx, &owner, l, false)
}

fn history(tx: &mut Transaction<'_>, h: &HistoryRecord, state: &mut State) -> Result<u64> {
    let owner = Scope::from_parts(
        h.user_id.as_deref(),
        h.agent_id.as_deref(),
        h.run_id.as_deref(),
    )?;
    let e = &h.event;
    let key = owner.key();
    let seen = tx
        .query_opt(
            "SELECT 1 FROM history WHERE scope_key = $1 AND memory_id = $2 AND event = $3 \
             AND created_at = $4 AND new_text IS NOT DISTINCT FROM $5 \
             AND old_text IS NOT DISTINCT FROM $6",
            &[
                &key,
                &e.memory_id.0,
                &e.event.as_str(),
                &ms(e.created_at),
                &e.new_memory,
                &e.old_memory,
            ],
        )
        .map_err(pg_err)?
        .is_some();
    if seen {
        return Ok(0);
    }
    // The event keeps its exported id where that id is free, so the history reads back in the
    // same order; else it draws a new one.
    let id_free = tx
        .query_opt("SELECT 1 FROM history WHERE id = $1", &[&e.id])
        .map_err(pg_err)?
        .is_none();
    if id_free {
        state.kept_history_ids = true;
    }
    let [u, a, r] = scope_parts(&owner);
    // A taken id draws the next one from the column's own sequence.
    tx.execute(
        "INSERT INTO history (id, scope_key, memory_id, user_id, agent_id, run_id, event, \
         old_text, new_text, old_metadata, new_metadata, old_note, new_note, actor, role, reason, \
         request_id, created_at) OVERRIDING SYSTEM VALUE VALUES \
         (COALESCE($1, nextval(pg_get_serial_sequence('history', 'id'))), $2, $3, $4, $5, $6, \
         $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
        &[
            &id_free.then_some(e.id),
            &key,
            &e.memory_id.0,
            &u,
            &a,
            &r,
            &e.event.as_str(),
            &e.old_memory,
            &e.new_memory,
            &e.old_metadata.as_ref().map(metadata_value),
            &e.new_metadata.as_ref().map(metadata_value),
            &e.old_note.as_ref().map(note_value),
            &e.new_note.as_ref().map(note_value),
            &e.actor,
            &e.role.map(Role::as_str),
            &e.reason,
            &e.request_id,
            &ms(e.created_at),
        ],
    )
    .map_err(pg_err)
}
