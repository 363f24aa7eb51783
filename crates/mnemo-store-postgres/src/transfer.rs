//! Export and import on PostgreSQL: every record, losslessly, so that an export imported into
//! an empty store exports again byte for byte (the contract case
//! `export_is_lossless_through_import`).
//!
//! The export reads one snapshot (a read-only REPEATABLE READ transaction) and streams each
//! table through a portal in fixed-size batches, so a large store is never held in memory.
//! Records come in the order an import needs them: messages, memories, links, index texts,
//! history, entities, segments, pages, idempotency results. Orders that compare text use the
//! `C` collation, so two databases with different locales export the same bytes.
//!
//! The import (`transfer/import.rs`, with the plain row writes in `transfer/tables.rs`) writes
//! everything in one transaction.

pub(crate) mod import;
pub(crate) mod tables;

use crate::codec::{
    col, entity_from_row, from_ms, history_from_row, keyed_memory_from_row, link_from_row,
    message_from_row, scope_from_row, ENTITY_COLUMNS, HISTORY_COLUMNS, LINK_COLUMNS,
    MEMORY_COLUMNS, MESSAGE_COLUMNS,
};
use crate::read::with_sources;
use crate::tiers::{page_from_row, segment_from_row, PAGE_COLS, SEGMENT_COLS};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::{IsolationLevel, Row, Transaction};

type Sink<'a> = &'a mut dyn FnMut(ExportRecord) -> Result<()>;

/// Rows fetched per round trip.
const BATCH: i32 = 500;

/// Runs `sql` (no parameters) through a portal, handing `each` the rows batch by batch; `each`
/// may query the same transaction meanwhile.
fn in_batches(
    tx: &mut Transaction<'_>,
    sql: &str,
    mut each: impl FnMut(&mut Transaction<'_>, Vec<Row>) -> Result<()>,
) -> Result<()> {
    let portal = tx.bind(sql, &[]).map_err(pg_err)?;
    loop {
        let rows = tx.query_portal(&portal, BATCH).map_err(pg_err)?;
        if rows.is_empty() {
            return Ok(());
        }
        each(tx, rows)?;
    }
}

/// Runs `sql` through a portal and sends the record `record` makes of each row.
fn each_row(
    tx: &mut Transaction<'_>,
    sql: &str,
    sink: Sink<'_>,
    record: impl Fn(&Row) -> Result<ExportRecord>,
) -> Result<()> {
    in_batches(tx, sql, |_, rows| {
        rows.iter().try_for_each(|r| sink(record(r)?))
    })
}

fn export_records(tx: &mut Transaction<'_>, sink: Sink<'_>) -> Result<()> {
    each_row(
        tx,
        &format!("SELECT {MESSAGE_COLUMNS} FROM messages g ORDER BY g.seq"),
        sink,
        |r| Ok(ExportRecord::Message(Box::new(message_from_row(r)?))),
    )?;
    in_batches(
        tx,
        &format!("SELECT {MEMORY_COLUMNS} FROM memories m ORDER BY m.seq"),
        |tx, rows| {
            let memories = rows
                .iter()
                .map(keyed_memory_from_row)
                .collect::<Result<Vec<_>>>()?;
            for (_, m) in with_sources(tx, memories)? {
                sink(ExportRecord::Memory(Box::new(m)))?;
            }
            Ok(())
        },
    )?;
    each_row(
        tx,
        &format!(
            "SELECT {LINK_COLUMNS} FROM links l ORDER BY l.from_id, l.to_id, l.kind COLLATE \"C\""
        ),
        sink,
        |r| Ok(ExportRecord::Link(Box::new(link_from_row(r)?))),
    )?;
    each_row(
        tx,
        "SELECT id, index_text FROM memories WHERE index_text IS NOT NULL ORDER BY seq",
        sink,
        |r| {
            Ok(ExportRecord::IndexText {
                memory_id: MemoryId(col(r, "id")?),
                index_text: col(r, "index_text")?,
            })
        },
    )?;
    each_row(
        tx,
        &format!("SELECT {HISTORY_COLUMNS}, h.user_id, h.agent_id, h.run_id FROM history h ORDER BY h.id"),
        sink,
        |r| {
            Ok(ExportRecord::History(Box::new(HistoryRecord {
                event: history_from_row(r)?,
                user_id: col(r, "user_id")?,
                agent_id: col(r, "agent_id")?,
                run_id: col(r, "run_id")?,
            })))
        },
    )?;
    each_row(
        tx,
        &format!(
            "SELECT {ENTITY_COLUMNS}, e.user_id, e.agent_id, e.run_id, \
             ARRAY(SELECT em.memory_id FROM entity_memories em \
                   WHERE em.scope_key = e.scope_key AND em.entity_id = e.id \
                   ORDER BY em.memory_id) AS memories \
             FROM entities e ORDER BY e.id"
        ),
        sink,
        |r| {
            let owner = scope_from_row(r)?;
            let memories: Vec<uuid::Uuid> = col(r, "memories")?;
            Ok(ExportRecord::Entity(Box::new(EntityRecord {
                user_id: owner.user_id().map(|v| v.as_str().to_string()),
                agent_id: owner.agent_id().map(|v| v.as_str().to_string()),
                run_id: owner.run_id().map(|v| v.as_str().to_string()),
                entity: entity_from_row(r)?,
                memories: memories.into_iter().map(MemoryId).collect(),
            })))
        },
    )?;
    for e in crate::relations::export_edges(tx)? {
        sink(ExportRecord::Relation(Box::new(e)))?;
    }
    each_row(
        tx,
        &format!("SELECT {SEGMENT_COLS} FROM segments s ORDER BY s.seq"),
        sink,
        |r| Ok(ExportRecord::Segment(Box::new(segment_from_row(r)?))),
    )?;
    each_row(
        tx,
        &format!("SELECT {PAGE_COLS} FROM pages p ORDER BY p.seq"),
        sink,
        |r| Ok(ExportRecord::Page(Box::new(page_from_row(r)?))),
    )?;
    each_row(
        tx,
        "SELECT scope_key, key, request_hash, outcome, created_at FROM idempotency \
         ORDER BY scope_key COLLATE \"C\", key COLLATE \"C\"",
        sink,
        |r| {
            Ok(ExportRecord::Idempotency(Box::new(IdempotencyRecord {
                scope_key: col(r, "scope_key")?,
                key: col(r, "key")?,
                request_hash: col(r, "request_hash")?,
                outcome: col(r, "outcome")?,
                created_at: from_ms(col(r, "created_at")?),
            })))
        },
    )?;
    crate::blocks::export(tx, sink)
}

impl Transfer for PgStore {
    fn export(&self, sink: Sink<'_>) -> Result<()> {
        self.with(|client| {
            let mut tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(pg_err)?;
            export_records(&mut tx, sink)?;
            tx.commit().map_err(pg_err)
        })
    }

    fn import(&self, records: Vec<(ExportRecord, Option<Vec<f32>>)>) -> Result<u64> {
        self.tx(|tx| import::import_records(tx, &records))
    }
}
