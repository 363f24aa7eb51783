//! The schema and its forward migrations, tracked in `PRAGMA user_version`.
//!
//! Each migration runs in its own transaction; a file opened by an older version is brought
//! forward on open, and a file from a newer version is refused rather than misread.

use mnemo_core::{Error, Result};
use rusqlite::Connection;

/// Migration `i` moves the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // v1: memories, lexical index, vectors, messages, provenance, history, links, entities,
    // idempotency keys and the change log that keeps the ANN cache in step.
    r#"
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
    INSERT INTO meta (key, value) VALUES ('vec_generation', '0');

    CREATE TABLE memories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        kind TEXT NOT NULL,
        state TEXT NOT NULL,
        text TEXT NOT NULL,
        index_text TEXT,
        metadata TEXT NOT NULL,
        hash TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        expires_at INTEGER,
        valid_from INTEGER,
        valid_until INTEGER,
        actor TEXT,
        role TEXT,
        access_count INTEGER NOT NULL DEFAULT 0,
        last_accessed_at INTEGER
    ) STRICT;
    CREATE INDEX memories_by_user ON memories (user_id, seq);
    CREATE INDEX memories_by_agent ON memories (agent_id, seq);
    CREATE INDEX memories_by_run ON memories (run_id, seq);
    CREATE INDEX memories_by_hash ON memories (hash);

    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        body, content = '', contentless_delete = 1,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );

    CREATE TABLE vectors (seq INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;
    CREATE TABLE vector_changes (
        generation INTEGER PRIMARY KEY,
        seq INTEGER NOT NULL,
        op TEXT NOT NULL
    ) STRICT;

    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        session_id TEXT,
        role TEXT NOT NULL,
        name TEXT,
        content TEXT NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX messages_by_user ON messages (user_id, seq);
    CREATE INDEX messages_by_agent ON messages (agent_id, seq);
    CREATE INDEX messages_by_run ON messages (run_id, seq);

    CREATE TABLE memory_sources (
        memory_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        PRIMARY KEY (memory_id, message_id)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE history (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id TEXT NOT NULL,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        event TEXT NOT NULL,
        old_text TEXT, new_text TEXT,
        old_metadata TEXT, new_metadata TEXT,
        actor TEXT, role TEXT, reason TEXT, request_id TEXT,
        created_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX history_by_memory ON history (memory_id, id);

    CREATE TABLE links (
        from_id TEXT NOT NULL,
        to_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        strength REAL NOT NULL,
        author TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (from_id, to_id, kind)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE entities (
        id TEXT PRIMARY KEY,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        name TEXT NOT NULL,
        normalized TEXT NOT NULL,
        entity_type TEXT NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX entities_by_name ON entities (normalized);
    CREATE TABLE entity_memories (
        entity_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        PRIMARY KEY (entity_id, memory_id)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE idempotency (
        scope_key TEXT NOT NULL,
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        outcome TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (scope_key, key)
    ) STRICT, WITHOUT ROWID;
    "#,
    // v2: reverse lookups for the graph (a memory's entities, what supersedes a memory).
    r#"
    CREATE INDEX entity_memories_by_memory ON entity_memories (memory_id);
    CREATE INDEX links_by_target ON links (to_id);
    CREATE INDEX entities_by_scope_name ON entities (user_id, agent_id, run_id, normalized);
    "#,
    // v3: how many memories each entity is linked to, kept by the writes that link and unlink, so
    // a search tells a name on thousands of memories from a rare one without counting its links;
    // names by each scope part, for searches whose scope covers several exact scopes (a user's
    // entities across agents and runs) to find a name without walking the user's entities; and
    // each link's memory key, so a search reads the links of its candidate keys from one
    // integer index instead of joining through memory ids.
    r#"
    ALTER TABLE entities ADD COLUMN mentions INTEGER NOT NULL DEFAULT 0;
    UPDATE entities SET mentions = (SELECT COUNT(*) FROM entity_memories em WHERE em.entity_id = entities.id);
    CREATE INDEX entities_by_user_name ON entities (user_id, normalized);
    CREATE INDEX entities_by_agent_name ON entities (agent_id, normalized);
    CREATE INDEX entities_by_run_name ON entities (run_id, normalized);
    ALTER TABLE entity_memories ADD COLUMN memory_seq INTEGER;
    UPDATE entity_memories SET memory_seq = (SELECT m.seq FROM memories m WHERE m.id = entity_memories.memory_id);
    CREATE INDEX entity_memories_by_seq ON entity_memories (memory_seq, entity_id);
    "#,
    // v4: notes (A-MEM): a note's keywords, tags and context as one JSON object; why a link was
    // made; and the old and new fields of a note's EVOLVE history event.
    r#"
    ALTER TABLE memories ADD COLUMN note TEXT;
    ALTER TABLE links ADD COLUMN reason TEXT;
    ALTER TABLE history ADD COLUMN old_note TEXT;
    ALTER TABLE history ADD COLUMN new_note TEXT;
    "#,
    // v5: the hierarchy (MemoryOS lineage): pages, each in its session's short-term window, a
    // mid-term segment or evicted with one; and segments, the mid-term topic threads with the
    // inputs of their heat. `scope_key` is the exact owner, the unit every window and segment
    // list is read by.
    r#"
    CREATE TABLE pages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        scope_key TEXT NOT NULL,
        session_id TEXT,
        message_ids TEXT NOT NULL,
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL,
        at INTEGER NOT NULL,
        vector BLOB NOT NULL,
        keywords TEXT NOT NULL,
        tier TEXT NOT NULL CHECK (tier IN ('short', 'mid', 'evicted')),
        segment_id TEXT,
        continues TEXT,
        analysed INTEGER NOT NULL DEFAULT 0
    ) STRICT;
    CREATE INDEX pages_by_window ON pages (scope_key, session_id, tier, seq);
    CREATE INDEX pages_by_segment ON pages (segment_id, seq);
    CREATE INDEX pages_by_user ON pages (user_id, seq);
    CREATE INDEX pages_by_agent ON pages (agent_id, seq);

    CREATE TABLE segments (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        scope_key TEXT NOT NULL,
        summary TEXT NOT NULL,
        summary_author TEXT NOT NULL,
        keywords TEXT NOT NULL,
        vector BLOB NOT NULL,
        page_count INTEGER NOT NULL,
        length_tokens INTEGER NOT NULL,
        visits INTEGER NOT NULL,
        last_visit_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        evicted_at INTEGER,
        version INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX segments_by_scope ON segments (scope_key, evicted_at);
    CREATE INDEX segments_by_user ON segments (user_id);
    CREATE INDEX segments_by_agent ON segments (agent_id);
    "#,
    // v6: API keys live in the store (they were in a `keys.db` beside it), so every process on
    // one store sees the same keys and revocations. Only the secret's hash is kept.
    r#"
    CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        name TEXT,
        admin INTEGER NOT NULL,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
    ) STRICT;
    "#,
    // v7: readers of the message log find the raw memory of a message (its visibility).
    "CREATE INDEX IF NOT EXISTS memory_sources_by_message ON memory_sources (message_id);",
    // v8: the job queue of async adds (see `jobs.rs`). `seq` orders claims (first created,
    // first run); open jobs are found through `jobs_open`.
    r#"
    CREATE TABLE IF NOT EXISTS jobs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
        attempts INTEGER NOT NULL,
        max_attempts INTEGER NOT NULL,
        run_after INTEGER NOT NULL,
        locked_until INTEGER,
        locked_by TEXT,
        last_error TEXT,
        error_kind TEXT,
        result TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX IF NOT EXISTS jobs_open ON jobs (status, run_after, seq)
        WHERE status IN ('pending', 'running');
    CREATE INDEX IF NOT EXISTS jobs_by_user ON jobs (user_id, seq);
    "#,
    // v9: fewer index entries per add. A scope-part index serves only queries that name that
    // part (`x = ?`), so rows without it (an agent index over a user's memories, all NULL)
    // leave those indexes; SQLite uses a `x IS NOT NULL` partial index for `x = ?`. The name
    // index over every scope is dropped: each entity lookup names its scope and goes through
    // one of the scope-and-name indexes. An add of a user's memory with a new name wrote
    // seven entity index entries, five at places no other entry of the write shares; now four.
    r#"
    DROP INDEX IF EXISTS entities_by_name;
    DROP INDEX entities_by_user_name;
    DROP INDEX entities_by_agent_name;
    DROP INDEX entities_by_run_name;
    CREATE INDEX entities_by_user_name ON entities (user_id, normalized) WHERE user_id IS NOT NULL;
    CREATE INDEX entities_by_agent_name ON entities (agent_id, normalized) WHERE agent_id IS NOT NULL;
    CREATE INDEX entities_by_run_name ON entities (run_id, normalized) WHERE run_id IS NOT NULL;
    DROP INDEX memories_by_user;
    DROP INDEX memories_by_agent;
    DROP INDEX memories_by_run;
    CREATE INDEX memories_by_user ON memories (user_id, seq) WHERE user_id IS NOT NULL;
    CREATE INDEX memories_by_agent ON memories (agent_id, seq) WHERE agent_id IS NOT NULL;
    CREATE INDEX memories_by_run ON memories (run_id, seq) WHERE run_id IS NOT NULL;
    DROP INDEX messages_by_user;
    DROP INDEX messages_by_agent;
    DROP INDEX messages_by_run;
    CREATE INDEX messages_by_user ON messages (user_id, seq) WHERE user_id IS NOT NULL;
    CREATE INDEX messages_by_agent ON messages (agent_id, seq) WHERE agent_id IS NOT NULL;
    CREATE INDEX messages_by_run ON messages (run_id, seq) WHERE run_id IS NOT NULL;
    DROP INDEX pages_by_user;
    DROP INDEX pages_by_agent;
    CREATE INDEX pages_by_user ON pages (user_id, seq) WHERE user_id IS NOT NULL;
    CREATE INDEX pages_by_agent ON pages (agent_id, seq) WHERE agent_id IS NOT NULL;
    DROP INDEX segments_by_user;
    DROP INDEX segments_by_agent;
    CREATE INDEX segments_by_user ON segments (user_id) WHERE user_id IS NOT NULL;
    CREATE INDEX segments_by_agent ON segments (agent_id) WHERE agent_id IS NOT NULL;
    "#,
    // v10: event time (see `timeline.rs`): the interval's ends for range reads and the whole
    // event time as JSON; indexed per scope part by start, for the timeline and its ranges.
    r#"
    ALTER TABLE memories ADD COLUMN event_start INTEGER;
    ALTER TABLE memories ADD COLUMN event_end INTEGER;
    ALTER TABLE memories ADD COLUMN event_time TEXT;
    CREATE INDEX memories_event_by_user ON memories (user_id, event_start)
        WHERE event_start IS NOT NULL AND user_id IS NOT NULL;
    CREATE INDEX memories_event_by_agent ON memories (agent_id, event_start)
        WHERE event_start IS NOT NULL AND agent_id IS NOT NULL;
    CREATE INDEX memories_event_by_run ON memories (run_id, event_start)
        WHERE event_start IS NOT NULL AND run_id IS NOT NULL;
    "#,
    // v11: relations between entities (see `relations.rs`).
    crate::relations::MIGRATION,
    // v12: core memory blocks, their attachments to agents and their history (see `blocks.rs`).
    crate::blocks::BLOCKS_DDL,
    // v13: a segment's event time (the span of what its pages state; `tier::page_event_time`),
    // kept as memories keep theirs: the ends for range reads and the whole as JSON.
    r#"
    ALTER TABLE segments ADD COLUMN event_start INTEGER;
    ALTER TABLE segments ADD COLUMN event_end INTEGER;
    ALTER TABLE segments ADD COLUMN event_time TEXT;
    CREATE INDEX segments_by_event ON segments (scope_key, event_start)
        WHERE event_start IS NOT NULL;
    "#,
];

pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub(crate) fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(crate::codec::sql_err)?;
    // Searches bind lists of keys and names whose length varies per query (`IN (?, ?, …)`), each
    // length its own statement: with rusqlite's default of 16 cached statements they were
    // prepared again on most searches (measured 10 % of a search at 10,000 memories).
    conn.set_prepared_statement_cache_capacity(512);
    // `secure_delete` zeroes every freed cell and page on every write, not only in an erase:
    // an ordinary write before an erase (the tier planner moving a page, a neighbour
    // re-indexed) would otherwise leave an old copy of a text in free space that the erase
    // cannot find (see ARCHITECTURE.md for its cost).
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         PRAGMA synchronous = NORMAL;
         PRAGMA foreign_keys = ON;
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -65536;
         PRAGMA secure_delete = ON;",
    )
    .map_err(crate::codec::sql_err)
}

/// Brings the file's schema up to `SCHEMA_VERSION`.
pub(crate) fn migrate(conn: &mut Connection) -> Result<u32> {
    let current: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(crate::codec::sql_err)?;
    if current > SCHEMA_VERSION {
        return Err(Error::Conflict {
            reason: format!(
                "the store has schema version {current}, newer than this mnemo ({SCHEMA_VERSION}); upgrade mnemo"
            ),
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction().map_err(crate::codec::sql_err)?;
        tx.execute_batch(sql).map_err(crate::codec::sql_err)?;
        tx.pragma_update(None, "user_version", (i + 1) as u32)
            .map_err(crate::codec::sql_err)?;
        tx.commit().map_err(crate::codec::sql_err)?;
        tracing::info!(version = i + 1, "migrated store schema");
    }
    if current < SCHEMA_VERSION {
        // The migrations' pages go to the main file now: a new or upgraded store starts with an
        // empty log, so the checkpoint marks judge the writes that follow by their own frames.
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(Error::storage)?;
    }
    Ok(SCHEMA_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_2_store_gains_entity_link_counts() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..2] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 2).unwrap();
        conn.execute_batch(
            "INSERT INTO entities (id, user_id, name, normalized, entity_type, created_at) \
               VALUES ('e1', 'u', 'Maya', 'maya', 'person', 0), ('e2', 'u', 'Oslo', 'oslo', 'place', 0);
             INSERT INTO entity_memories VALUES ('e1', 'm1'), ('e1', 'm2'), ('e2', 'm2');
             INSERT INTO memories (id, user_id, kind, state, text, metadata, hash, created_at, updated_at) \
               VALUES ('m1', 'u', 'raw', 'active', 'a', '{}', 'h1', 0, 0), ('m2', 'u', 'raw', 'active', 'b', '{}', 'h2', 0, 0);",
        )
        .unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), SCHEMA_VERSION);
        let mentions = |conn: &Connection, id: &str| -> i64 {
            conn.query_row("SELECT mentions FROM entities WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap()
        };
        assert_eq!((mentions(&conn, "e1"), mentions(&conn, "e2")), (2, 1));
        let keyed: Vec<(String, i64)> = conn
            .prepare(
                "SELECT em.memory_id, em.memory_seq FROM entity_memories em \
                 JOIN memories m ON m.seq = em.memory_seq AND m.id = em.memory_id ORDER BY 1, 2",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            keyed.len(),
            3,
            "every link carries its memory's key: {keyed:?}"
        );
        // Migrating again is a no-op.
        assert_eq!(migrate(&mut conn).unwrap(), SCHEMA_VERSION);
        assert_eq!(mentions(&conn, "e1"), 2);
    }

    #[test]
    fn a_version_3_store_gains_note_link_and_history_columns() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..3] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
        conn.execute_batch(
            "INSERT INTO memories (id, user_id, kind, state, text, metadata, hash, created_at, updated_at) \
               VALUES ('m1', 'u', 'raw', 'active', 'a', '{}', 'h1', 0, 0);
             INSERT INTO links (from_id, to_id, kind, strength, author, created_at) VALUES ('m1', 'm2', 'related', 0.5, 'rule', 0);",
        )
        .unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), SCHEMA_VERSION);
        let (note, reason): (Option<String>, Option<String>) = conn
            .query_row(
                "SELECT m.note, l.reason FROM memories m JOIN links l ON l.from_id = m.id",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            (note, reason),
            (None, None),
            "old rows read as no note, no reason"
        );
        conn.execute(
            "INSERT INTO history (memory_id, event, created_at, old_note, new_note) VALUES ('m1', 'EVOLVE', 0, '{}', '{}')",
            [],
        )
        .unwrap();
    }

    /// Every scope-part index is partial (rows without the part are not in it) and still the
    /// one a query naming that part goes through; the rows a version-8 store held stay found.
    #[test]
    fn scope_part_indexes_hold_only_rows_with_the_part_and_serve_its_queries() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..8] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 8).unwrap();
        conn.execute_batch(
            "INSERT INTO memories (id, user_id, agent_id, kind, state, text, metadata, hash, created_at, updated_at) \
               VALUES ('m1', 'u', NULL, 'raw', 'active', 'a', '{}', 'h1', 0, 0), \
                      ('m2', NULL, 'bot', 'raw', 'active', 'b', '{}', 'h2', 0, 0);",
        )
        .unwrap();
        assert_eq!(migrate(&mut conn).unwrap(), SCHEMA_VERSION);
        let cases = [
            ("memories", "user_id", "memories_by_user"),
            ("memories", "agent_id", "memories_by_agent"),
            ("memories", "run_id", "memories_by_run"),
            ("messages", "user_id", "messages_by_user"),
            ("messages", "agent_id", "messages_by_agent"),
            ("messages", "run_id", "messages_by_run"),
            ("pages", "user_id", "pages_by_user"),
            ("pages", "agent_id", "pages_by_agent"),
        ];
        for (table, col, index) in cases {
            let sql = format!(
                "EXPLAIN QUERY PLAN SELECT x.seq FROM {table} x WHERE x.{col} = ?1 ORDER BY x.seq DESC LIMIT 5"
            );
            let plan: Vec<String> = conn
                .prepare(&sql)
                .unwrap()
                .query_map(["v"], |r| r.get(3))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert!(
                plan.iter().any(|p| p.contains(index)),
                "{table}.{col} = ? does not use {index}: {plan:?}"
            );
            let partial: String = conn
                .query_row(
                    "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?1",
                    [index],
                    |r| r.get(0),
                )
                .unwrap();
            assert!(
                partial.contains(&format!("WHERE {col} IS NOT NULL")),
                "{partial}"
            );
        }
        for (col, index) in [
            ("user_id", "entities_by_user_name"),
            ("agent_id", "entities_by_agent_name"),
            ("run_id", "entities_by_run_name"),
        ] {
            // The lookups name their index (`graph::EntityLookup`): an index the query cannot
            // use is an error, not a slower plan.
            conn.prepare(&format!(
                "SELECT e.id FROM entities e INDEXED BY {index} WHERE e.{col} = ?1 AND e.normalized IN (?2, ?3)"
            ))
            .unwrap();
        }
        let found = |col: &str, v: &str| -> i64 {
            conn.query_row(
                &format!("SELECT COUNT(*) FROM memories m WHERE m.{col} = ?1"),
                [v],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!((found("user_id", "u"), found("agent_id", "bot")), (1, 1));
    }
}
