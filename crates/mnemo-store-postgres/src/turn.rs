//! Planning turns across processes ([`mnemo_core::Tiers::plan_turn`]): session-level advisory
//! locks, one per exact scope, held on a connection taken from the pool for the turn and given
//! back (unlocked) when the turn ends. Servers sharing the database then plan and write one
//! scope's hierarchy one at a time instead of refusing each other's stale plans.
//!
//! The locks are a key class of their own, apart from the write path's transaction locks
//! (`write::lock_scopes`): a writer holds its turn on one connection while its write
//! transaction, on another, takes the scope's write lock. Several scopes are locked in one
//! order (by hash), so two writers of overlapping scopes cannot wait on each other in a cycle.

use crate::pool::Pool;
use crate::{pg_err, write::fnv1a};
use mnemo_core::Result;
use std::sync::Arc;

/// The class of the planning-turn locks ("plan" in ASCII), apart from every other mnemo lock.
const PLAN_LOCK_CLASS: i32 = 0x706c_616e;

/// A held turn: its connection goes back to the pool, unlocked, when it drops.
pub(crate) struct Turn {
    pool: Arc<Pool>,
    client: Option<(crate::pool::Conn, u64)>,
}

/// Waits for the turns of `keys` (exact scope keys).
pub(crate) fn take(pool: &Arc<Pool>, keys: &[String]) -> Result<Turn> {
    let mut hashes: Vec<i32> = keys.iter().map(|k| fnv1a(k)).collect();
    hashes.sort_unstable();
    hashes.dedup();
    let (mut client, generation) = pool.checkout()?;
    for h in hashes {
        if let Err(e) = client
            .client
            .execute("SELECT pg_advisory_lock($1, $2)", &[&PLAN_LOCK_CLASS, &h])
        {
            let e = pg_err(e);
            // The locks taken so far end with the session, which is not pooled again.
            pool.give_back(client, generation, true);
            return Err(e);
        }
    }
    Ok(Turn {
        pool: Arc::clone(pool),
        client: Some((client, generation)),
    })
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some((mut client, generation)) = self.client.take() {
            // A connection that cannot unlock is not pooled again; closing it ends its locks.
            let broke = client
                .client
                .batch_execute("SELECT pg_advisory_unlock_all()")
                .is_err();
            self.pool.give_back(client, generation, broke);
        }
    }
}
