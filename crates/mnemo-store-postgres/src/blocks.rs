//! Core memory blocks (`blocks`, `block_agents`, `block_history`): the [`Blocks`] capability.
//! An edit locks the block's row (`FOR UPDATE`) and reads it again inside its transaction
//! before core's edit rule ([`BlockChange::apply`]) runs, so concurrent editors serialise on
//! the row and an `expected_version` check never passes for two of them; a create takes the
//! owner's scope lock so the per-owner maximum holds under concurrent creates. [`seen`]
//! writes core's visibility rule ([`MemoryBlock::seen_by`]) in SQL.
//!
//! Laid out for Citus like the other owners' tables ([`schema`]): every row carries its
//! block's owner key (`scope_key`), every statement that addresses a block by id names that key
//! too, and a scope that fixes the owners it can see (a user and an agent; a user's pack) names
//! their keys, so Citus sends it to their shards alone. Export, import's id check and the erase
//! of a partial scope are the whole-store or fan-out paths (`transfer`).

pub(crate) mod schema;
mod transfer;

use crate::predicate::Pred;
use crate::{pg_err, PgStore};
use mnemo_core::blocks::BlockActor;
use mnemo_core::*;
use postgres::types::ToSql;
use postgres::{GenericClient, Row, Transaction};

pub(crate) use schema::{BLOCKS_DDL, BLOCKS_LAYOUT};
pub(crate) use transfer::{erase_scope, export, import};

const COLS: &str = "b.id, b.user_id, b.agent_id, b.label, b.value, b.description, b.char_limit, \
     b.read_only, b.version, b.created_at, b.updated_at, \
     ARRAY(SELECT x.agent_id FROM block_agents x \
           WHERE x.scope_key = b.scope_key AND x.block_id = b.id \
           ORDER BY x.agent_id COLLATE \"C\") AS agents";

/// The owner key of a block of `user` and `agent` (runs own no block).
fn owner_key(user: Option<&UserId>, agent: Option<&AgentId>) -> Result<String> {
    Scope::from_parts(user.map(|u| u.as_str()), agent.map(|a| a.as_str()), None).map(|s| s.key())
}

