//! [`mnemo_core::RecordWrites`] on SQLite: an add's batches and replays, updates and deletes,
//! access counts.
use crate::ann::with_early_inserts;
use crate::codec::*;
use crate::predicate;
use crate::read::*;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::params_from_iter;
use rusqlite::types::Value as Sql;

impl RecordWrites for SqliteStore {
    fn replay(&self, scope: &Scope, idem: &Idempotency) -> Result<Option<AddOutcome>> {
        self.read(|conn| Self::stored_outcome(conn, scope, idem))
    }

    fn write(&self, batches: Vec<WriteBatch>) -> Result<Vec<AddOutcome>> {
        self.write_tx(|tx| {
            let mut memo = crate::write::TxMemo::default();
            let out = batches
                .iter()
                .map(|b| self.write_one(tx, &mut memo, b))
                .collect::<Result<Vec<_>>>()?;
            memo.finish(tx)?;
            Ok(out)
        })
    }

    /// The plan is made while this writes the batches' records: it is asked for after them,
    /// inside the transaction. An in-memory store reads through its one connection, which the
    /// transaction holds, so there the plan comes first (a planner reading it would wait for
    /// this write, which would wait for the plan). From the first batch's rows on, while the
    /// writer writes the others, waits for the plan, writes the plan's rows and commits, a
    /// helper puts the new vectors into the graph (`ann::ahead`).
    fn write_planned(
        &self,
        batches: Vec<WriteBatch>,
        plan: TierPlan<'_>,
    ) -> Result<Vec<AddOutcome>> {
        if self.path.is_none() {
            return plan_then_write(self, batches, plan);
        }
        check_unplanned(&batches)?;
        self.write_tx_owned(|tx| {
            with_early_inserts(self.ahead_turn(), |hand_over| {
                let mut memo = crate::write::TxMemo::keeping_vectors();
                // Each batch's vectors go to the graph helper as soon as its rows are written.
                let written = batches
                    .iter()
                    .map(|b| {
                        let out = self.write_one_records(&tx, &mut memo, b);
                        hand_over(memo.take_vectors());
                        out
                    })
                    .collect::<Result<Vec<_>>>()?;
                let tiers = planned_tiers(plan, batches.len())?;
                for ((b, (_, fresh)), t) in batches.iter().zip(&written).zip(&tiers) {
                    if *fresh {
                        self.write_one_tiers(&tx, &mut memo, &b.scope, t)?;
                    }
                }
                memo.finish(&tx)?;
                tx.commit().map_err(sql_err)?;
                Ok(written.into_iter().map(|(o, _)| o).collect())
            })
        })
    }

    fn update_many(&self, updates: &Updates, ctx: &WritePlan) -> Result<Vec<Memory>> {
        self.write_tx(|tx| {
            updates
                .items()
                .iter()
                .map(|(scope, id, patch)| Self::update_in(tx, scope, *id, patch, ctx))
                .collect()
        })
    }

    fn delete_many(&self, deletes: &Deletes, ctx: &WritePlan) -> Result<u64> {
        self.write_tx(|tx| {
            let now = chrono::Utc::now().timestamp_millis();
            for (scope, id) in &deletes.items {
                let (seq, m) = Self::locate_in(tx, scope, *id)?;
                Self::delete_one(tx, seq, &m, deletes.mode, ctx, now)?;
            }
            Ok(deletes.items.len() as u64)
        })
    }

    fn delete_all(&self, scope: &Scope, mode: DeleteMode, ctx: &WritePlan) -> Result<u64> {
        self.write_tx(|tx| {
            let p = candidate_pred(&delete_all_query(scope))?;
            let sql = format!(
                "SELECT {MEMORY_COLS} FROM memories m WHERE {}",
                p.where_sql()
            );
            let rows: Vec<(i64, Memory)> = {
                let mut stmt = tx.prepare(&sql).map_err(sql_err)?;
                let it = stmt
                    .query_map(params_from_iter(p.params.iter()), memory_from_row)
                    .map_err(sql_err)?;
                it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
            };
            let now = chrono::Utc::now().timestamp_millis();
            for (seq, m) in &rows {
                Self::delete_one(tx, *seq, m, mode, ctx, now)?;
            }
            Ok(rows.len() as u64)
        })
    }

    fn touch(&self, scope: &Scope, ids: &[MemoryId], at: Timestamp) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let at = at.timestamp_millis();
        self.write_tx(|tx| {
            let mut n = 0u64;
            for id in ids {
                let mut p = predicate::Pred::default();
                p.push("m.id = ?", [Sql::Text(id.to_string())]);
                predicate::scope_unindexed(&mut p, "m", scope);
                let sql = format!(
                    "UPDATE memories AS m SET access_count = access_count + 1, \
                     last_accessed_at = MAX(COALESCE(last_accessed_at, ?), ?) WHERE {}",
                    p.where_sql()
                );
                let params: Vec<Sql> = [Sql::Integer(at), Sql::Integer(at)]
                    .into_iter()
                    .chain(p.params)
                    .collect();
                n += tx
                    .execute_cached(&sql, params_from_iter(params.iter()))
                    .map_err(sql_err)? as u64;
            }
            Ok(n)
        })
    }
}
