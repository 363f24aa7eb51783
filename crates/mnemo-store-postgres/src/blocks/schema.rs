//! The block tables' DDL: as first created (v8) and as laid out for Citus (the migration
//! appended after v10), like every other owner's table: `scope_key` (the owner's
//! `Scope::key()`, with no run part, since runs own no block) is the distribution column and
//! leads every primary key and unique index; an attachment and an event carry their block's
//! key, so a block, its attachments and its history lie on one shard.

/// v8: the tables as issue 47 first built them (kept as they ran: a store migrated from an
/// older version, and the tests that replay migrations, run this text again).
pub(crate) const BLOCKS_DDL: &str = r#"
    CREATE TABLE IF NOT EXISTS blocks (
        id UUID PRIMARY KEY,
        user_id TEXT,
        agent_id TEXT,
        label TEXT NOT NULL,
        value TEXT NOT NULL,
        description TEXT NOT NULL,
        char_limit BIGINT NOT NULL,
        read_only BOOLEAN NOT NULL,
        version BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS blocks_by_owner_label
        ON blocks (COALESCE(user_id, ''), COALESCE(agent_id, ''), label);
    CREATE INDEX IF NOT EXISTS blocks_by_user ON blocks (user_id, label);
    CREATE INDEX IF NOT EXISTS blocks_by_agent ON blocks (agent_id, label);
    CREATE TABLE IF NOT EXISTS block_agents (
        block_id UUID NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
        agent_id TEXT NOT NULL,
        PRIMARY KEY (block_id, agent_id)
    );
    CREATE INDEX IF NOT EXISTS block_agents_by_agent ON block_agents (agent_id);
    CREATE TABLE IF NOT EXISTS block_history (
        id BIGSERIAL PRIMARY KEY,
        block_id UUID NOT NULL,
        user_id TEXT,
        agent_id TEXT,
        label TEXT NOT NULL,
        version BIGINT NOT NULL,
        op TEXT NOT NULL,
        actor TEXT,
        reason TEXT,
        before_value TEXT,
        after_value TEXT,
        created_at BIGINT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS block_history_by_block ON block_history (block_id, id);
"#;

/// The Citus layout of the block tables: `scope_key` filled from the owner columns (the
/// format of `Scope::key()`: `u=…␟a=…␟r=`), then the keys rebuilt to lead with it. The
/// attachment's foreign key names both columns, as Citus requires between co-located tables.
/// Every step is idempotent: a replay of the migrations drops and rebuilds the same keys.
pub(crate) const BLOCKS_LAYOUT: &str = r#"
    ALTER TABLE blocks ADD COLUMN IF NOT EXISTS scope_key TEXT;
    UPDATE blocks SET scope_key = 'u=' || COALESCE(user_id, '') || chr(31)
        || 'a=' || COALESCE(agent_id, '') || chr(31) || 'r=' WHERE scope_key IS NULL;
    ALTER TABLE blocks ALTER COLUMN scope_key SET NOT NULL;
    ALTER TABLE block_agents ADD COLUMN IF NOT EXISTS scope_key TEXT;
    UPDATE block_agents x SET scope_key = b.scope_key FROM blocks b
        WHERE x.scope_key IS NULL AND b.id = x.block_id;
    ALTER TABLE block_agents ALTER COLUMN scope_key SET NOT NULL;
    ALTER TABLE block_history ADD COLUMN IF NOT EXISTS scope_key TEXT;
    UPDATE block_history SET scope_key = 'u=' || COALESCE(user_id, '') || chr(31)
        || 'a=' || COALESCE(agent_id, '') || chr(31) || 'r=' WHERE scope_key IS NULL;
    ALTER TABLE block_history ALTER COLUMN scope_key SET NOT NULL;

    ALTER TABLE block_agents DROP CONSTRAINT IF EXISTS block_agents_block_id_fkey;
    ALTER TABLE block_agents DROP CONSTRAINT IF EXISTS block_agents_block_fkey;
    ALTER TABLE block_agents DROP CONSTRAINT IF EXISTS block_agents_pkey;
    ALTER TABLE blocks DROP CONSTRAINT IF EXISTS blocks_pkey;
    ALTER TABLE block_history DROP CONSTRAINT IF EXISTS block_history_pkey;
    ALTER TABLE blocks ADD CONSTRAINT blocks_pkey PRIMARY KEY (scope_key, id);
    ALTER TABLE block_agents ADD CONSTRAINT block_agents_pkey
        PRIMARY KEY (scope_key, block_id, agent_id);
    ALTER TABLE block_agents ADD CONSTRAINT block_agents_block_fkey
        FOREIGN KEY (scope_key, block_id) REFERENCES blocks (scope_key, id) ON DELETE CASCADE;
    ALTER TABLE block_history ADD CONSTRAINT block_history_pkey PRIMARY KEY (scope_key, id);

    DROP INDEX IF EXISTS blocks_by_owner_label;
    CREATE UNIQUE INDEX IF NOT EXISTS blocks_by_scope_label ON blocks (scope_key, label);
    DROP INDEX IF EXISTS block_history_by_block;
    CREATE INDEX IF NOT EXISTS block_history_by_scope_block
        ON block_history (scope_key, block_id, id);
"#;
