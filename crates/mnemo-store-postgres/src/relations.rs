//! Relations on PostgreSQL: edges between entities (`relations`) and the statements supporting
//! them (`relation_sources`), keyed by owner like every table. Writes run in the add's
//! transaction through core's [`write_relations`]; reads narrow by scope and valid time in SQL,
//! then keep the edges core's [`EdgeView`] sees.
//!
//! This file holds the tables (`MIGRATION`) and an edge's columns and row decoding; the reads
//! (`impl Relations`) are in [`read`], the add's writes (`impl RelationWriter`) and erase's
//! removals in [`write`], export and import in [`transfer`]: the same files in both stores;
//! `each` reads the relations of many names at once.

mod each;
mod read;
mod transfer;
mod write;

pub(crate) use transfer::{export_edges, import_edge};
pub(crate) use write::{drop_scope, drop_support};

use crate::codec::{col, from_ms};
use mnemo_core::relation::ObjectKind;
use mnemo_core::*;
use postgres::Row;
use uuid::Uuid;

const EDGE_COLS: &str = "r.id, r.user_id, r.agent_id, r.run_id, r.subject_id, s.name AS s_name, \
     s.entity_type AS s_type, r.predicate, r.object_id, COALESCE(o.name, r.object_value, '') AS o_name, \
     COALESCE(o.entity_type, '') AS o_type, r.object_kind, r.fact, r.valid_from, r.valid_until, \
     r.created_at, r.expired_at, r.closed_by";
const EDGE_FROM: &str = "relations r \
     JOIN entities s ON s.scope_key = r.scope_key AND s.id = r.subject_id \
     LEFT JOIN entities o ON o.scope_key = r.scope_key AND o.id = r.object_id";

fn kind_str(k: ObjectKind) -> &'static str {
    match k {
        ObjectKind::Entity => "entity",
        ObjectKind::Literal => "literal",
    }
}

fn kind_of(raw: &str) -> ObjectKind {
    match raw {
        "entity" => ObjectKind::Entity,
        _ => ObjectKind::Literal,
    }
}

fn edge_from_row(r: &Row) -> Result<Relation> {
    Ok(Relation {
        id: RelationId(col(r, "id")?),
        user_id: col(r, "user_id")?,
        agent_id: col(r, "agent_id")?,
        run_id: col(r, "run_id")?,
        subject: RelationNode {
            id: Some(EntityId(col(r, "subject_id")?)),
            name: col(r, "s_name")?,
            entity_type: col(r, "s_type")?,
        },
        predicate: col(r, "predicate")?,
        object: RelationNode {
            id: col::<Option<Uuid>>(r, "object_id")?.map(EntityId),
            name: col(r, "o_name")?,
            entity_type: col(r, "o_type")?,
        },
        object_kind: kind_of(&col::<String>(r, "object_kind")?),
        fact: col(r, "fact")?,
        valid_from: from_ms(col(r, "valid_from")?),
        valid_until: col::<Option<i64>>(r, "valid_until")?.map(from_ms),
        created_at: from_ms(col(r, "created_at")?),
        expired_at: col::<Option<i64>>(r, "expired_at")?.map(from_ms),
        closed_by: col::<Option<Uuid>>(r, "closed_by")?.map(RelationId),
        sources: Vec::new(),
    })
}

fn source_from_row(r: &Row) -> Result<RelationSource> {
    Ok(RelationSource {
        memory_id: MemoryId(col(r, "memory_id")?),
        message_id: col::<Option<Uuid>>(r, "message_id")?.map(MessageId),
        actor: col(r, "actor")?,
        added_at: from_ms(col(r, "added_at")?),
    })
}

/// The relations tables (appended to `schema::MIGRATIONS`), keyed by owner like every table;
/// re-runnable, as the migrations after v4 are (upgrade tests replay them over a current schema).
pub(crate) const MIGRATION: &str = r#"
    CREATE TABLE IF NOT EXISTS relations (
        scope_key TEXT NOT NULL,
        id UUID NOT NULL,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        subject_id UUID NOT NULL,
        predicate TEXT NOT NULL,
        object_id UUID,
        object_value TEXT,
        object_kind TEXT NOT NULL,
        fact TEXT NOT NULL,
        valid_from BIGINT NOT NULL,
        valid_until BIGINT,
        created_at BIGINT NOT NULL,
        expired_at BIGINT,
        closed_by UUID,
        PRIMARY KEY (scope_key, id)
    );
    CREATE INDEX IF NOT EXISTS relations_by_id ON relations (id);
    CREATE INDEX IF NOT EXISTS relations_by_subject ON relations (subject_id, predicate);
    CREATE INDEX IF NOT EXISTS relations_by_object ON relations (object_id) WHERE object_id IS NOT NULL;
    CREATE TABLE IF NOT EXISTS relation_sources (
        scope_key TEXT NOT NULL,
        relation_id UUID NOT NULL,
        memory_id UUID NOT NULL,
        message_id UUID,
        actor TEXT,
        added_at BIGINT NOT NULL,
        PRIMARY KEY (scope_key, relation_id, memory_id)
    );
    CREATE INDEX IF NOT EXISTS relation_sources_by_relation ON relation_sources (relation_id);
    CREATE INDEX IF NOT EXISTS relation_sources_by_memory ON relation_sources (scope_key, memory_id);
"#;
