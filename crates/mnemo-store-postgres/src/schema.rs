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

/// The statement that builds the HNSW index of memory vectors (a bind or rebind runs it once
/// the dimension is known; migration v3 runs it again on a store built with the old settings).
///
/// `m` is pgvector's default (16 neighbours per node); `ef_construction` is twice its default
/// of 64. At 64, graphs of the same 100,000 vectors gave ANN recall@10 between 0.926 and 0.966
/// against exact search, depending on the levels pgvector draws at random; at 128, 0.989 to
/// 0.995 on three builds, for a build about 1.4 times as long and the same search cost
/// (BENCHMARKS.md, "HNSW build settings").
macro_rules! hnsw_index_sql {
    () => {
        "CREATE INDEX memories_embedding_hnsw ON memories \
         USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128)"
    };
}
pub(crate) const HNSW_INDEX: &str = hnsw_index_sql!();

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
    // v2: lexical statistics and postings, kept by triggers (see `lexical.rs`).
    LEXICAL_V2,
    // v3: the HNSW index of a bound store is built again with `HNSW_INDEX`'s settings (a
    // store with no model bound yet has none; its bind builds it). Memory vectors only: the
    // tiers' tables have no vector index.
    concat!(
        "DO $mig$ BEGIN \
         IF EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() \
                    AND indexname = 'memories_embedding_hnsw') THEN \
         DROP INDEX memories_embedding_hnsw; ",
        hnsw_index_sql!(),
        "; END IF; END $mig$;"
    ),
    // v4: readers of the message log find the raw memory of a message (its visibility).
    "CREATE INDEX IF NOT EXISTS memory_sources_by_message ON memory_sources (message_id);",
    // v5: the job queue of async adds (see `jobs.rs`); global like `api_keys`, since workers
    // claim across owners. `seq` orders claims. Idempotent, as tests replay migrations.
    r#"
    CREATE TABLE IF NOT EXISTS jobs (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
        attempts INTEGER NOT NULL,
        max_attempts INTEGER NOT NULL,
        run_after BIGINT NOT NULL,
        locked_until BIGINT,
        locked_by TEXT,
        last_error TEXT,
        error_kind TEXT,
        result TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS jobs_open ON jobs (status, run_after, seq)
        WHERE status IN ('pending', 'running');
    CREATE INDEX IF NOT EXISTS jobs_by_user ON jobs (user_id, seq);
    "#,
    // v6: event time (see `timeline.rs`): the interval's ends for range reads and the whole
    // event time; indexed by owner and start for the timeline and temporal search.
    r#"
    ALTER TABLE memories ADD COLUMN IF NOT EXISTS event_start BIGINT;
    ALTER TABLE memories ADD COLUMN IF NOT EXISTS event_end BIGINT;
    ALTER TABLE memories ADD COLUMN IF NOT EXISTS event_time JSONB;
    CREATE INDEX IF NOT EXISTS memories_by_event ON memories (scope_key, event_start)
        WHERE event_start IS NOT NULL;
    "#,
    // v7: relations between entities (see `relations.rs`).
    crate::relations::MIGRATION,
    // v8: core memory blocks, their attachments to agents and their history (see `blocks.rs`).
    crate::blocks::BLOCKS_DDL,
    // v9: the erase gates across servers (see `turn.rs`): one row per scope part, only ever
    // locked. Distributed by `part` on Citus (each lock a one-row statement).
    "CREATE TABLE IF NOT EXISTS scope_gates (part TEXT PRIMARY KEY);",
    // v10: the layout Citus needs (docs/postgres.md): the unique index on `seq` carries the
    // distribution column (a plain one keeps lookups by key fast), and the scope write locks
    // are rows of a table distributed with `memories` (`write::lock_scopes`).
    r#"
    DROP INDEX IF EXISTS memories_by_seq;
    CREATE UNIQUE INDEX IF NOT EXISTS memories_by_scope_seq ON memories (scope_key, seq);
    CREATE INDEX IF NOT EXISTS memories_seq ON memories (seq);
    CREATE TABLE IF NOT EXISTS scope_locks (scope_key TEXT PRIMARY KEY);
    "#,
    // v11: the block tables laid out for Citus like the others: `scope_key` leads their keys
    // (see `blocks/schema.rs`).
    crate::blocks::BLOCKS_LAYOUT,
    // v12: a segment's event time (the span of what its pages state; `tier::page_event_time`),
    // kept as memories keep theirs: the ends for range reads and the whole as JSONB.
    r#"
    ALTER TABLE segments ADD COLUMN IF NOT EXISTS event_start BIGINT;
    ALTER TABLE segments ADD COLUMN IF NOT EXISTS event_end BIGINT;
    ALTER TABLE segments ADD COLUMN IF NOT EXISTS event_time JSONB;
    CREATE INDEX IF NOT EXISTS segments_by_event ON segments (scope_key, event_start)
        WHERE event_start IS NOT NULL;
    "#,
    // v13: gate rows hold the SHA-256 of their name (`turn.rs`); rows written before named
    // their scope in clear and are dropped (each is made again, hashed, on its next use).
    "DELETE FROM scope_gates WHERE part !~ '^[0-9a-f]{64}$';",
];

