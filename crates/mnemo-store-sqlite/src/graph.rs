//! Entities and links: the graph around memories. Writes run inside the caller's transaction
//! (an add's entity links commit with its memories); reads apply the usual scope predicate.
//!
//! Entities belong to the exact scope that wrote them. A mention joins an existing entity of that
//! scope when their normalised names are equal or nearly equal (`entity::entities_match`), so
//! "Caroline" and "Carolin" become one node while "2023" and "2022" never do.

use crate::codec::*;
use crate::links::*;
use crate::predicate::{self, marks, Pred};
use crate::read::candidate_pred_with;
use crate::read::with_sources;
use crate::SqliteStore;
use mnemo_core::entity::{self, entities_match, EntityMention};
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Transaction};
use std::collections::HashMap;

/// How entity names are looked up for a scope: the scope predicate on `e`, and the index that
/// leads with a fixed scope column and the name.
pub(crate) struct EntityLookup {
    pred: Pred,
    index: &'static str,
}

impl EntityLookup {
    /// Entities of exactly `scope` (where a write links its mentions): every scope column is
    /// fixed, so `entities_by_scope_name` serves names and name ranges.
    fn exact(scope: &Scope) -> Self {
        let mut pred = Pred::default();
        exact_scope(&mut pred, "e", scope);
        Self {
            pred,
            index: "INDEXED BY entities_by_scope_name",
        }
    }

    /// Entities of every exact scope `scope` covers (what a search sees): driven by the
    /// `(part, name)` index of its first fixed part, the other parts checked per row.
    pub(crate) fn covered(scope: &Scope) -> Self {
        let mut pred = Pred::default();
        predicate::scope_unindexed(&mut pred, "e", scope);
        let (col, index, value) = if let Some(u) = scope.user_id() {
            ("user_id", "INDEXED BY entities_by_user_name", u.as_str())
        } else if let Some(a) = scope.agent_id() {
            ("agent_id", "INDEXED BY entities_by_agent_name", a.as_str())
        } else if let Some(r) = scope.run_id() {
            ("run_id", "INDEXED BY entities_by_run_name", r.as_str())
        } else {
            // A scope names at least one part (`Scope::validate`); this is never reached.
            return Self { pred, index: "" };
        };
        pred.push(&format!("e.{col} = ?"), [Sql::Text(value.into())]);
        Self { pred, index }
    }
}

pub(crate) fn exact_scope(p: &mut Pred, alias: &str, scope: &Scope) {
    for (col, v) in [
        ("user_id", scope.user_id().map(|v| v.as_str())),
        ("agent_id", scope.agent_id().map(|v| v.as_str())),
        ("run_id", scope.run_id().map(|v| v.as_str())),
    ] {
        match v {
            Some(v) => p.push(&format!("{alias}.{col} = ?"), [Sql::Text(v.into())]),
            None => p.push(&format!("{alias}.{col} IS NULL"), []),
        }
    }
}

/// One of the scope's entities that could match a name: id, normalised name and how many
/// memories it is linked to.
pub(crate) struct Neighbour {
    pub(crate) id: String,
    pub(crate) normalized: String,
    pub(crate) mentions: u64,
}

