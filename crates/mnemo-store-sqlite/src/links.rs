//! Links between memories as a caller sees them: add and remove, the linked memories of search
//! expansion, and the usage counters that reads bump. Batch links (an add's) are checked here
//! too, inside the add's transaction.

use crate::codec::*;
use crate::graph::{link_from_row, link_row, write_link};
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::{Connection, OptionalExtension, Transaction};
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
