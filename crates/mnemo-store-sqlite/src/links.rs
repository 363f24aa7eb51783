//! Links in and out of the store: the owner lookup core's link checks (`check_link`,
//! `check_imported_link`) ask for, and the links of an export and an import.

use crate::codec::*;
use crate::graph::{link_from_row, link_row, write_link};
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::{Connection, OptionalExtension, Transaction};

/// The exact scope owning a memory (any state) and whether it is an erased tombstone.
pub(crate) fn owner_in(conn: &Connection, id: MemoryId) -> Result<Option<(Scope, bool)>> {
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
        check_imported_link(l, |id| Ok(owner_in(tx, id)?.map(|(owner, _)| owner)))?;
        let n = write_link(tx, l, "IGNORE")?;
        Ok(n as u64)
    }
}