/// The scope's entities that match `normalized` (`entities_match`), found without walking the
/// scope's entities: the exact variants by equality, then (unless `exact_is_enough` and one was
/// found) names of the same first character within the edit-distance length window, an index
/// range whose length filter is read from the index itself. Names with digits or under five
/// characters have no window: a store with an entity per memory number stays one lookup a
/// mention.
pub(crate) fn matching_entities(
    conn: &Connection,
    lookup: &EntityLookup,
    normalized: &str,
    exact_is_enough: bool,
) -> Result<Vec<Neighbour>> {
    if normalized.is_empty() {
        return Ok(Vec::new());
    }
    let p = &lookup.pred;
    let read = |extra: &str, more: Vec<Sql>| -> Result<Vec<Neighbour>> {
        let sql = format!(
            "SELECT e.id, e.normalized, e.mentions FROM entities e {} WHERE {} AND {extra}",
            lookup.index,
            p.where_sql()
        );
        let mut params = p.params.clone();
        params.extend(more);
        let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
        let rows = stmt
            .query_map(params_from_iter(params.iter()), |r| {
                Ok(Neighbour {
                    id: r.get(0)?,
                    normalized: r.get(1)?,
                    mentions: r.get::<_, i64>(2)?.max(0) as u64,
                })
            })
            .map_err(sql_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
    };
    let variants = entity::exact_match_variants(normalized);
    let mut found = read(
        &format!("e.normalized IN ({})", marks(variants.len())),
        variants.into_iter().map(Sql::Text).collect(),
    )?;
    let Some(w) = entity::near_match_window(normalized) else {
        return Ok(found);
    };
    if exact_is_enough && !found.is_empty() {
        return Ok(found);
    }
    for n in read(
        "e.normalized >= ? AND e.normalized < ? AND length(e.normalized) BETWEEN ? AND ?",
        vec![
            Sql::Text(w.from),
            Sql::Text(w.before),
            Sql::Integer(w.shortest as i64),
            Sql::Integer(w.longest as i64),
        ],
    )? {
        if entities_match(&n.normalized, normalized) && !found.iter().any(|f| f.id == n.id) {
            found.push(n);
        }
    }
    Ok(found)
}

/// What one write transaction has learnt about entities, kept across its batches: the entity
/// of each exact name already looked up or created in a scope, and the mentions each entity
/// gained (added to its row once, at the end of the transaction, by [`EntityMemo::finish`]).
///
/// Only exact hits are remembered: an entity whose normalised name equals a mention's is the one
/// the lookup picks, and no later step of the same transaction can make another entity win over
/// it (a name that matched nearly is looked up again every time).
#[derive(Default)]
pub(crate) struct EntityMemo {
    exact: HashMap<(String, String), String>,
    mentions: HashMap<String, i64>,
}

impl EntityMemo {
    /// Adds the counted mentions to their entities' rows, in one order every writer keeps.
    pub(crate) fn finish(self, tx: &Transaction<'_>) -> Result<()> {
        let mut counts: Vec<(String, i64)> = self.mentions.into_iter().collect();
        counts.sort_unstable();
        for (id, n) in counts {
            tx.execute_cached(
                "UPDATE entities SET mentions = mentions + ?1 WHERE id = ?2",
                params![n, id],
            )
            .map_err(sql_err)?;
        }
        Ok(())
    }
}

/// Links a memory to the scope's entity for `mention`, creating the entity when no existing one
/// matches exactly or nearly. The entity's mention count grows in `memo` (see [`EntityMemo`]).
pub(crate) fn link_entity(
    tx: &Transaction<'_>,
    memo: &mut EntityMemo,
    scope: &Scope,
    (memory, seq): (MemoryId, i64),
    mention: &EntityMention,
    at: i64,
) -> Result<()> {
    if mention.normalized.is_empty() {
        return Ok(());
    }
    let id = resolve_entity(tx, memo, scope, mention, at)?;
    let linked = tx
        .execute_cached(
            "INSERT OR IGNORE INTO entity_memories (entity_id, memory_id, memory_seq) VALUES (?1, ?2, ?3)",
            params![id, memory.to_string(), seq],
        )
        .map_err(sql_err)?;
    if linked > 0 {
        *memo.mentions.entry(id).or_default() += 1;
    }
    Ok(())
}

/// The entity of exactly `scope` for `mention`: one whose normal form equals or nearly matches
/// it, else a new one (see [`EntityMemo`] for what the transaction remembers).
pub(crate) fn resolve_entity(
    tx: &Transaction<'_>,
    memo: &mut EntityMemo,
    scope: &Scope,
    mention: &EntityMention,
    at: i64,
) -> Result<String> {
    let key = (scope.key(), mention.normalized.clone());
    let id = match memo.exact.get(&key) {
        Some(id) => id.clone(),
        None => {
            let candidates =
                matching_entities(tx, &EntityLookup::exact(scope), &mention.normalized, true)?;
            let exact = candidates
                .iter()
                .find(|n| n.normalized == mention.normalized);
            // An exact hit, or the entity just made under this very name, is remembered; a
            // near match is not.
            match (exact, candidates.first()) {
                (None, Some(near)) => near.id.clone(),
                (Some(hit), _) => memo.exact.entry(key).or_insert(hit.id.clone()).clone(),
                (None, None) => {
                    let made = create_entity(tx, scope, mention, at)?;
                    memo.exact.entry(key).or_insert(made).clone()
                }
            }
        }
    };
    Ok(id)
}

/// A new entity of `scope` for `mention`; its id.
fn create_entity(
    tx: &Transaction<'_>,
    scope: &Scope,
    mention: &EntityMention,
    at: i64,
) -> Result<String> {
    let id = EntityId::new().to_string();
    tx.execute_cached(
        "INSERT INTO entities (id, user_id, agent_id, run_id, name, normalized, entity_type, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            id,
            scope.user_id().map(|v| v.as_str()),
            scope.agent_id().map(|v| v.as_str()),
            scope.run_id().map(|v| v.as_str()),
            mention.name,
            mention.normalized,
            mention.entity_type,
            at
        ],
    )
    .map_err(sql_err)?;
    Ok(id)
}

