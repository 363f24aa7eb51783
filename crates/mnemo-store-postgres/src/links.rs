//! The owner lookup behind core's `check_link`, the check every written link passes (an add's
//! links and a caller's).

use crate::pg_err;
use mnemo_core::*;
use postgres::Transaction;

/// The exact scope owning a memory (any state), if it exists, and whether it is an erased
/// tombstone; the row is share-locked so the memory cannot be hard-deleted before the
/// transaction ends.
pub(crate) fn owner_in(tx: &mut Transaction<'_>, id: MemoryId) -> Result<Option<(Scope, bool)>> {
    let row = tx
        .query_opt(
            "SELECT user_id, agent_id, run_id, state = 'deleted' AND hash = '' AS erased \
             FROM memories WHERE id = $1 LIMIT 1 FOR KEY SHARE",
            &[&id.0],
        )
        .map_err(pg_err)?;
    row.map(|r| crate::codec::scope_from_row(&r).map(|s| (s, r.get::<_, bool>("erased"))))
        .transpose()
}
