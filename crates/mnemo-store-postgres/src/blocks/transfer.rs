//! The whole-store and erase paths of the block tables: export (every block, a fan-out),
//! import (the id check reads by id alone, so an id the store holds under any owner is kept),
//! and a scope's erase, which names its owner's key when the scope names both a user and an
//! agent and otherwise covers owners it does not name (a user's every agent, an agent's every
//! user), like the erase of memories.

use super::{events, find, insert_block, insert_event, owner_key, query_blocks, COLS};
use crate::pg_err;
use crate::predicate::Pred;
use mnemo_core::*;
use postgres::Transaction;

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
        let history = events(tx, &block, usize::MAX)?;
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
    let (user, agent) = (scope.user_id(), scope.agent_id());
    let mut owned = Pred::default();
    if user.is_some() && agent.is_some() {
        let k = owned.arg(owner_key(user, agent)?);
        owned.and(&format!("scope_key = {k}"));
    } else {
        for (column, value) in [
            ("user_id", user.map(|u| u.as_str())),
            ("agent_id", agent.map(|a| a.as_str())),
        ] {
            if let Some(v) = value {
                let v = owned.arg(v.to_string());
                owned.and(&format!("{column} = {v}"));
            }
        }
    }
    tx.execute(
        &format!("DELETE FROM block_history WHERE {}", owned.where_sql()),
        &owned.params(),
    )
    .map_err(pg_err)?;
    // Attachments of the erased blocks go with them (the foreign key cascades).
    let n = tx
        .execute(
            &format!("DELETE FROM blocks WHERE {}", owned.where_sql()),
            &owned.params(),
        )
        .map_err(pg_err)?;
    if let Some(a) = agent {
        // Only a user's own block is attached to agents: its key is the user's.
        let mut attached = Pred::default();
        let a = attached.arg(a.to_string());
        attached.and(&format!("agent_id = {a}"));
        if user.is_some() {
            let k = attached.arg(owner_key(user, None)?);
            attached.and(&format!("scope_key = {k}"));
        }
        tx.execute(
            &format!("DELETE FROM block_agents WHERE {}", attached.where_sql()),
            &attached.params(),
        )
        .map_err(pg_err)?;
    }
    Ok(n)
}
