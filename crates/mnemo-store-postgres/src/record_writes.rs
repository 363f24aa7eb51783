//! [`mnemo_core::RecordWrites`] on PostgreSQL: an add's batches and replays, updates and
//! deletes, access counts.
use crate::codec::memory_from_row;
use crate::codec::ms;
use crate::codec::MEMORY_COLUMNS;
use crate::idempotency::stored_outcome_in;
use crate::pg_err;
use crate::predicate;
use crate::predicate::Pred;
use crate::write::change::delete_one;
use crate::write::change::update_in;
use crate::write::locate;
use crate::write::lock_memories;
use crate::write::*;
use crate::PgStore;
use mnemo_core::*;
use std::collections::BTreeMap;

impl RecordWrites for PgStore {
    fn write(&self, batches: Vec<WriteBatch>) -> Result<Vec<AddOutcome>> {
        self.write_tx(|tx| {
            let keys: Vec<String> = batches.iter().map(|b| b.scope.key()).collect();
            lock_scopes(tx, &keys)?;
            batches.iter().map(|b| self.write_one(tx, b)).collect()
        })
    }

    fn replay(&self, scope: &Scope, idem: &Idempotency) -> Result<Option<AddOutcome>> {
        self.with(|c| stored_outcome_in(c, scope, idem))
    }

    fn update_many(&self, updates: &Updates, ctx: &WritePlan) -> Result<Vec<Memory>> {
        self.write_tx(|tx| {
            lock_memories(tx, updates.ids())?;
            updates
                .items()
                .iter()
                .map(|(scope, id, patch)| update_in(tx, scope, *id, patch, ctx))
                .collect()
        })
    }

    fn delete_many(&self, deletes: &Deletes, ctx: &WritePlan) -> Result<u64> {
        self.write_tx(|tx| {
            lock_memories(tx, deletes.ids())?;
            let now = chrono::Utc::now().timestamp_millis();
            for (scope, id) in &deletes.items {
                let memory = locate(tx, scope, *id)?;
                delete_one(tx, &memory, deletes.mode, ctx, now)?;
            }
            Ok(deletes.items.len() as u64)
        })
    }

    fn delete_all(&self, scope: &Scope, mode: DeleteMode, ctx: &WritePlan) -> Result<u64> {
        self.write_tx(|tx| {
            let p = predicate::candidate(&delete_all_query(scope))?;
            let sql = format!(
                "SELECT {MEMORY_COLUMNS} FROM memories m WHERE {} ORDER BY m.id FOR UPDATE",
                p.where_sql()
            );
            let rows = tx.query(&sql, &p.params()).map_err(pg_err)?;
            let now = chrono::Utc::now().timestamp_millis();
            for row in &rows {
                delete_one(tx, &memory_from_row(row)?, mode, ctx, now)?;
            }
            Ok(rows.len() as u64)
        })
    }

    fn touch(&self, scope: &Scope, ids: &[MemoryId], at: Timestamp) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut counts: BTreeMap<MemoryId, i64> = BTreeMap::new();
        for id in ids {
            *counts.entry(*id).or_default() += 1;
        }
        let at = ms(at);
        self.write_tx(|tx| {
            let mut changed = 0u64;
            for (id, n) in &counts {
                let mut p = Pred::default();
                let (n_arg, at_arg, id_arg) = (p.arg(*n), p.arg(at), p.arg(id.0));
                p.and(&format!("m.id = {id_arg}"));
                predicate::scope(&mut p, "m", scope);
                let sql = format!(
                    "UPDATE memories AS m SET access_count = access_count + {n_arg}, \
                     last_accessed_at = GREATEST(COALESCE(last_accessed_at, {at_arg}), {at_arg}) \
                     WHERE {}",
                    p.where_sql()
                );
                let rows = tx.execute(&sql, &p.params()).map_err(pg_err)?;
                changed += rows * (*n as u64);
            }
            Ok(changed)
        })
    }
}
