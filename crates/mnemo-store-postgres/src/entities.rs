//! Entities a write links its memories to. Entities belong to the exact scope that wrote them;
//! a mention joins an entity of that scope whose normalised name equals or nearly matches its
//! own (`mnemo_core::entity::entities_match`: "Caroline" and "Carolin" are one node, "2023" and
//! "2022" never), else a new entity is made. `mentions` counts the memories linked to an
//! entity, kept by the writes that link and unlink.
//!
//! Runs inside the add's transaction, which holds its scope's write lock (see `write`), so two
//! adds of one scope never create the same entity twice.

use crate::pg_err;
use mnemo_core::entity::{self, entities_match, EntityMention};
use mnemo_core::*;
use postgres::types::ToSql;
use postgres::GenericClient;

/// One entity that may match a name: its id and normalised name.
pub(crate) struct Neighbour {
    pub id: uuid::Uuid,
    pub normalized: String,
}

/// The entities matching `normalized` among those `scope_sql` selects (a predicate on the
/// `entities` alias `e` over `$1..$n`, bound to `params`): exact variants by equality, then —
/// unless `exact_is_enough` and one was found — names of the same first character within the
/// near-match length window (`normalized` is byte-ordered, so that is an index range). Names
/// with digits or under five characters have no window.
pub(crate) fn matching_entities(
    c: &mut impl GenericClient,
    (scope_sql, params): (&str, &[&(dyn ToSql + Sync)]),
    normalized: &str,
    exact_is_enough: bool,
) -> Result<Vec<Neighbour>> {
    if normalized.is_empty() {
        return Ok(Vec::new());
    }
    let n = params.len();
    let mut read = |extra: &str, more: &[&(dyn ToSql + Sync)]| -> Result<Vec<Neighbour>> {
        let sql =
            format!("SELECT e.id, e.normalized FROM entities e WHERE {scope_sql} AND {extra}");
        let all: Vec<&(dyn ToSql + Sync)> = params.iter().chain(more).copied().collect();
        let rows = c.query(&sql, &all).map_err(pg_err)?;
        Ok(rows
            .iter()
            .map(|r| Neighbour {
                id: r.get(0),
                normalized: r.get(1),
            })
            .collect())
    };
    let variants = entity::exact_match_variants(normalized);
    let mut found = read(&format!("e.normalized = ANY(${})", n + 1), &[&variants])?;
    let Some(w) = entity::near_match_window(normalized) else {
        return Ok(found);
    };
    if exact_is_enough && !found.is_empty() {
        return Ok(found);
    }
    let (shortest, longest) = (w.shortest as i32, w.longest as i32);
    let near = read(
        &format!(
            "e.normalized >= ${} AND e.normalized < ${} \
             AND char_length(e.normalized) BETWEEN ${} AND ${}",
            n + 1,
            n + 2,
            n + 3,
            n + 4
        ),
        &[&w.from, &w.before, &shortest, &longest],
    )?;
    for e in near {
        if entities_match(&e.normalized, normalized) && !found.iter().any(|f| f.id == e.id) {
            found.push(e);
        }
    }
    Ok(found)
}

/// Links memory `memory` of exactly `scope` to the scope's entity for `mention`, creating it
/// when none matches; a memory linked twice to one entity counts once.
pub(crate) fn link_entity(
    tx: &mut postgres::Transaction<'_>,
    scope: &Scope,
    memory: MemoryId,
    mention: &EntityMention,
    at: i64,
) -> Result<()> {
    if mention.normalized.is_empty() {
        return Ok(());
    }
    let key = scope.key();
    let id = resolve_entity(tx, scope, mention, at)?;
    let linked = tx
        .execute(
            "INSERT INTO entity_memories (scope_key, entity_id, memory_id) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
            &[&key, &id, &memory.0],
        )
        .map_err(pg_err)?;
    if linked > 0 {
        tx.execute(
            "UPDATE entities SET mentions = mentions + 1 WHERE scope_key = $1 AND id = $2",
            &[&key, &id],
        )
        .map_err(pg_err)?;
    }
    Ok(())
}

/// The entity of exactly `scope` for `mention`: one whose normal form equals or nearly matches
/// it, else a new one.
pub(crate) fn resolve_entity(
    tx: &mut postgres::Transaction<'_>,
    scope: &Scope,
    mention: &EntityMention,
    at: i64,
) -> Result<uuid::Uuid> {
    let key = scope.key();
    let candidates =
        matching_entities(tx, ("e.scope_key = $1", &[&key]), &mention.normalized, true)?;
    let existing = candidates
        .iter()
        .find(|n| n.normalized == mention.normalized)
        .or_else(|| candidates.first())
        .map(|n| n.id);
    let id = match existing {
        Some(id) => id,
        None => {
            let id = EntityId::new().0;
            let [u, a, r] = crate::encode::scope_parts(scope);
            tx.execute(
                "INSERT INTO entities (scope_key, id, user_id, agent_id, run_id, name, normalized, \
                 entity_type, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                &[
                    &key,
                    &id,
                    &u,
                    &a,
                    &r,
                    &mention.name,
                    &mention.normalized,
                    &mention.entity_type,
                    &at,
                ],
            )
            .map_err(pg_err)?;
            id
        }
    };
    Ok(id)
}

/// Unlinks a memory from its entities (a hard delete), each entity counting one memory less.
pub(crate) fn unlink_memory(
    tx: &mut postgres::Transaction<'_>,
    owner_key: &str,
    memory: MemoryId,
) -> Result<()> {
    tx.execute(
        "UPDATE entities SET mentions = mentions - 1 WHERE scope_key = $1 AND id IN \
         (SELECT entity_id FROM entity_memories WHERE scope_key = $1 AND memory_id = $2)",
        &[&owner_key, &memory.0],
    )
    .map_err(pg_err)?;
    tx.execute(
        "DELETE FROM entity_memories WHERE scope_key = $1 AND memory_id = $2",
        &[&owner_key, &memory.0],
    )
    .map_err(pg_err)?;
    Ok(())
}
