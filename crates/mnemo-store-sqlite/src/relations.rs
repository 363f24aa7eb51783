//! Relations on SQLite: edges between entities (`relations`) and the statements supporting them
//! (`relation_sources`). Writes run in the add's transaction through core's
//! [`write_relations`]; reads narrow by scope and valid time in SQL, then keep the edges core's
//! [`EdgeView`] sees (a supporting memory the memories' visibility rule admits).
//!
//! This file holds the tables (`MIGRATION`) and an edge's columns and row decoding; the reads
//! (`impl Relations`) are in [`read`], the add's writes (`impl RelationWriter`) and erase's
//! removals in [`write`], export and import in [`transfer`]: the same files in both stores.

mod read;
mod transfer;
mod write;

pub(crate) use transfer::{export_edges, import_edge};
pub(crate) use write::{drop_scope, drop_support};

use crate::codec::*;
use mnemo_core::relation::ObjectKind;
use mnemo_core::*;

/// The columns an edge is read with; `r` is `relations`, `s` and `o` its ends' entities.
const EDGE_COLS: &str =
    "r.id, r.user_id, r.agent_id, r.run_id, r.subject_id, s.name, s.entity_type, \
     r.predicate, r.object_id, COALESCE(o.name, r.object_value, ''), COALESCE(o.entity_type, ''), \
     r.object_kind, r.fact, r.valid_from, r.valid_until, r.created_at, r.expired_at, r.closed_by";
const EDGE_FROM: &str = "relations r JOIN entities s ON s.id = r.subject_id \
     LEFT JOIN entities o ON o.id = r.object_id";

fn kind_str(k: ObjectKind) -> &'static str {
    match k {
        ObjectKind::Entity => "entity",
        ObjectKind::Literal => "literal",
    }
}

/// A UUID column as an id type (a malformed one is a conversion failure of the row).
fn uuid_col<T>(raw: &str, wrap: fn(uuid::Uuid) -> T) -> rusqlite::Result<T> {
    uuid::Uuid::parse_str(raw).map(wrap).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn edge_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Relation> {
    let object_id: Option<String> = r.get(8)?;
    let closed_by: Option<String> = r.get(17)?;
    let kind: String = r.get(11)?;
    let (id, subject): (String, String) = (r.get(0)?, r.get(4)?);
    let (subject_name, subject_type, object_name, object_type): (String, String, String, String) =
        (r.get(5)?, r.get(6)?, r.get(9)?, r.get(10)?);
    let (user_id, agent_id, run_id, predicate, fact) =
        (r.get(1)?, r.get(2)?, r.get(3)?, r.get(7)?, r.get(12)?);
    let (from, until, created, expired): (i64, Option<i64>, i64, Option<i64>) =
        (r.get(13)?, r.get(14)?, r.get(15)?, r.get(16)?);
    Ok(Relation {
        id: uuid_col(&id, RelationId)?,
        user_id,
        agent_id,
        run_id,
        subject: RelationNode {
            id: Some(uuid_col(&subject, EntityId)?),
            name: subject_name,
            entity_type: subject_type,
        },
        predicate,
        object: RelationNode {
            id: object_id
                .as_deref()
                .map(|o| uuid_col(o, EntityId))
                .transpose()?,
            name: object_name,
            entity_type: object_type,
        },
        object_kind: match kind.as_str() {
            "entity" => ObjectKind::Entity,
            _ => ObjectKind::Literal,
        },
        fact,
        valid_from: from_ms(from),
        valid_until: until.map(from_ms),
        created_at: from_ms(created),
        expired_at: expired.map(from_ms),
        closed_by: closed_by
            .as_deref()
            .map(|c| uuid_col(c, RelationId))
            .transpose()?,
        sources: Vec::new(),
    })
}

/// The relations tables (appended to `schema::MIGRATIONS`). An edge belongs to the exact scope
/// of its entities; `object_id` is NULL and `object_value` holds the value for a literal.
pub(crate) const MIGRATION: &str = r#"
    CREATE TABLE relations (
        id TEXT PRIMARY KEY,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        subject_id TEXT NOT NULL,
        predicate TEXT NOT NULL,
        object_id TEXT,
        object_value TEXT,
        object_kind TEXT NOT NULL,
        fact TEXT NOT NULL,
        valid_from INTEGER NOT NULL,
        valid_until INTEGER,
        created_at INTEGER NOT NULL,
        expired_at INTEGER,
        closed_by TEXT
    ) STRICT;
    CREATE INDEX relations_by_subject ON relations (subject_id, predicate);
    CREATE INDEX relations_by_object ON relations (object_id) WHERE object_id IS NOT NULL;
    CREATE TABLE relation_sources (
        relation_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        message_id TEXT,
        actor TEXT,
        added_at INTEGER NOT NULL,
        PRIMARY KEY (relation_id, memory_id)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX relation_sources_by_memory ON relation_sources (memory_id);
"#;