pub(crate) fn insert_link(tx: &Transaction<'_>, l: &Link) -> Result<()> {
    write_link(tx, l, "REPLACE").map(drop)
}

/// Writes `l`; on an existing (from, to, kind) row `on_conflict` is `REPLACE` (the new link wins)
/// or `IGNORE` (the old one stays). Returns the rows written.
pub(crate) fn write_link(tx: &Transaction<'_>, l: &Link, on_conflict: &str) -> Result<usize> {
    debug_assert!(matches!(on_conflict, "REPLACE" | "IGNORE"));
    tx.execute_cached(
        &format!(
            "INSERT OR {on_conflict} INTO links (from_id, to_id, kind, strength, author, created_at, reason) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
        ),
        params![
            l.from.to_string(),
            l.to.to_string(),
            l.kind.as_str(),
            l.strength as f64,
            l.author.as_str(),
            l.created_at.timestamp_millis(),
            l.reason
        ],
    )
    .map_err(sql_err)
}

/// A `links` row as selected by `SELECT from_id, to_id, kind, strength, author, created_at,
/// reason`.
pub(crate) type LinkRow = (String, String, String, f64, String, i64, Option<String>);

pub(crate) fn link_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<LinkRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

pub(crate) fn link_from_row(row: LinkRow) -> Result<Link> {
    let (from, to, kind, strength, author, at, reason) = row;
    Ok(Link {
        from: MemoryId::parse(&from)?,
        to: MemoryId::parse(&to)?,
        kind: kind.parse()?,
        strength: strength as f32,
        author: author.parse()?,
        created_at: from_ms(at),
        reason,
    })
}

/// True when a memory with this id exists in (or under) the scope, in any state.
pub(crate) fn owned(conn: &Connection, scope: &Scope, id: MemoryId) -> Result<bool> {
    let mut p = Pred::default();
    p.push("m.id = ?", [Sql::Text(id.to_string())]);
    predicate::scope_unindexed(&mut p, "m", scope);
    let sql = format!("SELECT 1 FROM memories m WHERE {}", p.where_sql());
    conn.query_row_cached(&sql, params_from_iter(p.params.iter()), |_| Ok(()))
        .optional()
        .map(|r| r.is_some())
        .map_err(sql_err)
}

