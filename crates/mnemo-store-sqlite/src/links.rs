//! Links between memories as a caller sees them: add and remove, the linked memories of search
//! expansion, and the usage counters that reads bump. Batch links (an add's) are checked here
//! too, inside the add's transaction.

use crate::codec::*;
use crate::graph::{insert_link, link_from_row, link_row, owned, write_link};
use crate::predicate::{self, marks};
use crate::read::{candidate_pred_with, with_sources};
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection, OptionalExtension, Transaction};
use std::collections::HashMap;

/// The exact scope owning a memory (any state), if it exists.
/// The exact scope owning a memory (any state) and whether it is an erased tombstone.
fn owner_in(conn: &Connection, id: MemoryId) -> Result<Option<(Scope, bool)>> {
    type Row = (Option<String>, Option<String>, Option<String>, bool);
    let row: Option<Row> = conn
        .query_row_cached(
            "SELECT user_id, agent_id, run_id, state = 'deleted' AND hash = '' FROM memories WHERE id = ?1",
            [id.to_string()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(sql_err)?;
    row.map(|(u, a, r, erased)| {
        Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref()).map(|s| (s, erased))
    })
    .transpose()
}

/// The refusal of a link to or from an erased tombstone: it would store new text (the link's
/// reason) on a memory whose every text is gone.
fn erased_end(field: &str, id: MemoryId) -> Error {
    Error::invalid(
        field,
        format!("memory {id} is erased; an erased memory takes no new links"),
    )
}

/// Checks a link before it is written: [`Link::validate`], then both ends exist — in `pending`
/// (memories of the same batch, with their scope) or in the store — under `scope`, and belong
/// to one exact scope. Invalid input names the end at fault.
pub(crate) fn check_link(
    conn: &Connection,
    scope: &Scope,
    link: &Link,
    pending: &HashMap<MemoryId, Scope>,
) -> Result<()> {
    link.validate()?;
    let mut owners = Vec::with_capacity(2);
    for (field, id) in [("from", link.from), ("to", link.to)] {
        let owner = match pending.get(&id) {
            Some(s) => Some((s.clone(), false)),
            None => owner_in(conn, id)?,
        }
        .filter(|(o, _)| scope.covers(o));
        match owner {
            // Checked after the scope: an erased memory the scope cannot see looks missing.
            Some((_, true)) => return Err(erased_end(field, id)),
            Some((o, false)) => owners.push(o),
            _ => {
                return Err(Error::invalid(
                    field,
                    format!("no memory {id} in this scope"),
                ))
            }
        }
    }
    if owners[0] != owners[1] {
        return Err(Error::invalid(
            "to",
            "a link joins two memories of one scope; these belong to different scopes",
        ));
    }
    Ok(())
}

impl SqliteStore {
    pub(crate) fn add_links_in(&self, scope: &Scope, links: &[Link]) -> Result<()> {
        scope.validate()?;
        for l in links {
            l.validate()?;
        }
        self.write_tx(|tx| {
            for l in links {
                check_link(tx, scope, l, &HashMap::new())?;
                self.step("link")?;
                insert_link(tx, l)?;
            }
            Ok(())
        })
    }

    pub(crate) fn remove_link_in(
        &self,
        scope: &Scope,
        from: MemoryId,
        to: MemoryId,
        kind: LinkKind,
    ) -> Result<bool> {
        scope.validate()?;
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

    pub(crate) fn linked_of(
        &self,
        q: &CandidateQuery<'_>,
        ids: &[MemoryId],
        kinds: &[LinkKind],
    ) -> Result<Vec<LinkedMemory>> {
        q.scope.validate()?;
        if ids.is_empty() || kinds.is_empty() || q.limit == 0 {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let id_marks = marks(ids.len());
            let kind_marks = marks(kinds.len());
            let sql = format!(
                "SELECT from_id, to_id, kind, strength, author, created_at, reason FROM links \
                 WHERE (from_id IN ({id_marks}) OR to_id IN ({id_marks})) AND kind IN ({kind_marks}) \
                 ORDER BY strength DESC, created_at, from_id, to_id"
            );
            let params: Vec<Sql> = ids
                .iter()
                .chain(ids)
                .map(|i| Sql::Text(i.to_string()))
                .chain(kinds.iter().map(|k| Sql::Text(k.as_str().to_string())))
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
            let wanted: std::collections::HashSet<MemoryId> = ids.iter().copied().collect();
            // (parent, link, other end) for each direction a link is reached from.
            let mut reached: Vec<(MemoryId, Link, MemoryId)> = Vec::new();
            for l in links {
                if wanted.contains(&l.from) {
                    reached.push((l.from, l.clone(), l.to));
                }
                if wanted.contains(&l.to) {
                    reached.push((l.to, l.clone(), l.from));
                }
            }
            let mut others: Vec<MemoryId> = reached.iter().map(|r| r.2).collect();
            others.sort();
            others.dedup();
            let mut loaded: HashMap<MemoryId, (i64, Memory)> = HashMap::new();
            for chunk in others.chunks(500) {
                let mut p = candidate_pred_with(q, true)?;
                p.push(
                    &format!("m.id IN ({})", predicate::marks(chunk.len())),
                    chunk.iter().map(|i| Sql::Text(i.to_string())),
                );
                let rows = crate::read::query_memories(conn, &p.where_sql(), "", &p.params)?;
                for (key, m) in with_sources(conn, rows)? {
                    loaded.insert(m.id, (key, m));
                }
            }
            Ok(reached
                .into_iter()
                .filter_map(|(from, link, other)| {
                    loaded.get(&other).map(|(key, m)| LinkedMemory {
                        from,
                        link,
                        key: *key,
                        memory: m.clone(),
                    })
                })
                .take(q.limit)
                .collect())
        })
    }

    pub(crate) fn touch_in(&self, scope: &Scope, ids: &[MemoryId], at: Timestamp) -> Result<u64> {
        scope.validate()?;
        if ids.is_empty() {
            return Ok(0);
        }
        let at = at.timestamp_millis();
        self.write_tx(|tx| {
            let mut n = 0u64;
            for id in ids {
                let mut p = predicate::Pred::default();
                p.push("m.id = ?", [Sql::Text(id.to_string())]);
                predicate::scope_unindexed(&mut p, "m", scope);
                let sql = format!(
                    "UPDATE memories AS m SET access_count = access_count + 1, \
                     last_accessed_at = MAX(COALESCE(last_accessed_at, ?), ?) WHERE {}",
                    p.where_sql()
                );
                let params: Vec<Sql> = [Sql::Integer(at), Sql::Integer(at)]
                    .into_iter()
                    .chain(p.params)
                    .collect();
                n += tx
                    .execute_cached(&sql, params_from_iter(params.iter()))
                    .map_err(sql_err)? as u64;
            }
            Ok(n)
        })
    }

    /// Every link, after the memories of an export.
    pub(crate) fn export_links(
        conn: &Connection,
        sink: &mut dyn FnMut(ExportRecord) -> Result<()>,
    ) -> Result<()> {
        let mut stmt = conn
            .prepare(
                "SELECT from_id, to_id, kind, strength, author, created_at, reason FROM links \
                 ORDER BY from_id, to_id, kind",
            )
            .map_err(sql_err)?;
        let rows = stmt.query_map([], link_row).map_err(sql_err)?;
        for r in rows {
            sink(ExportRecord::Link(Box::new(link_from_row(
                r.map_err(sql_err)?,
            )?)))?;
        }
        Ok(())
    }

    /// Imports one link: both ends must exist in one scope; an existing link is kept.
    pub(crate) fn import_link(tx: &Transaction<'_>, l: &Link) -> Result<u64> {
        l.validate()?;
        // An export holds the links of erased memories as erase left them (reason cleared):
        // they are restored as they were, so the tombstone check of new links does not apply.
        let from = owner_in(tx, l.from)?
            .ok_or_else(|| Error::invalid("from", format!("no memory {} to link from", l.from)))?;
        let to = owner_in(tx, l.to)?
            .ok_or_else(|| Error::invalid("to", format!("no memory {} to link to", l.to)))?;
        if from.0 != to.0 {
            return Err(Error::invalid(
                "to",
                "a link joins two memories of one scope; these belong to different scopes",
            ));
        }
        let n = write_link(tx, l, "IGNORE")?;
        Ok(n as u64)
    }
}