/// v2: per-owner BM25 statistics (documents, total length, document frequency per lexeme) and
/// impact-ordered postings, maintained by row triggers on `memories` from its `lexical`
/// column, so every path that writes memories (adds, updates, deletes, supersession, erase,
/// import, migrate, reembed) keeps them exact inside its own transaction. A memory counts when
/// its `lexical` is not NULL (every state but deleted), as it is in the GIN index.
///
/// Locking: each row's maintenance updates its owner's `lexical_scopes` row first, so writers
/// of one owner queue there and never meet on `lexical_terms` in opposite orders. Rows whose
/// count falls to zero are deleted (an erased owner's words do not linger as lexemes).
const LEXICAL_V2: &str = r#"
    -- Searches read the postings below; the GIN index on `lexical` only cost writes.
    DROP INDEX memories_lexical;

    CREATE TABLE lexical_scopes (
        scope_key TEXT PRIMARY KEY,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        docs BIGINT NOT NULL,
        total_len BIGINT NOT NULL
    );
    CREATE INDEX lexical_scopes_by_user ON lexical_scopes (user_id);
    CREATE INDEX lexical_scopes_by_agent ON lexical_scopes (agent_id);
    CREATE INDEX lexical_scopes_by_run ON lexical_scopes (run_id);

    CREATE TABLE lexical_terms (
        scope_key TEXT NOT NULL,
        lexeme TEXT NOT NULL,
        df BIGINT NOT NULL,
        PRIMARY KEY (scope_key, lexeme)
    );

    -- `impact` is BM25's term-frequency part, `tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))`,
    -- with the owner's avgdl at write time: it only orders the postings of one lexeme, the
    -- score itself is computed again from `tf` and `dl` with the statistics of the query.
    CREATE TABLE lexical_postings (
        scope_key TEXT NOT NULL,
        seq BIGINT NOT NULL,
        lexeme TEXT NOT NULL,
        tf INTEGER NOT NULL,
        dl INTEGER NOT NULL,
        impact REAL NOT NULL,
        PRIMARY KEY (scope_key, seq, lexeme)
    );
    CREATE INDEX lexical_postings_by_impact
        ON lexical_postings (scope_key, lexeme, impact DESC, seq) INCLUDE (tf, dl);

    CREATE FUNCTION mnemo_lexical_apply(sk TEXT, u TEXT, a TEXT, r TEXT, s BIGINT,
                                        lx tsvector, sign INTEGER)
    RETURNS void LANGUAGE plpgsql AS $fn$
    DECLARE
        len BIGINT;
        n BIGINT;
        total BIGINT;
        avgdl FLOAT8;
    BEGIN
        IF lx IS NULL THEN
            RETURN;
        END IF;
        SELECT COALESCE(sum(GREATEST(cardinality(x.positions), 1)), 0) INTO len FROM unnest(lx) x;
        IF sign > 0 THEN
            INSERT INTO lexical_scopes AS t (scope_key, user_id, agent_id, run_id, docs, total_len)
            VALUES (sk, u, a, r, 1, len)
            ON CONFLICT (scope_key) DO UPDATE
                SET docs = t.docs + 1, total_len = t.total_len + EXCLUDED.total_len
            RETURNING t.docs, t.total_len INTO n, total;
            avgdl := GREATEST(total::float8 / GREATEST(n, 1), 1);
            INSERT INTO lexical_terms AS t (scope_key, lexeme, df)
            SELECT sk, x.lexeme, 1 FROM unnest(lx) x ORDER BY x.lexeme
            ON CONFLICT (scope_key, lexeme) DO UPDATE SET df = t.df + 1;
            INSERT INTO lexical_postings (scope_key, seq, lexeme, tf, dl, impact)
            SELECT sk, s, x.lexeme, f.tf, len,
                   (f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * len / avgdl)))::real
            FROM unnest(lx) x, LATERAL (SELECT GREATEST(cardinality(x.positions), 1) AS tf) f;
        ELSE
            UPDATE lexical_scopes SET docs = docs - 1, total_len = total_len - len
            WHERE scope_key = sk;
            DELETE FROM lexical_scopes WHERE scope_key = sk AND docs <= 0;
            UPDATE lexical_terms SET df = df - 1
            WHERE scope_key = sk AND lexeme = ANY(tsvector_to_array(lx));
            DELETE FROM lexical_terms
            WHERE scope_key = sk AND lexeme = ANY(tsvector_to_array(lx)) AND df <= 0;
            DELETE FROM lexical_postings WHERE scope_key = sk AND seq = s;
        END IF;
    END
    $fn$;

    CREATE FUNCTION mnemo_lexical_sync() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            PERFORM mnemo_lexical_apply(OLD.scope_key, OLD.user_id, OLD.agent_id, OLD.run_id,
                                        OLD.seq, OLD.lexical, -1);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            PERFORM mnemo_lexical_apply(NEW.scope_key, NEW.user_id, NEW.agent_id, NEW.run_id,
                                        NEW.seq, NEW.lexical, 1);
        END IF;
        RETURN NULL;
    END
    $fn$;

    CREATE TRIGGER memories_lexical_insert AFTER INSERT ON memories
        FOR EACH ROW EXECUTE FUNCTION mnemo_lexical_sync();
    CREATE TRIGGER memories_lexical_update AFTER UPDATE ON memories
        FOR EACH ROW WHEN (OLD.lexical IS DISTINCT FROM NEW.lexical
                           OR OLD.scope_key IS DISTINCT FROM NEW.scope_key)
        EXECUTE FUNCTION mnemo_lexical_sync();
    CREATE TRIGGER memories_lexical_delete AFTER DELETE ON memories
        FOR EACH ROW EXECUTE FUNCTION mnemo_lexical_sync();

    -- A database from v1 gets its statistics from the rows it holds.
    SELECT mnemo_lexical_apply(scope_key, user_id, agent_id, run_id, seq, lexical, 1)
    FROM memories WHERE lexical IS NOT NULL ORDER BY seq;
"#;

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
    // Migrations build indexes over whole tables and wait for another server's migration: the
    // request-sized timeouts of the session (see `pool`) do not apply to them.
    tx.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0")
        .map_err(crate::pg_err)?;
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
