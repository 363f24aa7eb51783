//! [`mnemo_core::Records`] on SQLite: an add's batches, replays, get, list and locate,
//! updates and deletes, history, duplicates by hash, owners and access counts.
use crate::ann::with_early_inserts;
use crate::codec::*;
use crate::graph::exact_scope;
use crate::predicate;
use crate::predicate::marks;
use crate::predicate::Pred;
use crate::read::with_sources;
use crate::read::*;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::params_from_iter;
use rusqlite::types::Value as Sql;
use rusqlite::OptionalExtension;

impl Records for SqliteStore {
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

    fn get(&self, scope: &Scope, id: MemoryId, read: &ReadOptions) -> Result<Memory> {
        self.read(|conn| {
            let mut p = Pred::default();
            p.push("m.id = ?", [Sql::Text(id.to_string())]);
            predicate::scope(&mut p, "m", scope);
            predicate::visibility(&mut p, "m", read);
            let rows = with_sources(conn, query_memories(conn, &p.where_sql(), "", &p.params)?)?;
            rows.into_iter()
                .next()
                .map(|(_, m)| m)
                .ok_or_else(|| Error::not_found("memory", id))
        })
    }

    fn list(&self, q: &ListQuery) -> Result<Page> {
        q.validate()?;
        let after = q
            .cursor
            .as_deref()
            .map(|c| self.cursors.decode(&q.scope, c))
            .transpose()?
            .unwrap_or(0);
        self.read(|conn| {
            let mut p = candidate_pred(&q.candidates())?;
            p.push("m.seq > ?", [Sql::Integer(after)]);
            let tail = format!("ORDER BY m.seq LIMIT {}", q.limit + 1);
            let rows = with_sources(
                conn,
                query_memories(conn, &p.where_sql(), &tail, &p.params)?,
            )?;
            Ok(q.page(rows, |seq| self.cursors.encode(&q.scope, seq)))
        })
    }

    fn locate(&self, q: &ListQuery, skip: u64) -> Result<ListPosition> {
        self.read(|conn| {
            let p = candidate_pred(&q.candidates())?;
            let tx = conn.unchecked_transaction().map_err(sql_err)?;
            let total: i64 = tx
                .prepare_cached(&format!(
                    "SELECT COUNT(*) FROM memories m WHERE {}",
                    p.where_sql()
                ))
                .and_then(|mut st| st.query_row(params_from_iter(p.params.iter()), |r| r.get(0)))
                .map_err(sql_err)?;
            let total = u64::try_from(total).unwrap_or(0);
            let cursor = match ListPosition::cursor_offset(skip, total) {
                None => None,
                Some(offset) => {
                let seq: i64 = tx
                    .prepare_cached(&format!(
                        "SELECT m.seq FROM memories m WHERE {} ORDER BY m.seq LIMIT 1 OFFSET {offset}",
                        p.where_sql()
                    ))
                    .and_then(|mut st| {
                        st.query_row(params_from_iter(p.params.iter()), |r| r.get(0))
                    })
                    .map_err(sql_err)?;
                Some(self.cursors.encode(&q.scope, seq))
                }
            };
            tx.finish().map_err(sql_err)?;
            Ok(ListPosition { total, cursor })
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

    fn history(&self, q: &HistoryQuery<'_>) -> Result<Vec<HistoryEvent>> {
        let (scope, id) = (q.scope, q.id);
        self.read(|conn| {
            // A memory that still exists must be visible to the scope (`memory_read`); a
            // hard-deleted memory's history is checked against the scope recorded on its history
            // rows.
            let exists: bool = conn
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM memories WHERE id = ?1)",
                    [id.to_string()],
                    |r| r.get(0),
                )
                .map_err(sql_err)?;
            if exists {
                let mut p = Pred::default();
                p.push("m.id = ?", [Sql::Text(id.to_string())]);
                predicate::scope(&mut p, "m", scope);
                predicate::visibility(&mut p, "m", &q.memory_read());
                if query_memories(conn, &p.where_sql(), "", &p.params)?.is_empty() {
                    return Err(Error::not_found("memory", id));
                }
            }
            let mut p = Pred::default();
            p.push("h.memory_id = ?", [Sql::Text(id.to_string())]);
            predicate::scope(&mut p, "h", scope);
            let sql = format!(
                "SELECT {HISTORY_COLS} FROM history h WHERE {} ORDER BY h.id",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let events = stmt
                .query_map(params_from_iter(p.params.iter()), history_from_row)
                .map_err(sql_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql_err)?;
            q.found(events)
        })
    }

    fn find_by_hash(&self, scope: &Scope, hashes: &[String]) -> Result<Vec<(String, MemoryId)>> {
        if hashes.is_empty() {
            return Ok(Vec::new());
        }
        self.read(|conn| {
            let mut p = Pred::default();
            exact_scope(&mut p, "m", scope);
            // What a read sees now: an expired copy must not make a restated fact a duplicate.
            predicate::visibility(&mut p, "m", &ReadOptions::default());
            let marks = marks(hashes.len());
            p.push(
                &format!("m.hash IN ({marks})"),
                hashes.iter().map(|h| Sql::Text(h.clone())),
            );
            let sql = format!(
                "SELECT m.hash, m.id FROM memories m WHERE {}",
                p.where_sql()
            );
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for r in rows {
                let (h, id) = r.map_err(sql_err)?;
                out.push((h, MemoryId::parse(&id)?));
            }
            Ok(out)
        })
    }

    fn owner_of(&self, id: MemoryId) -> Result<Scope> {
        self.read(|conn| {
            let row: Option<(Option<String>, Option<String>, Option<String>)> = conn
                .query_row(
                    "SELECT user_id, agent_id, run_id FROM memories WHERE id = ?1",
                    [id.to_string()],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .map_err(sql_err)?;
            let (u, a, r) = row.ok_or_else(|| Error::not_found("memory", id))?;
            Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref())
        })
    }

    fn owners(&self) -> Result<Vec<(Scope, u64)>> {
        self.read(|conn| {
            let mut p = Pred::default();
            predicate::visibility(&mut p, "m", &ReadOptions::default());
            let sql = format!(
                "SELECT m.user_id, m.agent_id, m.run_id, COUNT(*) FROM memories m WHERE {}
                 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
                p.where_sql()
            );
            let mut stmt = conn.prepare(&sql).map_err(sql_err)?;
            let rows = stmt
                .query_map(params_from_iter(p.params.iter()), |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, Option<String>>(2)?,
                        r.get::<_, i64>(3)?,
                    ))
                })
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for row in rows {
                let (u, a, r, n) = row.map_err(sql_err)?;
                out.push((
                    Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref())?,
                    n as u64,
                ));
            }
            Ok(out)
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
