//! Core memory blocks (`blocks`, `block_agents`, `block_history`): the [`Blocks`] capability.
//! An edit locks the block's row (`FOR UPDATE`) and reads it again inside its transaction
//! before core's edit rule ([`BlockChange::apply`]) runs, so concurrent editors serialise on
//! the row and an `expected_version` check never passes for two of them; a create takes the
//! owner's scope lock so the per-owner maximum holds under concurrent creates. The SQL of
//! [`SEEN`] implements core's visibility rule ([`MemoryBlock::seen_by`]).

use crate::{pg_err, PgStore};
use mnemo_core::blocks::BlockActor;
use mnemo_core::*;
use postgres::types::ToSql;
use postgres::{GenericClient, Row, Transaction};

/// The tables (schema migration appended to `schema::MIGRATIONS`).
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

const COLS: &str = "b.id, b.user_id, b.agent_id, b.label, b.value, b.description, b.char_limit, \
     b.read_only, b.version, b.created_at, b.updated_at, \
     ARRAY(SELECT x.agent_id FROM block_agents x WHERE x.block_id = b.id \
           ORDER BY x.agent_id COLLATE \"C\") AS agents";

/// Core's `MemoryBlock::seen_by` over `$1` (the scope's user or NULL) and `$2` (its agent).
const SEEN: &str = "($1::text IS NULL OR b.user_id = $1) AND ($2::text IS NULL OR b.agent_id = $2 \
     OR (b.agent_id IS NULL AND EXISTS (SELECT 1 FROM block_agents x \
         WHERE x.block_id = b.id AND x.agent_id = $2)))";

/// Narrows [`SEEN`] to `MemoryBlock::pinned_for`.
const PINNED: &str = "($2::text IS NOT NULL OR b.agent_id IS NULL)";

fn parts(scope: &Scope) -> (Option<String>, Option<String>) {
    (
        scope.user_id().map(|u| u.to_string()),
        scope.agent_id().map(|a| a.to_string()),
    )
}

fn ms(t: Timestamp) -> i64 {
    t.timestamp_millis()
}

fn block_from_row(r: &Row) -> Result<MemoryBlock> {
    let user: Option<String> = r.get(1);
    let agent: Option<String> = r.get(2);
    let agents: Vec<String> = r.get(11);
    Ok(MemoryBlock {
        id: r.get(0),
        owner: Scope::from_parts(user.as_deref(), agent.as_deref(), None)?,
        label: BlockLabel::new(r.get(3))?,
        value: r.get(4),
        description: r.get(5),
        limit: u32::try_from(r.get::<_, i64>(6)).map_err(Error::storage)?,
        read_only: r.get(7),
        agents: agents
            .iter()
            .map(|a| AgentId::new(a))
            .collect::<Result<_>>()?,
        version: r.get::<_, i64>(8) as u64,
        created_at: crate::codec::from_ms(r.get(9)),
        updated_at: crate::codec::from_ms(r.get(10)),
    })
}

/// The block labelled `label` that `scope` sees (the trait's order when several do).
fn find(
    c: &mut impl GenericClient,
    scope: &Scope,
    label: &BlockLabel,
) -> Result<Option<MemoryBlock>> {
    let (u, a) = parts(scope);
    let sql = format!(
        "SELECT {COLS} FROM blocks b WHERE {SEEN} AND b.label = $3 \
         ORDER BY (COALESCE(b.user_id, '') = COALESCE($1, '') \
                   AND COALESCE(b.agent_id, '') = COALESCE($2, '')) DESC, \
                  b.agent_id IS NULL DESC, b.created_at, b.id LIMIT 1"
    );
    c.query_opt(&sql, &[&u, &a, &label.as_str()])
        .map_err(pg_err)?
        .map(|r| block_from_row(&r))
        .transpose()
}

/// [`find`] inside a write: the row is locked, then read again (the lock waited for any
/// editor before this one, whose commit the new read sees).
fn find_locked(tx: &mut Transaction<'_>, scope: &Scope, label: &BlockLabel) -> Result<MemoryBlock> {
    let b = find(tx, scope, label)?.ok_or_else(|| no_block(label))?;
    tx.execute("SELECT 1 FROM blocks WHERE id = $1 FOR UPDATE", &[&b.id])
        .map_err(pg_err)?;
    let sql = format!("SELECT {COLS} FROM blocks b WHERE b.id = $1");
    match tx.query_opt(&sql, &[&b.id]).map_err(pg_err)? {
        Some(r) => block_from_row(&r),
        None => Err(no_block(label)),
    }
}

fn insert_block(tx: &mut Transaction<'_>, b: &MemoryBlock) -> Result<()> {
    let (u, a) = parts(&b.owner);
    tx.execute(
        "INSERT INTO blocks (id, user_id, agent_id, label, value, description, char_limit, \
         read_only, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        &[
            &b.id,
            &u,
            &a,
            &b.label.as_str(),
            &b.value,
            &b.description,
            &i64::from(b.limit),
            &b.read_only,
            &(b.version as i64),
            &ms(b.created_at),
            &ms(b.updated_at),
        ],
    )
    .map_err(pg_err)?;
    set_agents(tx, b)
}