/// Core's `MemoryBlock::seen_by` of `scope` (with `pinned`, `MemoryBlock::pinned_for`) as
/// conditions on `b`. A user and an agent see two owners' blocks at most (the pair's own and
/// the user's attached to the agent), and a user's pack one (the user's own): those keys are
/// named, so the statement stays on their shards. A scope leaving a part open covers owners it
/// does not name (a user's every agent, an agent's every user): a fan-out, as for memories.
fn seen(p: &mut Pred, scope: &Scope, pinned: bool) -> Result<()> {
    let (user, agent) = (scope.user_id(), scope.agent_id());
    if let Some(u) = user {
        let u = p.arg(u.to_string());
        p.and(&format!("b.user_id = {u}"));
    }
    match agent {
        Some(a) => {
            let a = p.arg(a.to_string());
            p.and(&format!(
                "(b.agent_id = {a} OR (b.agent_id IS NULL AND EXISTS (SELECT 1 FROM block_agents x \
                 WHERE x.scope_key = b.scope_key AND x.block_id = b.id AND x.agent_id = {a})))"
            ));
        }
        None if pinned => p.and("b.agent_id IS NULL"),
        None => {}
    }
    let keys = match (user, agent) {
        (Some(_), Some(a)) => vec![owner_key(user, Some(a))?, owner_key(user, None)?],
        (Some(_), None) if pinned => vec![owner_key(user, None)?],
        _ => Vec::new(),
    };
    if !keys.is_empty() {
        let keys: Vec<String> = keys.into_iter().map(|k| p.arg(k)).collect();
        p.and(&format!("b.scope_key IN ({})", keys.join(", ")));
    }
    Ok(())
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

/// The block labelled `label` that `scope` sees (the trait's order when several do: the
/// scope's own owner first, then a user's block before an agent's).
fn find(
    c: &mut impl GenericClient,
    scope: &Scope,
    label: &BlockLabel,
) -> Result<Option<MemoryBlock>> {
    let mut p = Pred::default();
    seen(&mut p, scope, false)?;
    let label = p.arg(label.as_str().to_string());
    let own = p.arg(owner_key(scope.user_id(), scope.agent_id())?);
    let sql = format!(
        "SELECT {COLS} FROM blocks b WHERE {} AND b.label = {label} \
         ORDER BY (b.scope_key = {own}) DESC, b.agent_id IS NULL DESC, b.created_at, b.id \
         LIMIT 1",
        p.where_sql()
    );
    c.query_opt(&sql, &p.params())
        .map_err(pg_err)?
        .map(|r| block_from_row(&r))
        .transpose()
}

/// [`find`] inside a write: the row is locked, then read again (the lock waited for any
/// editor before this one, whose commit the new read sees).
fn find_locked(tx: &mut Transaction<'_>, scope: &Scope, label: &BlockLabel) -> Result<MemoryBlock> {
    let b = find(tx, scope, label)?.ok_or_else(|| no_block(label))?;
    let key = b.owner.key();
    tx.execute(
        "SELECT 1 FROM blocks WHERE scope_key = $1 AND id = $2 FOR UPDATE",
        &[&key, &b.id],
    )
    .map_err(pg_err)?;
    let sql = format!("SELECT {COLS} FROM blocks b WHERE b.scope_key = $1 AND b.id = $2");
    match tx.query_opt(&sql, &[&key, &b.id]).map_err(pg_err)? {
        Some(r) => block_from_row(&r),
        None => Err(no_block(label)),
    }
}

fn insert_block(tx: &mut Transaction<'_>, b: &MemoryBlock) -> Result<()> {
    tx.execute(
        "INSERT INTO blocks (scope_key, id, user_id, agent_id, label, value, description, \
         char_limit, read_only, version, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        &[
            &b.owner.key(),
            &b.id,
            &b.owner.user_id().map(|u| u.as_str()),
            &b.owner.agent_id().map(|a| a.as_str()),
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
    let key = b.owner.key();
    tx.execute(
        "DELETE FROM block_agents WHERE scope_key = $1 AND block_id = $2",
        &[&key, &b.id],
    )
    .map_err(pg_err)?;
    let agents: Vec<String> = b.agents.iter().map(|a| a.to_string()).collect();
    tx.execute(
        "INSERT INTO block_agents (scope_key, block_id, agent_id) \
         SELECT $1, $2, unnest($3::text[])",
        &[&key, &b.id, &agents],
    )
    .map_err(pg_err)?;
    Ok(())
}

fn insert_event(tx: &mut Transaction<'_>, owner: &Scope, e: &BlockEvent) -> Result<()> {
    tx.execute(
        "INSERT INTO block_history (scope_key, block_id, user_id, agent_id, label, version, op, \
         actor, reason, before_value, after_value, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        &[
            &owner.key(),
            &e.block_id,
            &owner.user_id().map(|u| u.as_str()),
            &owner.agent_id().map(|a| a.as_str()),
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

/// The last `limit` events of `block` (oldest first).
fn events(
    c: &mut impl GenericClient,
    block: &MemoryBlock,
    limit: usize,
) -> Result<Vec<BlockEvent>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = c
        .query(
            "SELECT block_id, label, version, op, actor, reason, before_value, after_value, \
             created_at FROM block_history WHERE scope_key = $1 AND block_id = $2 \
             ORDER BY id DESC LIMIT $3",
            &[&block.owner.key(), &block.id, &limit],
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
            let key = block.owner.key();
            crate::write::lock_scopes(tx, [key.clone()])?;
            let held: i64 = tx
                .query_one("SELECT COUNT(*) FROM blocks WHERE scope_key = $1", &[&key])
                .map_err(pg_err)?
                .get(0);
            let taken = tx
                .query_opt(
                    "SELECT 1 FROM blocks WHERE scope_key = $1 AND label = $2",
                    &[&key, &block.label.as_str()],
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
        let mut p = Pred::default();
        seen(&mut p, &query.scope, false)?;
        if let Some((label, id)) = query.after()? {
            let (l, i) = (p.arg(label), p.arg(id));
            p.and(&format!(
                "(b.label COLLATE \"C\" > {l} OR (b.label = {l} AND b.id > {i}))"
            ));
        }
        let limit = p.arg(query.limit as i64 + 1);
        let sql = format!(
            "SELECT {COLS} FROM blocks b WHERE {} ORDER BY b.label COLLATE \"C\", b.id LIMIT {limit}",
            p.where_sql()
        );
        let mut blocks = self.with(|c| query_blocks(c, &sql, &p.params()))?;
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
                "UPDATE blocks SET value = $1, version = $2, updated_at = $3 \
                 WHERE scope_key = $4 AND id = $5",
                &[
                    &next.value,
                    &(next.version as i64),
                    &ms(next.updated_at),
                    &next.owner.key(),
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
            tx.execute(
                "DELETE FROM blocks WHERE scope_key = $1 AND id = $2",
                &[&current.owner.key(), &current.id],
            )
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
            events(c, &b, limit)
        })
    }

    fn pinned_blocks(&self, scope: &Scope) -> Result<Vec<MemoryBlock>> {
        let mut p = Pred::default();
        seen(&mut p, scope, true)?;
        let sql = format!(
            "SELECT {COLS} FROM blocks b WHERE {} ORDER BY b.label COLLATE \"C\", b.id",
            p.where_sql()
        );
        self.with(|c| query_blocks(c, &sql, &p.params()))
    }
}
