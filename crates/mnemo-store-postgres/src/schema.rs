//! The PostgreSQL schema and its forward migrations, tracked in `mnemo_meta.schema_version`.
//!
//! Every table carries `scope_key` (the exact owner: user, agent and run) and every primary key
//! and unique constraint starts with it, so the schema can be distributed by that column (Citus:
//! `SELECT create_distributed_table('memories', 'scope_key')`, and the same for every table) and
//! every request-path query, which always names one owner or the covering scope's parts, stays
//! on one shard for exact-scope reads. Vectors are pgvector `vector` columns; their dimension
//! is fixed when the store is bound to an embedding model (the HNSW index needs it).
//!
//! Migrations run in one transaction under an advisory lock, so two servers starting together
//! never migrate twice and a failed migration leaves the previous version intact.

use mnemo_core::{Error, Result};
use postgres::Transaction;

/// The advisory lock key all mnemo servers take while migrating ("mnemo" in ASCII).
const MIGRATION_LOCK: i64 = 0x006d_6e65_6d6f;

/// Migration `i` moves the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // v1: the whole data model of the embedded store, keyed by owner.
    r#"
    CREATE TABLE memories (
        scope_key TEXT NOT NULL,
        id UUID NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        kind TEXT NOT NULL,
        state TEXT NOT NULL,
        text TEXT NOT NULL,
        index_text TEXT,
        metadata JSONB NOT NULL,
        hash TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        expires_at BIGINT,
        valid_from BIGINT,
        valid_until BIGINT,
        actor TEXT,
        role TEXT,
        access_count BIGINT NOT NULL DEFAULT 0,
        last_accessed_at BIGINT,
        note JSONB,
        embedding vector,
        -- A deleted memory leaves both indexes: its embedding is NULL and so is this.
        lexical tsvector GENERATED ALWAYS AS (CASE WHEN state = 'deleted' THEN NULL
            ELSE to_tsvector('english', COALESCE(index_text, text)) END) STORED,
        PRIMARY KEY (scope_key, id)
    );
    CREATE INDEX memories_by_user ON memories (user_id, seq);
    CREATE INDEX memories_by_agent ON memories (agent_id, seq);
    CREATE INDEX memories_by_run ON memories (run_id, seq);
    -- Candidate keys are `seq`: exact scores and pooled entity keys look memories up by it.
    CREATE UNIQUE INDEX memories_by_seq ON memories (seq);
    CREATE INDEX memories_by_hash ON memories (scope_key, hash);
    -- Memories addressed by id alone (a link's ends, an admin's lookup of the owner).
    CREATE INDEX memories_by_id ON memories (id);
    CREATE INDEX memories_lexical ON memories USING GIN (lexical);

    CREATE TABLE messages (
        scope_key TEXT NOT NULL,
        id UUID NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        session_id TEXT,
        role TEXT NOT NULL,
        name TEXT,
        content TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (scope_key, id)
    );
    CREATE INDEX messages_by_session ON messages (scope_key, session_id, seq);
    -- The message log of a scope that names some owner parts (newest first, every add).
    CREATE INDEX messages_by_user ON messages (user_id, seq);
    CREATE INDEX messages_by_agent ON messages (agent_id, seq);
    CREATE INDEX messages_by_run ON messages (run_id, seq);
    -- Provenance reads messages by id alone (a scope may name only some owner parts).
    CREATE INDEX messages_by_id ON messages (id);

    CREATE TABLE memory_sources (
        scope_key TEXT NOT NULL,
        memory_id UUID NOT NULL,
        message_id UUID NOT NULL,
        PRIMARY KEY (scope_key, memory_id, message_id)
    );

    CREATE TABLE history (
        scope_key TEXT NOT NULL,
        id BIGINT GENERATED ALWAYS AS IDENTITY,
        memory_id UUID NOT NULL,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        event TEXT NOT NULL,
        old_text TEXT, new_text TEXT,
        old_metadata JSONB, new_metadata JSONB,
        old_note JSONB, new_note JSONB,
        actor TEXT, role TEXT, reason TEXT, request_id TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (scope_key, id)
    );
    CREATE INDEX history_by_memory ON history (scope_key, memory_id, id);
    -- The history of a hard-deleted memory, whose owner key is no longer known.
    CREATE INDEX history_by_memory_id ON history (memory_id);

    CREATE TABLE links (
        scope_key TEXT NOT NULL,
        from_id UUID NOT NULL,
        to_id UUID NOT NULL,
        kind TEXT NOT NULL,
        strength REAL NOT NULL,
        author TEXT NOT NULL,
        reason TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (scope_key, from_id, to_id, kind)
    );
    CREATE INDEX links_by_target ON links (scope_key, to_id);

    CREATE TABLE entities (
        scope_key TEXT NOT NULL,
        id UUID NOT NULL,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        name TEXT NOT NULL,
        -- Byte order, as the embedded store: a near-match lookup scans one first character's
        -- range of the name indexes.
        normalized TEXT COLLATE "C" NOT NULL,
        entity_type TEXT NOT NULL,
        mentions BIGINT NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (scope_key, id)
    );
    CREATE INDEX entities_by_name ON entities (scope_key, normalized);
    CREATE INDEX entities_by_user_name ON entities (user_id, normalized);

    CREATE TABLE entity_memories (
        scope_key TEXT NOT NULL,
        entity_id UUID NOT NULL,
        memory_id UUID NOT NULL,
        PRIMARY KEY (scope_key, entity_id, memory_id)
    );
    CREATE INDEX entity_memories_by_memory ON entity_memories (scope_key, memory_id);

    CREATE TABLE idempotency (
        scope_key TEXT NOT NULL,
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        outcome JSONB NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (scope_key, key)
    );

    CREATE TABLE pages (
        scope_key TEXT NOT NULL,
        id UUID NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        session_id TEXT,
        message_ids JSONB NOT NULL,
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        at BIGINT NOT NULL,
        embedding vector NOT NULL,
        keywords JSONB NOT NULL,
        tier TEXT NOT NULL CHECK (tier IN ('short', 'mid', 'evicted')),
        segment_id UUID,
        continues UUID,
        analysed BOOLEAN NOT NULL DEFAULT FALSE,
        PRIMARY KEY (scope_key, id)
    );
    CREATE INDEX pages_by_window ON pages (scope_key, session_id, tier, seq);
    CREATE INDEX pages_by_segment ON pages (scope_key, segment_id, seq);

    CREATE TABLE segments (
        scope_key TEXT NOT NULL,
        id UUID NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        summary TEXT NOT NULL,
        summary_author TEXT NOT NULL,
        keywords JSONB NOT NULL,
        embedding vector NOT NULL,
        page_count INTEGER NOT NULL,
        length_tokens BIGINT NOT NULL,
        visits BIGINT NOT NULL,
        last_visit_at BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        evicted_at BIGINT,
        version BIGINT NOT NULL,
        PRIMARY KEY (scope_key, id)
    );

    -- API keys are global (a key names the scope it is bound to), hashed as the server does.
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        name TEXT,
        admin BOOLEAN NOT NULL,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
    );
    "#,
];

pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The schema version recorded in the database (0 when mnemo never ran there).
pub(crate) fn current_version(tx: &mut Transaction<'_>) -> Result<u32> {
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS mnemo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    )
    .map_err(crate::pg_err)?;
    let row = tx
        .query_opt(
            "SELECT value FROM mnemo_meta WHERE key = 'schema_version'",
            &[],
        )
        .map_err(crate::pg_err)?;
    match row {
        None => Ok(0),
        Some(r) => {
            // A `mnemo_meta` that predates mnemo may hold another type: an error, not a panic.
            let raw: String = crate::codec::col(&r, "value")?;
            raw.parse().map_err(|_| Error::Storage {
                reason: format!("mnemo_meta.schema_version holds {raw:?}, not a number"),
            })
        }
    }
}

/// Brings the database's schema to [`SCHEMA_VERSION`] in one transaction (under the migration
/// lock); a database from a newer mnemo is refused and left untouched.
pub(crate) fn migrate(client: &mut postgres::Client) -> Result<u32> {
    let mut tx = client.transaction().map_err(crate::pg_err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(crate::pg_err)?;
    let current = current_version(&mut tx)?;
    if current > SCHEMA_VERSION {
        return Err(Error::Conflict {
            reason: format!(
                "the database has mnemo schema version {current}, newer than this mnemo ({SCHEMA_VERSION}); upgrade mnemo"
            ),
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.batch_execute(sql).map_err(crate::pg_err)?;
        tracing::info!(version = i + 1, "migrated PostgreSQL schema");
    }
    tx.execute(
        "INSERT INTO mnemo_meta (key, value) VALUES ('schema_version', $1) \
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        &[&SCHEMA_VERSION.to_string()],
    )
    .map_err(crate::pg_err)?;
    tx.commit().map_err(crate::pg_err)?;
    Ok(SCHEMA_VERSION)
}