fn set_agents(tx: &mut Transaction<'_>, b: &MemoryBlock) -> Result<()> {
    tx.execute("DELETE FROM block_agents WHERE block_id = $1", &[&b.id])
        .map_err(pg_err)?;
    let agents: Vec<String> = b.agents.iter().map(|a| a.to_string()).collect();
    tx.execute(
        "INSERT INTO block_agents (block_id, agent_id) SELECT $1, unnest($2::text[])",
        &[&b.id, &agents],
    )
    .map_err(pg_err)?;
    Ok(())
}

fn insert_event(tx: &mut Transaction<'_>, owner: &Scope, e: &BlockEvent) -> Result<()> {
    let (u, a) = parts(owner);
    tx.execute(
        "INSERT INTO block_history (block_id, user_id, agent_id, label, version, op, actor, \
         reason, before_value, after_value, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        &[
            &e.block_id,
            &u,
            &a,
            &e.label.as_str(),
            &(e.version as i64),
            &e.op.as_str(),
            &e.actor,
            &e.reason,
            &e.before,
            &e.after,
            &ms(e.at),
        ],
    )
    .map_err(pg_err)?;
    Ok(())
}

fn events(c: &mut impl GenericClient, block: uuid::Uuid, limit: usize) -> Result<Vec<BlockEvent>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = c
        .query(
            "SELECT block_id, label, version, op, actor, reason, before_value, after_value, \
             created_at FROM block_history WHERE block_id = $1 ORDER BY id DESC LIMIT $2",
            &[&block, &limit],
        )
        .map_err(pg_err)?;
    let mut out = rows
        .iter()
        .map(|r| {
            Ok(BlockEvent {
                block_id: r.get(0),
                label: BlockLabel::new(r.get(1))?,
                version: r.get::<_, i64>(2) as u64,
                op: BlockOp::parse(r.get(3))?,
                actor: r.get(4),
                reason: r.get(5),
                before: r.get(6),
                after: r.get(7),
                at: crate::codec::from_ms(r.get(8)),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    out.reverse();
    Ok(out)
}

fn query_blocks(
    c: &mut impl GenericClient,
    sql: &str,
    p: &[&(dyn ToSql + Sync)],
) -> Result<Vec<MemoryBlock>> {
    c.query(sql, p)
        .map_err(pg_err)?
        .iter()
        .map(block_from_row)
        .collect()
}

impl Blocks for PgStore {
    fn create_block(&self, new: &NewBlock, limits: &BlockLimits) -> Result<MemoryBlock> {
        let (block, event) = new.build(limits, chrono::Utc::now())?;
        self.tx(|tx| {
            crate::write::lock_scopes(tx, [block.owner.key()])?;
            let (u, a) = parts(&block.owner);
            let held: i64 = tx
                .query_one(
                    "SELECT COUNT(*) FROM blocks WHERE user_id IS NOT DISTINCT FROM $1 \
                     AND agent_id IS NOT DISTINCT FROM $2",
                    &[&u, &a],
                )
                .map_err(pg_err)?
                .get(0);
            let taken = tx
                .query_opt(
                    "SELECT 1 FROM blocks WHERE user_id IS NOT DISTINCT FROM $1 \
                     AND agent_id IS NOT DISTINCT FROM $2 AND label = $3",
                    &[&u, &a, &block.label.as_str()],
                )
                .map_err(pg_err)?;
            if taken.is_some() {
                return Err(label_taken(&block.label));
            }
            if held >= i64::from(limits.max_per_scope) {
                return Err(too_many_blocks(limits));
            }
            insert_block(tx, &block)?;
            insert_event(tx, &block.owner, &event)?;
            Ok(block.clone())
        })
    }

    fn block(&self, scope: &Scope, label: &BlockLabel) -> Result<Option<MemoryBlock>> {
        self.with(|c| find(c, scope, label))
    }

    fn list_blocks(&self, query: &BlockQuery) -> Result<BlockPage> {
        let after = query.after()?;
        let (u, a) = parts(&query.scope);
        let (label, id) = match &after {
            Some((l, i)) => (Some(l.clone()), Some(*i)),
            None => (None, None),
        };
        let limit = query.limit as i64 + 1;
        let sql = format!(
            "SELECT {COLS} FROM blocks b WHERE {SEEN} AND ($3::text IS NULL \
             OR b.label COLLATE \"C\" > $3 OR (b.label = $3 AND b.id > $4)) \
             ORDER BY b.label COLLATE \"C\", b.id LIMIT $5"
        );
        let mut blocks = self.with(|c| query_blocks(c, &sql, &[&u, &a, &label, &id, &limit]))?;
        let next_cursor = if blocks.len() > query.limit {
            blocks.truncate(query.limit);
            blocks.last().map(BlockQuery::cursor_after)
        } else {
            None
        };
        Ok(BlockPage {
            blocks,
            next_cursor,
        })
    }

    fn edit_block(&self, edit: &BlockEdit) -> Result<MemoryBlock> {
        self.tx(|tx| {
            let current = find_locked(tx, &edit.scope, &edit.label)?;
            let (next, event) = edit.change.apply(
                &current,
                &edit.actor,
                edit.expected_version,
                edit.reason.as_deref(),
                chrono::Utc::now(),
            )?;
            tx.execute(
                "UPDATE blocks SET value = $1, version = $2, updated_at = $3 WHERE id = $4",
                &[
                    &next.value,
                    &(next.version as i64),
                    &ms(next.updated_at),
                    &next.id,
                ],
            )
            .map_err(pg_err)?;
            if next.agents != current.agents {
                set_agents(tx, &next)?;
            }
            insert_event(tx, &next.owner, &event)?;
            Ok(next)
        })
    }

    fn delete_block(
        &self,
        scope: &Scope,
        label: &BlockLabel,
        actor: &BlockActor,
        reason: Option<&str>,
    ) -> Result<MemoryBlock> {
        self.tx(|tx| {
            let current = find_locked(tx, scope, label)?;
            let event = delete_event(&current, actor, reason, chrono::Utc::now())?;
            tx.execute("DELETE FROM blocks WHERE id = $1", &[&current.id])
                .map_err(pg_err)?;
            insert_event(tx, &current.owner, &event)?;
            Ok(current)
        })
    }

    fn block_history(
        &self,
        scope: &Scope,
        label: &BlockLabel,
        limit: usize,
    ) -> Result<Vec<BlockEvent>> {
        self.with(|c| {
            let b = find(c, scope, label)?.ok_or_else(|| no_block(label))?;
            events(c, b.id, limit)
        })
    }

    fn pinned_blocks(&self, scope: &Scope) -> Result<Vec<MemoryBlock>> {
        let (u, a) = parts(scope);
        let sql = format!(
            "SELECT {COLS} FROM blocks b WHERE {SEEN} AND {PINNED} \
             ORDER BY b.label COLLATE \"C\", b.id"
        );
        self.with(|c| query_blocks(c, &sql, &[&u, &a]))
    }
}

/// Every block with its history, for an export (inside the export's snapshot).
pub(crate) fn export(
    tx: &mut Transaction<'_>,
    sink: &mut dyn FnMut(ExportRecord) -> Result<()>,
) -> Result<()> {
    let all = query_blocks(
        tx,
        &format!("SELECT {COLS} FROM blocks b ORDER BY b.created_at, b.id"),
        &[],
    )?;
    for block in all {
        let history = events(tx, block.id, usize::MAX)?;
        sink(ExportRecord::Block(Box::new(BlockRecord {
            block,
            history,
        })))?;
    }
    Ok(())
}

/// Writes an exported block and its history unless the store holds its id; rows written.
pub(crate) fn import(tx: &mut Transaction<'_>, r: &BlockRecord) -> Result<u64> {
    let b = &r.block;
    mnemo_core::blocks::block_owner(&b.owner)?;
    if tx
        .query_opt("SELECT 1 FROM blocks WHERE id = $1", &[&b.id])
        .map_err(pg_err)?
        .is_some()
    {
        return Ok(0);
    }
    if find(tx, &b.owner, &b.label)?.is_some_and(|x| x.owner == b.owner) {
        return Err(label_taken(&b.label));
    }
    insert_block(tx, b)?;
    for e in &r.history {
        insert_event(tx, &b.owner, e)?;
    }
    Ok(1)
}

/// A scope's erase: its blocks, their attachments and history go, and its agent is detached
/// from its user's blocks. A run owns no block: a scope with a run part erases none.
pub(crate) fn erase_scope(tx: &mut Transaction<'_>, scope: &Scope) -> Result<u64> {
    if scope.run_id().is_some() {
        return Ok(0);
    }
    let (u, a) = parts(scope);
    const OWNED: &str =
        "($1::text IS NULL OR user_id = $1) AND ($2::text IS NULL OR agent_id = $2)";
    tx.execute(
        &format!("DELETE FROM block_history WHERE {OWNED}"),
        &[&u, &a],
    )
    .map_err(pg_err)?;
    let n = tx
        .execute(&format!("DELETE FROM blocks WHERE {OWNED}"), &[&u, &a])
        .map_err(pg_err)?;
    if a.is_some() {
        tx.execute(
            "DELETE FROM block_agents WHERE agent_id = $2 AND block_id IN \
             (SELECT id FROM blocks WHERE $1::text IS NULL OR user_id = $1)",
            &[&u, &a],
        )
        .map_err(pg_err)?;
    }
    Ok(n)
}
