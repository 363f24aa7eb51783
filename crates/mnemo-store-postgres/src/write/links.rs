//! Links a caller adds and removes, and the check every written link passes (an add's links
//! are checked here too, inside the add's transaction).

use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::Transaction;
use std::collections::HashMap;

/// The exact scope owning a memory (any state), if it exists, and whether it is an erased
/// tombstone; the row is share-locked so the memory cannot be hard-deleted before the
/// transaction ends.
fn owner_in(tx: &mut Transaction<'_>, id: MemoryId) -> Result<Option<(Scope, bool)>> {
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

/// Checks a link before it is written: [`Link::validate`], then both ends exist — in `pending`
/// (memories of the same batch, with their scope) or in the store — under `scope`, and belong
/// to one exact scope, which is returned (the link's owner). Invalid input names the end at
/// fault.
pub(crate) fn check_link(
    tx: &mut Transaction<'_>,
    scope: &Scope,
    link: &Link,
    pending: &HashMap<MemoryId, Scope>,
) -> Result<Scope> {
    link.validate()?;
    let mut owners = Vec::with_capacity(2);
    for (field, id) in [("from", link.from), ("to", link.to)] {
        let owner = match pending.get(&id) {
            Some(s) => Some((s.clone(), false)),
            None => owner_in(tx, id)?,
        }
        .filter(|(o, _)| scope.covers(o));
        match owner {
            // Checked after the scope: an erased memory the scope cannot see looks missing. A
            // link to or from a tombstone would store new text (its reason) on it.
            Some((_, true)) => {
                return Err(Error::invalid(
                    field,
                    format!("memory {id} is erased; an erased memory takes no new links"),
                ))
            }
            Some((o, false)) => owners.push(o),
            _ => {
                return Err(Error::invalid(
                    field,
                    format!("no memory {id} in this scope"),
                ))
            }
        }
    }
    if owners[0] != owners[1] {
        return Err(Error::invalid(
            "to",
            "a link joins two memories of one scope; these belong to different scopes",
        ));
    }
    Ok(owners.swap_remove(0))
}

impl PgStore {}
