//! Turns across processes, as row locks on `scope_gates` held by an open transaction on a
//! connection of its own until the turn drops (one row per name, created on first use and only
//! ever locked):
//!
//! - planning turns ([`mnemo_core::Tiers::plan_turn`], [`take`]): one exclusive row per exact
//!   scope, so servers sharing the database plan and write one scope's hierarchy one at a time
//!   instead of refusing each other's stale plans. A writer holds its turn on one connection
//!   while its write transaction, on another, takes the scope's write lock (`write::lock_scopes`);
//! - erase gates ([`mnemo_core::Erasure::erase_gate`], [`gate`]): one row per scope part,
//!   locked `FOR SHARE` by an add of a session and `FOR UPDATE` by an erase.
//!
//! A row holds the SHA-256 of its name, never the name: names carry user, agent and session ids,
//! and the rows outlive the scopes they guard, so an erased scope leaves no id behind here.
//!
//! Rows are locked in one order (by name), so two holders cannot wait on each other in a cycle.
//! A row lock is taken where the row lives, so it holds across servers on one database and, on
//! Citus, on whichever node holds the row's shard (each lock is a one-row statement routed
//! there), where a per-node advisory lock would not.

use crate::pg_err;
use crate::pool::Pool;
use mnemo_core::Result;
use std::sync::Arc;

/// Waits for the planning turns of `keys` (exact scope keys).
pub(crate) fn take(pool: &Arc<Pool>, keys: &[String]) -> Result<Gate> {
    let names: Vec<String> = keys.iter().map(|k| format!("plan\u{1f}{k}")).collect();
    gate(pool, &names, true)
}

/// A held turn or gate: the open transaction holding its row locks, rolled back when it drops.
pub(crate) struct Gate {
    pool: Arc<Pool>,
    client: Option<(crate::pool::Conn, u64)>,
}

/// Waits for the rows `names` (a planning turn's or an erase gate's), shared or exclusive.
pub(crate) fn gate(pool: &Arc<Pool>, names: &[String], exclusive: bool) -> Result<Gate> {
    use sha2::{Digest, Sha256};
    let mut parts: Vec<String> = names
        .iter()
        .map(|n| hex::encode(Sha256::digest(n.as_bytes())))
        .collect();
    parts.sort_unstable();
    parts.dedup();
    let (mut client, generation) = pool.checkout()?;
    let lock = if exclusive {
        "SELECT 1 FROM scope_gates WHERE part = $1 FOR UPDATE"
    } else {
        "SELECT 1 FROM scope_gates WHERE part = $1 FOR SHARE"
    };
    let taken = (|| -> std::result::Result<(), postgres::Error> {
        // The rows exist before the transaction that locks them: an insert inside it would
        // hold the new row exclusively whatever the gate's kind.
        for part in &parts {
            client.client.execute(
                "INSERT INTO scope_gates (part) VALUES ($1) ON CONFLICT (part) DO NOTHING",
                &[part],
            )?;
        }
        client.client.batch_execute("BEGIN")?;
        for part in &parts {
            client.client.execute(lock, &[part])?;
        }
        Ok(())
    })();
    if let Err(e) = taken {
        // A session left in a transaction is not pooled again; closing it ends its locks.
        pool.give_back(client, generation, true);
        return Err(pg_err(e));
    }
    Ok(Gate {
        pool: Arc::clone(pool),
        client: Some((client, generation)),
    })
}

impl Drop for Gate {
    fn drop(&mut self) {
        if let Some((mut client, generation)) = self.client.take() {
            let broke = client.client.batch_execute("ROLLBACK").is_err();
            self.pool.give_back(client, generation, broke);
        }
    }
}