impl Graph for SqliteStore {
    fn links(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Link>> {
        self.read(|conn| {
            if !owned(conn, scope, id)? {
                return Err(Error::not_found("memory", id));
            }
            let mut stmt = conn
                .prepare_cached(
                    "SELECT from_id, to_id, kind, strength, author, created_at, reason FROM links \
                     WHERE from_id = ?1 OR to_id = ?1 ORDER BY created_at, from_id, to_id",
                )
                .map_err(sql_err)?;
            let rows = stmt
                .query_map([id.to_string()], link_row)
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for r in rows {
                out.push(link_from_row(r.map_err(sql_err)?)?);
            }
            Ok(out)
        })
    }

    fn add_links(&self, scope: &Scope, links: &[Link]) -> Result<()> {
        validate_links(links)?;
        self.write_tx(|tx| {
            for l in links {
                check_link(scope, l, &HashMap::new(), |id| owner_in(tx, id))?;
                self.step(WriteStep::Link)?;
                insert_link(tx, l)?;
            }
            Ok(())
        })
    }

    fn remove_link(&self, scope: &Scope, key: &LinkKey) -> Result<bool> {
        let LinkKey { from, to, kind } = *key;
        self.write_tx(|tx| {
            if !owned(tx, scope, from)? {
                return Err(Error::not_found("memory", from));
            }
            let n = tx
                .execute_cached(
                    "DELETE FROM links WHERE from_id = ?1 AND to_id = ?2 AND kind = ?3",
                    [from.to_string(), to.to_string(), kind.as_str().to_string()],
                )
                .map_err(sql_err)?;
            Ok(n > 0)
        })
    }

    fn linked(&self, req: &LinkedQuery<'_>) -> Result<Vec<LinkedMemory>> {
        if req.finds_nothing() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let id_marks = marks(req.ids.len());
            let kind_marks = marks(req.kinds.len());
            let sql = format!(
                "SELECT from_id, to_id, kind, strength, author, created_at, reason FROM links \
                 WHERE (from_id IN ({id_marks}) OR to_id IN ({id_marks})) AND kind IN ({kind_marks}) \
                 ORDER BY strength DESC, created_at, from_id, to_id"
            );
            let params: Vec<Sql> = req.ids
                .iter()
                .chain(req.ids)
                .map(|i| Sql::Text(i.to_string()))
                .chain(req.kinds.iter().map(|k| Sql::Text(k.as_str().to_string())))
                .collect();
            let links: Vec<Link> = {
                let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
                let rows = stmt
                    .query_map(params_from_iter(params.iter()), link_row)
                    .map_err(sql_err)?;
                let mut out = Vec::new();
                for r in rows {
                    out.push(link_from_row(r.map_err(sql_err)?)?);
                }
                out
            };
            let walk = LinkWalk::new(req.ids, links);
            let mut loaded: HashMap<MemoryId, (i64, Memory)> = HashMap::new();
            for chunk in walk.others().chunks(500) {
                let mut p = candidate_pred_with(&req.query, true)?;
                p.push(
                    &format!("m.id IN ({})", predicate::marks(chunk.len())),
                    chunk.iter().map(|i| Sql::Text(i.to_string())),
                );
                let rows = crate::read::query_memories(conn, &p.where_sql(), "", &p.params)?;
                for (key, m) in with_sources(conn, rows)? {
                    loaded.insert(m.id, (key, m));
                }
            }
            Ok(walk.finish(&loaded, req.query.limit))
        })
    }

    fn entities_of(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Entity>> {
        self.read(|conn| {
            if !owned(conn, scope, id)? {
                return Err(Error::not_found("memory", id));
            }
            let mut stmt = conn
                .prepare_cached(
                    "SELECT e.id, e.name, e.normalized, e.entity_type, e.created_at FROM entity_memories em \
                     JOIN entities e ON e.id = em.entity_id WHERE em.memory_id = ?1 ORDER BY e.normalized",
                )
                .map_err(sql_err)?;
            let rows = stmt
                .query_map([id.to_string()], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, i64>(4)?,
                    ))
                })
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for r in rows {
                let (eid, name, normalized, entity_type, at) = r.map_err(sql_err)?;
                out.push(Entity {
                    id: EntityId::parse(&eid)?,
                    name,
                    normalized,
                    entity_type,
                    created_at: from_ms(at),
                });
            }
            Ok(out)
        })
    }
}
